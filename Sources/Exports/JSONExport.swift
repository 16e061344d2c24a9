import WalkJournal
import WalkModel

/// journal.json: the whole walk as one JSON document, one track point or milestone per line.
///
/// Schema (consumers rely on these keys; add fields, never rename):
/// `{"walk":{"id","started","ended","open","distance_m","every_m"},
///   "track":[{"time","lat","lon","alt"?,"eph"?,"speed"?,"course"?,"segment"}],
///   "milestones":[{"index","time","lat","lon","distance_m","starred","photo","photo_status"}]}`
package enum JSONExport {
    package static func write(_ log: WalkLog, isCached: (String) -> Bool, to sink: ([UInt8]) throws -> Void) throws {
        var out = ByteWriter(capacity: exportChunk + 4096)
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
        var number = 0
        try log.forEachPoint { point in
            out.append(number == 0 ? "\n{\"time\":" : ",\n{\"time\":")
            number += 1
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
            try out.drain(over: exportChunk, into: sink)
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
            try out.drain(over: exportChunk, into: sink)
        }
        out.append("\n]}\n")
        try out.drain(over: 0, into: sink)
    }
}
