package import WalkModel

/// A walk's track thinned to what a drawing of it needs, in bounded memory whatever the walk's length:
/// every point until there are `maxPoints`, then only points some metres apart, the spacing doubling each
/// time the bound is reached again. Each segment's first and last points are kept (the drawing's lines
/// and the gaps between them), unless there are more segments than the bound allows.
package struct TrackOutline: Sendable {
    package static let maxPoints = 8192

    private var kept: [TrackPoint] = []
    /// The newest point not kept: a line's end so far.
    private var newest: TrackPoint?
    /// Metres from the last kept point a point must be to be kept; 0 keeps them all.
    private var spacing = 0.0

    package init() {}

    /// The outline's points in order, the newest point last.
    package var points: [TrackPoint] {
        newest.map { kept + [$0] } ?? kept
    }

    package mutating func add(_ point: TrackPoint) {
        if let last = kept.last, last.segment != point.segment, let newest {
            kept.append(newest)
            self.newest = nil
        }
        if let last = kept.last, last.segment == point.segment, !isFar(point, from: last) {
            newest = point
            return
        }
        kept.append(point)
        newest = nil
        while kept.count > Self.maxPoints {
            thin()
        }
    }

    private func isFar(_ point: TrackPoint, from kept: TrackPoint) -> Bool {
        spacing == 0
            || Geodesy.distance(point.fix.latitude, point.fix.longitude, kept.fix.latitude, kept.fix.longitude)
                >= spacing
    }

    /// Keeps fewer points: twice the spacing (at least a metre), and once that passes the Earth's size, no
    /// segment's ends either (only a planted journal has that many segments).
    private mutating func thin() {
        spacing = max(1, spacing * 2)
        let keepEnds = spacing < 2e7
        var thinned: [TrackPoint] = []
        thinned.reserveCapacity(kept.count / 2)
        for (index, point) in kept.enumerated() {
            let segmentEnd = index + 1 == kept.count || kept[index + 1].segment != point.segment
            if let last = thinned.last,
                !(keepEnds && (last.segment != point.segment || segmentEnd)) && !isFar(point, from: last)
            {
                continue
            }
            thinned.append(point)
        }
        kept = thinned
    }
}
