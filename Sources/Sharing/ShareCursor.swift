import FoundationEssentials
import Glibc
package import SystemIO

/// A destination's durable position in the journals: every message of the walks before `walk`, and the first
/// `acknowledged` messages of `walk` (in `ShareSelector`'s numbering), have been acknowledged by it.
///
/// Kept in `share-HASH.state` in the state directory, replaced whole (temp file, fsync, rename) after each
/// acknowledgement (one write for all that a poll found): a crash or a power cut finds the old position or the
/// new one, so what follows it is sent again (at most once more), and nothing before it.
package struct ShareCursor: Codable, Sendable, Equatable {
    package var url: String
    package var device: String
    /// nil: no walk existed when sharing was set up; every walk counts.
    package var walk: String?
    package var acknowledged: Int
    /// GPS time (`tst`) and system-clock time of the last acknowledgement.
    package var lastTst: Int?
    package var lastWall: Double?

    package enum CodingKeys: String, CodingKey {
        case url, device, walk, acknowledged
        case lastTst = "last_tst"
        case lastWall = "last_wall"
    }

    package static let maxBytes = 64 << 10

    /// What a destination's state file holds.
    package enum Saved: Sendable, Equatable {
        case position(ShareCursor)
        /// No file: the destination is new.
        case missing
        /// A file that is no position fieldlog wrote for this destination, the reason in words.
        case unusable(String)
    }

    package static func read(_ destination: ShareDestination, directory: String) -> Saved {
        let bytes: [UInt8]
        do {
            bytes = try FileIO.readRegular(destination.stateFileName, in: directory, maxBytes: maxBytes)
        } catch {
            return error.number == ENOENT ? .missing : .unusable(error.reason)
        }
        guard let cursor = try? JSONDecoder().decode(ShareCursor.self, from: Data(bytes)) else {
            return .unusable("not a position fieldlog wrote")
        }
        guard cursor.url == destination.url, cursor.device == destination.device else {
            return .unusable("the position of another destination")
        }
        guard cursor.acknowledged >= 0, (cursor.lastTst ?? 0) >= 0, (cursor.lastWall ?? 0) >= 0 else {
            return .unusable("a negative count or time")
        }
        return .position(cursor)
    }

    package func write(_ destination: ShareDestination, directory: String) throws(FileIOError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var bytes = try? Array(encoder.encode(self)) else { return }
        bytes.append(UInt8(ascii: "\n"))
        try FileIO.replace(directory + "/" + destination.stateFileName, with: bytes, durable: true)
    }

    package init(
        url: String, device: String, walk: String? = nil, acknowledged: Int, lastTst: Int? = nil,
        lastWall: Double? = nil
    ) {
        self.url = url
        self.device = device
        self.walk = walk
        self.acknowledged = acknowledged
        self.lastTst = lastTst
        self.lastWall = lastWall
    }
}
