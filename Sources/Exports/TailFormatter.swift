import Glibc
package import WalkModel

/// Journal records as the one-line summaries `fieldlog tail` prints. Times are shown in the viewer's
/// local time zone (TZ), from GPS time, or for recorder events outside a walk from the wall clock.
package struct TailFormatter {
    package init() {}

    /// The record's line, or nil for bookkeeping that says nothing to a person (a photo about to be decoded).
    package func line(for record: JournalRecord) -> String? {
        switch record {
        case let .event(event) where event.kind == .photoAttempt:
            return nil
        case let .walkStart(id, time, every):
            return "\(clock(time))  walk \(id) started (milestone every \(metres(every)))"
        case let .point(point):
            var text = "\(clock(point.fix.time))  \(position(point.fix.latitude, point.fix.longitude))"
            if let eph = point.fix.horizontalError { text += "  ±\(metres(eph))" }
            return text + "  \(metres(point.distance)) walked"
        case let .milestone(milestone):
            return "\(clock(milestone.time))  milestone \(milestone.index) at \(metres(milestone.distance))"
                + "  \(position(milestone.latitude, milestone.longitude))"
        case let .segment(segment):
            return "\(clock(segment.time))  new track segment after \(Int(segment.gap.rounded())) s without a fix"
        case let .event(event):
            let what = event.kind.rawValue.replacingUnderscores()
            // GPS time when a walk was running, so a walk reads in one clock; the wall clock otherwise.
            return "\(clock(event.time ?? event.wall))  \(what)" + (event.message.map { ": \($0)" } ?? "")
        case let .walkEnd(time, distance):
            return "\(clock(time))  walk ended at \(metres(distance))"
        case let .photo(record):
            // Photos arrive whenever the network allows; they have no GPS time of their own.
            switch record.outcome {
            case let .found(photo, distance, _):
                let title = photo.title.isEmpty ? "untitled" : photo.title
                return
                    "          milestone \(record.milestone): photo \"\(title)\" by \(photo.ownerName) (\(photo.license)), "
                    + "\(metres(distance)) away"
            case let .noneNearby(radius):
                return "          milestone \(record.milestone): no photo within \(metres(radius))"
            }
        case let .star(milestone, starred, _):
            return starred
                ? "          ★ milestone \(milestone) is a favourite"
                : "          milestone \(milestone) is no longer a favourite"
        }
    }

    private func clock(_ time: Double) -> String {
        var seconds = time_t(time.rounded(.down))
        var parts = tm()
        localtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    }

    private func metres(_ value: Double) -> String {
        value >= 10_000
            ? "\(Int((value / 100).rounded()) / 10).\(Int((value / 100).rounded()) % 10) km"
            : "\(Int(value.rounded())) m"
    }

    private func position(_ latitude: Double, _ longitude: Double) -> String {
        func degrees(_ value: Double) -> String {
            let scaled = Int((abs(value) * 100_000).rounded())
            let fraction = String(scaled % 100_000)
            return "\(scaled / 100_000)." + String(repeating: "0", count: 5 - fraction.count) + fraction
        }
        return degrees(latitude) + (latitude < 0 ? "S " : "N ") + degrees(longitude) + (longitude < 0 ? "W" : "E")
    }
}

extension String {
    fileprivate func replacingUnderscores() -> String {
        String(map { $0 == "_" ? " " : $0 })
    }
}
