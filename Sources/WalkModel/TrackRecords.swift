/// The records a walk is made of, as the tracker produces them and the journal keeps them.

/// A fix the walk accepted, with its place in the walk.
package struct TrackPoint: Sendable, Equatable {
    package var fix: Fix
    package var segment: Int
    /// Distance walked from the start of the walk up to this point, metres.
    package var distance: Double

    package init(fix: Fix, segment: Int, distance: Double) {
        self.fix = fix
        self.segment = segment
        self.distance = distance
    }
}

package struct Milestone: Sendable, Equatable {
    package var index: Int
    package var time: Double
    package var latitude: Double
    package var longitude: Double
    package var distance: Double

    package init(index: Int, time: Double, latitude: Double, longitude: Double, distance: Double) {
        self.index = index
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.distance = distance
    }
}

package struct SegmentBreak: Sendable, Equatable {
    package var index: Int
    package var time: Double
    /// GPS seconds without an accepted fix before this segment.
    package var gap: Double

    package init(index: Int, time: Double, gap: Double) {
        self.index = index
        self.time = time
        self.gap = gap
    }
}
