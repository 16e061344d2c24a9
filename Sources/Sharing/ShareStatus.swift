import FoundationEssentials
import Glibc
import SystemIO
import WalkModel

/// One destination as `fieldlog status` and the live page show it.
package struct ShareStatus: Codable, Sendable, Equatable {
    package var destination: String
    package var connection: ShareConnection
    /// Messages chosen from the journal and not yet acknowledged (read ahead at most `ShareEngine.readAhead`).
    package var waiting: Int
    /// The journal holds lines sharing has not read yet: more than `waiting` wait (nil in older files).
    package var unread: Bool?
    /// GPS time (`tst`) and system-clock time of the last acknowledgement, this run or before.
    package var lastTst: Int?
    package var lastWall: Double?
    /// The latest failure in words (never a password).
    package var error: String?
    /// Something about this destination to fix or to know, said whatever the connection (a password file
    /// every user may read, a position file that could not be used).
    package var notice: String?

    package enum CodingKeys: String, CodingKey {
        case destination, connection, waiting, unread, error, notice
        case lastTst = "last_tst"
        case lastWall = "last_wall"
    }

    /// "12 waiting", or "12 waiting and more in the journal, not read yet": never "0 waiting" while lines are unread.
    package var waitingWords: String {
        unread == true ? "\(waiting) waiting and more in the journal, not read yet" : "\(waiting) waiting"
    }

    /// The live page's words for it, under a neutral `label` ("destination 1"): the page has no login and is seen
    /// by anyone on its Wi-Fi, so no host, user or failure text (`fieldlog status` has those).
    package func pageLine(label: String) -> String {
        var text = "\(label) \(connection.rawValue), \(waitingWords)"
        if let lastTst { text += ", last acknowledged \(Timestamp.format(Double(lastTst)))" }
        return text
    }
}

/// `share-status.json` in the state directory: the sharing destinations of the running recorder. Replaced
/// whole (not synced: it describes the present) when something changes, at most every second or so.
package enum ShareStatusFile {
    package static let fileName = "share-status.json"

    package struct Contents: Codable, Sendable {
        package var pid: Int32
        package var destinations: [ShareStatus]
    }

    package static func read(directory: String) -> Contents? {
        guard let bytes = try? FileIO.readRegular(fileName, in: directory, maxBytes: 256 << 10) else { return nil }
        return try? JSONDecoder().decode(Contents.self, from: Data(bytes))
    }

    package static func write(_ destinations: [ShareStatus], directory: String) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var bytes = try? Array(encoder.encode(Contents(pid: getpid(), destinations: destinations))) else {
            return
        }
        bytes.append(UInt8(ascii: "\n"))
        // Best effort: status never stops the sharing, nor the recorder.
        try? FileIO.replace(directory + "/" + fileName, with: bytes, durable: false)
    }
}

extension ShareStatusFile {
    /// `fieldlog status`'s lines for the destinations of the sharing process, while it runs, each with its newline.
    package static func lines(directory: String) -> [String] {
        guard let contents = read(directory: directory), processExists(contents.pid) else { return [] }
        let now = Date().timeIntervalSince1970
        return contents.destinations.map { share in
            var line = "share      \(share.destination): \(share.connection.rawValue), \(share.waitingWords)"
            if let tst = share.lastTst {
                line += ", last acknowledged fix time \(Timestamp.format(Double(tst)))"
                if let wall = share.lastWall { line += " (\(Int(max(0, now - wall))) s ago)" }
            } else {
                line += ", nothing acknowledged yet"
            }
            if let error = share.error, share.connection != .connected { line += ": \(error)" }
            if let notice = share.notice { line += "; \(notice)" }
            return line + "\n"
        }
    }
}
