import WalkJournal
import WalkModel

/// GeoJSON (RFC 7946): a FeatureCollection holding the track as one line feature, then one point
/// feature per milestone. Positions are [longitude, latitude]; altitude is left out so every position
/// has the same shape (journal.json and GPX carry it).
package enum GeoJSONExport {
    package static func render(_ log: WalkLog, isCached: (String) -> Bool) -> [UInt8] {
        var out = ByteWriter(capacity: 512 + log.points.count * 28 + log.milestones.count * 200)
        out.append("{\"type\":\"FeatureCollection\",\"features\":[\n{\"type\":\"Feature\",\"properties\":{\"id\":")
        out.appendJSONString(log.id)
        out.append(",\"distance_m\":")
        out.appendDecimal(log.distance, digits: Precision.metreDigits)
        out.append(",\"every_m\":")
        out.appendJSONDecimal(log.every, digits: Precision.metreDigits)
        out.append(",\"started\":")
        out.appendJSONTime(log.started)
        // As in journal.json: an open walk has ended, so far, at the last thing it recorded.
        out.append(",\"ended\":")
        out.appendJSONTime(log.lastTime)
        out.append(log.isOpen ? ",\"open\":true" : ",\"open\":false")
        out.append("},\"geometry\":")
        appendGeometry(lines(of: log.points), to: &out)
        out.append("}")
        for milestone in log.milestones {
            out.append(",\n{\"type\":\"Feature\",\"properties\":{\"index\":")
            out.append(milestone.index)
            out.append(",\"time\":")
            out.appendJSONTime(milestone.time)
            out.append(",\"distance_m\":")
            out.appendDecimal(milestone.distance, digits: Precision.metreDigits)
            out.append(log.starred.contains(milestone.index) ? ",\"starred\":true" : ",\"starred\":false")
            out.appendPhoto(log.photos[milestone.index], isCached: isCached)
            out.append("},\"geometry\":{\"type\":\"Point\",\"coordinates\":")
            appendPosition(Position(longitude: milestone.longitude, latitude: milestone.latitude), to: &out)
            out.append("}}")
        }
        out.append("\n]}\n")
        return out.bytes
    }

    package struct Position: Equatable {
        package var longitude: Double
        package var latitude: Double
    }

    /// The track as lines: one per walk segment, cut where it crosses the antimeridian (RFC 7946 §3.1.9),
    /// so a map does not draw a line back around the world.
    ///
    /// Lines of a single position are dropped: a LineString needs at least two (§3.1.4), and a segment
    /// that is one fix has no path to draw. The fix is still in journal.json and GPX.
    package static func lines(of points: [TrackPoint]) -> [[Position]] {
        var lines: [[Position]] = []
        var line: [Position] = []
        var previous: TrackPoint?
        for point in points {
            let position = Position(longitude: point.fix.longitude, latitude: point.fix.latitude)
            if let previous, previous.segment == point.segment {
                let from = line[line.count - 1]
                if abs(position.longitude - from.longitude) > 180 {
                    // The short way round crosses ±180°: end this line on the antimeridian and start the
                    // next one on the other side of it, at the latitude where the path crosses
                    // (interpolated linearly: consecutive fixes are metres apart).
                    let edge: Double = from.longitude > 0 ? 180 : -180
                    let unwrapped = position.longitude + 2 * edge
                    let fraction = (edge - from.longitude) / (unwrapped - from.longitude)
                    let latitude = from.latitude + fraction * (position.latitude - from.latitude)
                    line.append(Position(longitude: edge, latitude: latitude))
                    lines.append(line)
                    line = [Position(longitude: -edge, latitude: latitude)]
                }
            } else if !line.isEmpty {
                lines.append(line)
                line = []
            }
            line.append(position)
            previous = point
        }
        if !line.isEmpty { lines.append(line) }
        return lines.filter { $0.count >= 2 }
    }

    private static func appendGeometry(_ lines: [[Position]], to out: inout ByteWriter) {
        switch lines.count {
        case 0:
            // A Feature without a location has a null geometry (RFC 7946 §3.2).
            out.append("null")
        case 1:
            out.append("{\"type\":\"LineString\",\"coordinates\":")
            appendLine(lines[0], to: &out)
            out.append("}")
        default:
            out.append("{\"type\":\"MultiLineString\",\"coordinates\":[")
            for (number, line) in lines.enumerated() {
                if number > 0 { out.append(",") }
                appendLine(line, to: &out)
            }
            out.append("]}")
        }
    }

    private static func appendLine(_ line: [Position], to out: inout ByteWriter) {
        out.append("[")
        for (number, position) in line.enumerated() {
            if number > 0 { out.append(",") }
            appendPosition(position, to: &out)
        }
        out.append("]")
    }

    private static func appendPosition(_ position: Position, to out: inout ByteWriter) {
        out.append("[")
        out.appendDecimal(position.longitude, digits: Precision.degreeDigits)
        out.append(",")
        out.appendDecimal(position.latitude, digits: Precision.degreeDigits)
        out.append("]")
    }
}
