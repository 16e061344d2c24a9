/// The records a walk is made of, as the tracker produces them and the journal keeps them.

/// A fix the walk accepted, with its place in the walk.
public struct TrackPoint: Sendable, Equatable {
    public var fix: Fix
    public var segment: Int
    /// Distance walked from the start of the walk up to this point, metres.
    public var distance: Double

    package init(fix: Fix, segment: Int, distance: Double) {
        self.fix = fix
        self.segment = segment
        self.distance = distance
    }
}

public struct Milestone: Sendable, Equatable {
    public var index: Int
    public var time: Double
    public var latitude: Double
    public var longitude: Double
    public var distance: Double

    package init(index: Int, time: Double, latitude: Double, longitude: Double, distance: Double) {
        self.index = index
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.distance = distance
    }
}

public struct SegmentBreak: Sendable, Equatable {
    public var index: Int
    public var time: Double
    /// GPS seconds without an accepted fix before this segment.
    public var gap: Double

    package init(index: Int, time: Double, gap: Double) {
        self.index = index
        self.time = time
        self.gap = gap
    }
}
