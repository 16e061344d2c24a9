package import WalkJournal
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
        out.append("{\"walk\":{")
        out.appendFields([.id, .started, .ended, .open, .distance, .every], of: log)
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
            out.append(number == 0 ? "\n{" : ",\n{")
            out.appendFields(
                [.index, .time, .latitude, .longitude, .distance, .starred, .photo], of: milestone, in: log,
                isCached: isCached)
            out.append("}")
            try out.drain(over: exportChunk, into: sink)
        }
        out.append("\n]}\n")
        try out.drain(over: 0, into: sink)
    }
}
