import WalkJournal
import WalkModel

/// A walk's fields as journal.json's `walk` and GeoJSON's track properties write them, each key with its value's
/// form written once here; each format picks its own order.
enum WalkField {
    case id, started, ended, open, distance, every
}

/// A milestone's fields as journal.json's milestones and GeoJSON's point properties write them.
enum MilestoneField {
    case index, time, latitude, longitude, distance, starred, photo
}

extension ByteWriter {
    /// `fields` of `log` as JSON members, separated by commas.
    mutating func appendFields(_ fields: [WalkField], of log: WalkLog) {
        for (number, field) in fields.enumerated() {
            if number > 0 { append(",") }
            switch field {
            case .id:
                append("\"id\":")
                appendJSONString(log.id)
            case .started:
                append("\"started\":")
                appendJSONTime(log.started)
            case .ended:
                // An open walk has no walk_end yet: its end so far is the last thing it recorded.
                append("\"ended\":")
                appendJSONTime(log.lastTime)
            case .open:
                append(log.isOpen ? "\"open\":true" : "\"open\":false")
            case .distance:
                append("\"distance_m\":")
                appendDecimal(log.distance, digits: Precision.metreDigits)
            case .every:
                append("\"every_m\":")
                appendJSONDecimal(log.every, digits: Precision.metreDigits)
            }
        }
    }

    /// `fields` of `milestone` as JSON members, separated by commas; the photo is its two members, `photo` and
    /// `photo_status`.
    mutating func appendFields(
        _ fields: [MilestoneField], of milestone: Milestone, in log: WalkLog, isCached: (String) -> Bool
    ) {
        for (number, field) in fields.enumerated() {
            // appendPhoto writes its own leading comma.
            if number > 0 && field != .photo { append(",") }
            switch field {
            case .index:
                append("\"index\":")
                append(milestone.index)
            case .time:
                append("\"time\":")
                appendJSONTime(milestone.time)
            case .latitude:
                append("\"lat\":")
                appendDecimal(milestone.latitude, digits: Precision.degreeDigits)
            case .longitude:
                append("\"lon\":")
                appendDecimal(milestone.longitude, digits: Precision.degreeDigits)
            case .distance:
                append("\"distance_m\":")
                appendDecimal(milestone.distance, digits: Precision.metreDigits)
            case .starred:
                append(log.starred.contains(milestone.index) ? "\"starred\":true" : "\"starred\":false")
            case .photo:
                appendPhoto(log.photos[milestone.index], isCached: isCached)
            }
        }
    }
}
