import WalkJournal
import WalkModel

/// journal.json: the whole walk as one JSON document, one track point or milestone per line.
///
/// Schema (consumers rely on these keys; add fields, never rename):
/// `{"walk":{"id","started","ended","open","distance_m","every_m"},
///   "track":[{"time","lat","lon","alt"?,"eph"?,"speed"?,"course"?,"segment"}],
///   "milestones":[{"index","time","lat","lon","distance_m","starred","photo","photo_status"}]}`
package enum JSONExport {
    package static func render(_ log: WalkLog, isCached: (String) -> Bool) -> [UInt8] {
        var out = ByteWriter(capacity: 128 + log.points.count * 110 + log.milestones.count * 120)
        out.append("{\"walk\":{\"id\":")
        out.appendJSONString(log.id)
        out.append(",\"started\":")
        out.appendJSONTime(log.started)
        // An open walk has no walk_end yet: its end so far is the last thing it recorded.
        out.append(",\"ended\":")
        out.appendJSONTime(log.lastTime)
        out.append(log.isOpen ? ",\"open\":true" : ",\"open\":false")
        out.append(",\"distance_m\":")
        out.appendDecimal(log.distance, digits: Precision.metreDigits)
        out.append(",\"every_m\":")
        out.appendJSONDecimal(log.every, digits: Precision.metreDigits)
        out.append("},\n\"track\":[")
        for (number, point) in log.points.enumerated() {
            out.append(number == 0 ? "\n{\"time\":" : ",\n{\"time\":")
            out.appendJSONTime(point.fix.time)
            out.append(",\"lat\":")
            out.appendDecimal(point.fix.latitude, digits: Precision.degreeDigits)
            out.append(",\"lon\":")
            out.appendDecimal(point.fix.longitude, digits: Precision.degreeDigits)
            out.appendOptionalField("alt", point.fix.altitude, digits: Precision.metreDigits)
            out.appendOptionalField("eph", point.fix.horizontalError, digits: Precision.metreDigits)
            out.appendOptionalField("speed", point.fix.speed, digits: Precision.metreDigits)
            out.appendOptionalField("course", point.fix.track, digits: Precision.metreDigits)
            out.append(",\"segment\":")
            out.append(point.segment)
            out.append("}")
        }
        out.append("\n],\n\"milestones\":[")
        for (number, milestone) in log.milestones.enumerated() {
            out.append(number == 0 ? "\n{\"index\":" : ",\n{\"index\":")
            out.append(milestone.index)
            out.append(",\"time\":")
            out.appendJSONTime(milestone.time)
            out.append(",\"lat\":")
            out.appendDecimal(milestone.latitude, digits: Precision.degreeDigits)
            out.append(",\"lon\":")
            out.appendDecimal(milestone.longitude, digits: Precision.degreeDigits)
            out.append(",\"distance_m\":")
            out.appendDecimal(milestone.distance, digits: Precision.metreDigits)
            out.append(log.starred.contains(milestone.index) ? ",\"starred\":true" : ",\"starred\":false")
            out.appendPhoto(log.photos[milestone.index], isCached: isCached)
            out.append("}")
        }
        out.append("\n]}\n")
        return out.bytes
    }
}
