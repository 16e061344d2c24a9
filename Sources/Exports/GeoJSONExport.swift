package import WalkJournal
package import WalkModel

/// GeoJSON (RFC 7946): a FeatureCollection holding the track as one line feature, then one point
/// feature per milestone. Positions are [longitude, latitude]; altitude is left out so every position
/// has the same shape (journal.json and GPX carry it).
package enum GeoJSONExport {
    package static func write(_ log: WalkLog, isCached: (String) -> Bool, to sink: ([UInt8]) throws -> Void) throws {
        var out = ByteWriter(capacity: exportChunk + 4096)
        out.append("{\"type\":\"FeatureCollection\",\"features\":[\n{\"type\":\"Feature\",\"properties\":{")
        out.appendFields([.id, .distance, .every, .started, .ended, .open], of: log)
        out.append("},\"geometry\":")
        try appendGeometry(log, to: &out, sink)
        out.append("}")
        for milestone in log.milestones {
            out.append(",\n{\"type\":\"Feature\",\"properties\":{")
            out.appendFields([.index, .time, .distance, .starred, .photo], of: milestone, in: log, isCached: isCached)
            out.append("},\"geometry\":{\"type\":\"Point\",\"coordinates\":")
            appendPosition(Position(longitude: milestone.longitude, latitude: milestone.latitude), to: &out)
            out.append("}}")
            try out.drain(over: exportChunk, into: sink)
        }
        out.append("\n]}\n")
        try out.drain(over: 0, into: sink)
    }

    package struct Position: Equatable {
        package var longitude: Double
        package var latitude: Double
    }

    /// The track as lines, as it is read: one per walk segment, cut where it crosses the antimeridian (RFC
    /// 7946 §3.1.9), so a map does not draw a line back around the world.
    ///
    /// Lines of a single position are dropped: a LineString needs at least two (§3.1.4), and a segment
    /// that is one fix has no path to draw. The fix is still in journal.json and GPX. So a line is begun
    /// (`Piece.start`) only once its second position is known.
    package struct LineSplitter {
        package enum Piece {
            case start(Position, Position)
            case position(Position)
            case end
        }

        /// Lines of two positions or more begun.
        package private(set) var lines = 0
        private var previous: TrackPoint?
        /// The current line's positions: its first while it has only one, its last.
        private var first: Position?
        private var last: Position?
        private var begun = false

        package init() {}

        package mutating func add(_ point: TrackPoint, _ emit: (Piece) throws -> Void) rethrows {
            let position = Position(longitude: point.fix.longitude, latitude: point.fix.latitude)
            if let previous, previous.segment == point.segment, let from = last {
                if abs(position.longitude - from.longitude) > 180 {
                    // The short way round crosses ±180°: end this line on the antimeridian and start the
                    // next one on the other side of it, at the latitude where the path crosses
                    // (interpolated linearly: consecutive fixes are metres apart).
                    let edge: Double = from.longitude > 0 ? 180 : -180
                    let unwrapped = position.longitude + 2 * edge
                    let fraction = (edge - from.longitude) / (unwrapped - from.longitude)
                    let latitude = from.latitude + fraction * (position.latitude - from.latitude)
                    try append(Position(longitude: edge, latitude: latitude), emit)
                    try finish(emit)
                    try append(Position(longitude: -edge, latitude: latitude), emit)
                }
            } else {
                try finish(emit)
            }
            try append(position, emit)
            previous = point
        }

        /// Ends the current line.
        package mutating func finish(_ emit: (Piece) throws -> Void) rethrows {
            if begun { try emit(.end) }
            (first, last, begun) = (nil, nil, false)
        }

        private mutating func append(_ position: Position, _ emit: (Piece) throws -> Void) rethrows {
            if begun {
                try emit(.position(position))
            } else if let first {
                lines += 1
                begun = true
                try emit(.start(first, position))
            } else {
                first = position
            }
            last = position
        }
    }

    /// The track's lines of `points`, whole: for tests.
    package static func lines(of points: [TrackPoint]) -> [[Position]] {
        var lines: [[Position]] = []
        var splitter = LineSplitter()
        let collect = { (piece: LineSplitter.Piece) in
            switch piece {
            case let .start(first, second): lines.append([first, second])
            case let .position(position): lines[lines.count - 1].append(position)
            case .end: break
            }
        }
        points.forEach { splitter.add($0, collect) }
        splitter.finish(collect)
        return lines
    }

    /// The track's geometry: null, a LineString or a MultiLineString, which a first reading of the points
    /// tells.
    private static func appendGeometry(
        _ log: WalkLog, to out: inout ByteWriter, _ sink: ([UInt8]) throws -> Void
    ) throws {
        var counter = LineSplitter()
        try log.forEachPoint { counter.add($0) { _ in } }
        counter.finish { _ in }
        guard counter.lines > 0 else {
            // A Feature without a location has a null geometry (RFC 7946 §3.2).
            return out.append("null")
        }
        let multiple = counter.lines > 1
        out.append(
            multiple ? "{\"type\":\"MultiLineString\",\"coordinates\":[" : "{\"type\":\"LineString\",\"coordinates\":")
        var splitter = LineSplitter()
        var written = 0
        func emit(_ piece: LineSplitter.Piece, _ out: inout ByteWriter) throws {
            switch piece {
            case let .start(first, second):
                if written > 0 { out.append(",") }
                written += 1
                out.append("[")
                appendPosition(first, to: &out)
                out.append(",")
                appendPosition(second, to: &out)
            case let .position(position):
                out.append(",")
                appendPosition(position, to: &out)
                try out.drain(over: exportChunk, into: sink)
            case .end:
                out.append("]")
            }
        }
        try log.forEachPoint { point in try splitter.add(point) { try emit($0, &out) } }
        try splitter.finish { try emit($0, &out) }
        out.append(multiple ? "]}" : "}")
    }

    private static func appendPosition(_ position: Position, to out: inout ByteWriter) {
        out.append("[")
        out.appendDecimal(position.longitude, digits: Precision.degreeDigits)
        out.append(",")
        out.appendDecimal(position.latitude, digits: Precision.degreeDigits)
        out.append("]")
    }
}
