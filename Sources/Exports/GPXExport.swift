package import WalkJournal
import WalkModel

/// GPX 1.1 (https://www.topografix.com/GPX/1/1/): milestones as waypoints, the walk as one track with a
/// track segment per walk segment. Element order follows the schema's sequences, which are strict.
package enum GPXExport {
    package static func write(_ log: WalkLog, to sink: ([UInt8]) throws -> Void) throws {
        var out = ByteWriter(capacity: exportChunk + 4096)
        out.append(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <gpx xmlns="http://www.topografix.com/GPX/1/1" version="1.1" creator="fieldlog" \
            xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
            xsi:schemaLocation="http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd">
            <metadata>
            <name>
            """)
        out.appendXMLText("Walk " + log.id)
        out.append("</name>\n")
        // The walk's start rather than the export's wall-clock time, so the same walk always exports
        // to the same bytes.
        if let started = log.started {
            out.append("<time>")
            out.appendTime(started)
            out.append("</time>\n")
        }
        out.append("</metadata>\n")
        for milestone in log.milestones {
            appendPointStart("wpt", milestone.latitude, milestone.longitude, to: &out)
            out.append("<time>")
            out.appendTime(milestone.time)
            out.append("</time><name>Milestone ")
            out.append(milestone.index)
            out.append("</name><desc>")
            out.appendDecimal(milestone.distance, digits: Precision.metreDigits)
            out.append(" m walked")
            if let photo = log.photos[milestone.index]?.photo {
                out.append("; photo \"")
                out.appendXMLText(photo.title)
                out.append("\" by ")
                out.appendXMLText(photo.ownerName)
                out.append(" (")
                out.appendXMLText(photo.license)
                out.append(")</desc>")
                if let page = photo.pageURL {
                    out.append("<link href=\"")
                    out.appendXMLText(page)
                    out.append("\"><text>")
                    out.appendXMLText(photo.title.isEmpty ? "photo" : photo.title)
                    out.append("</text></link>")
                }
            } else {
                out.append("</desc>")
            }
            // A favourite (`fieldlog star`): a symbol GPS tools show, and a type to filter on.
            if log.starred.contains(milestone.index) {
                out.append("<sym>Favorite</sym><type>favourite</type>")
            }
            out.append("</wpt>\n")
            try out.drain(over: exportChunk, into: sink)
        }
        out.append("<trk>\n<name>")
        out.appendXMLText(log.id)
        out.append("</name>\n")
        var currentSegment: Int?
        try log.forEachPoint { point in
            if point.segment != currentSegment {
                out.append(currentSegment == nil ? "<trkseg>\n" : "</trkseg>\n<trkseg>\n")
                currentSegment = point.segment
            }
            appendPointStart("trkpt", point.fix.latitude, point.fix.longitude, to: &out)
            if let altitude = point.fix.altitude {
                out.append("<ele>")
                out.appendDecimal(altitude, digits: Precision.metreDigits)
                out.append("</ele>")
            }
            out.append("<time>")
            out.appendTime(point.fix.time)
            out.append("</time></trkpt>\n")
            try out.drain(over: exportChunk, into: sink)
        }
        if currentSegment != nil { out.append("</trkseg>\n") }
        out.append("</trk>\n</gpx>\n")
        try out.drain(over: 0, into: sink)
    }

    private static func appendPointStart(
        _ element: String, _ latitude: Double, _ longitude: Double, to out: inout ByteWriter
    ) {
        // GPX allows longitudes in [-180, 180): 180° is written as the same meridian, -180°.
        var longitude = Precision.roundedDegrees(longitude)
        if longitude >= 180 { longitude -= 360 }
        out.append("<")
        out.append(element)
        out.append(" lat=\"")
        out.appendDecimal(latitude, digits: Precision.degreeDigits)
        out.append("\" lon=\"")
        out.appendDecimal(longitude, digits: Precision.degreeDigits)
        out.append("\">")
    }
}
