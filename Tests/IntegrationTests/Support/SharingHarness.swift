import FieldLogTestSupport
import Foundation
package import Sharing
import SystemIO
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

/// What a shared walk should have produced and what a subscriber got, compared.
package enum SharingHarness {
    /// The messages the journals of `state` call for, in order, keyed as a subscriber sees them. The walks are
    /// read from the first one (`from`: only that one and later).
    package static func expected(state: String, every: Double = 10, from first: String? = nil) throws -> [MessageKey] {
        let store = JournalStore(directory: state)
        var keys: [MessageKey] = []
        for id in try store.walkIDs() where first.map({ id >= $0 }) ?? true {
            var selector = ShareSelector(every: every)
            try JournalReader(path: store.path(for: id)).forEachRecord { record, _ in
                if let record { keys += selector.feed(record).map(MessageKey.init) }
            }
        }
        return keys
    }

    /// A message as both sides can name it: kind, whole-second GPS time, position to 1e-7 degree.
    package struct MessageKey: Hashable, CustomStringConvertible {
        package var kind: String
        package var tst: Int
        package var lat: Int
        package var lon: Int

        package init(_ content: ShareSelector.Content) {
            switch content {
            case let .fix(point):
                (kind, lat, lon) = ("fix", Self.scaled(point.fix.latitude), Self.scaled(point.fix.longitude))
            case let .milestone(milestone, _):
                (kind, lat, lon) = ("milestone", Self.scaled(milestone.latitude), Self.scaled(milestone.longitude))
            case let .photo(milestone, _, _):
                (kind, lat, lon) = ("photo", Self.scaled(milestone.latitude), Self.scaled(milestone.longitude))
            }
            tst = Int(content.time.rounded(.down))
        }

        package init?(_ json: [String: Any]) {
            guard json["_type"] as? String == "location", let tst = json["tst"] as? Int,
                let lat = (json["lat"] as? NSNumber)?.doubleValue, let lon = (json["lon"] as? NSNumber)?.doubleValue
            else { return nil }
            kind = json["fl_photo"] != nil ? "photo" : json["fl_milestone"] != nil ? "milestone" : "fix"
            self.tst = tst
            self.lat = Self.scaled(lat)
            self.lon = Self.scaled(lon)
        }

        package static func scaled(_ degrees: Double) -> Int { Int((degrees * 1e7).rounded()) }

        package var description: String { "\(kind)@\(tst)" }
    }

    package struct Comparison {
        package var missing: [MessageKey]
        package var unexpected: [MessageKey]
        package var outOfOrder: Bool
        package var duplicates: Int
        /// The most times one message arrived.
        package var mostCopies: Int
    }

    /// Received messages against expected ones: each expected message arrived, in order (a duplicate is a message
    /// seen before), and how many arrived more than once.
    package static func compare(received: [[String: Any]], expected: [MessageKey]) -> Comparison {
        var seen = Set<MessageKey>()
        var firstArrivals: [MessageKey] = []
        var duplicates = 0
        var copies: [MessageKey: Int] = [:]
        for json in received {
            guard let key = MessageKey(json) else { continue }
            copies[key, default: 0] += 1
            if seen.insert(key).inserted { firstArrivals.append(key) } else { duplicates += 1 }
        }
        let expectedSet = Set(expected)
        return Comparison(
            missing: expected.filter { !seen.contains($0) },
            unexpected: firstArrivals.filter { !expectedSet.contains($0) },
            outOfOrder: firstArrivals.filter(expectedSet.contains) != expected.filter(seen.contains),
            duplicates: duplicates,
            mostCopies: copies.values.max() ?? 0)
    }

    /// The acknowledged position a destination's state file holds.
    package static func cursor(state: String) -> ShareCursor? {
        guard
            let name = try? FileManager.default.contentsOfDirectory(atPath: state).first(where: {
                $0.hasPrefix("share-") && $0.hasSuffix(".state")
            }),
            let data = FileManager.default.contents(atPath: state + "/" + name)
        else { return nil }
        return try? JSONDecoder().decode(ShareCursor.self, from: data)
    }

    /// Waits until the subscriber has every expected message (the walk's journal as it is when asked), or the deadline.
    package static func waitForAll(
        _ subscriber: () -> [[String: Any]], state: String, every: Double = 10, timeout: Double = 60
    ) async throws -> (expected: [MessageKey], comparison: Comparison) {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let expected = try Self.expected(state: state, every: every)
            let comparison = compare(received: subscriber(), expected: expected)
            if (comparison.missing.isEmpty && !expected.isEmpty) || Date() > deadline { return (expected, comparison) }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// A synthetic walk of `seconds` at 1.4 m/s (about 140 m a minute), written as an NMEA capture.
    package static func walkCapture(seconds: Int, in directory: String, heading: Double = 45) throws -> String {
        var walk = SyntheticWalk(heading: heading)
        walk.add([.walk(seconds: seconds, speed: 1.4)])
        let capture = directory + "/walk-\(seconds).nmea"
        try walk.write(to: capture)
        return capture
    }

    /// The journal lines the recorder wrote, without its events (which carry the system clock).
    package static func journalWithoutEvents(state: String) throws -> [String] {
        let store = JournalStore(directory: state)
        return try store.walkIDs().flatMap { id in
            try String(contentsOfFile: store.path(for: id), encoding: .utf8).split(separator: "\n")
                .filter { !$0.contains("\"type\":\"event\"") }.map(String.init)
        }
    }
}
