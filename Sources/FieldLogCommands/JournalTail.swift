import Exports
import Glibc
import WalkJournal
import WalkModel

/// `fieldlog tail`: the last records of the newest walk as readable lines, and with `follow` the lines to come,
/// onto newer walks too.
package struct JournalTail {
    package var stateDirectory: String
    package var lines: Int
    package var follow: Bool

    package init(stateDirectory: String, lines: Int, follow: Bool) {
        self.stateDirectory = stateDirectory
        self.lines = lines
        self.follow = follow
    }

    /// Hands each batch of lines to `emit`; with `follow` it goes on until `emit` throws. A state directory that
    /// cannot be listed is a `CommandError`; what `emit` throws ends it as it is.
    package func run(emit: ([String]) throws -> Void) throws {
        let store = JournalStore(directory: stateDirectory)
        let formatter = TailFormatter()
        func lines(from follower: JournalFollower) -> [String] {
            follower.newLines().compactMap(JournalCodec.decode).compactMap(formatter.line(for:))
        }
        var walk: String?
        do {
            walk = try store.walkIDs().last
        } catch {
            throw CommandError("\(error)")
        }
        var follower = walk.map { JournalFollower(path: store.path(for: $0)) }
        if let follower {
            // The last lines of a journal of any size, read a chunk at a time.
            var last: [String] = []
            repeat {
                last += lines(from: follower)
                last.removeFirst(max(0, last.count - self.lines))
            } while follower.hasMore
            try emit(last)
        } else if !follow {
            try emit(["no walks in \(store.directory) yet"])
            return
        }
        guard follow else { return }
        // Poll twice a second; move on to a newer walk once the current one has been shown to its end.
        while true {
            usleep(500_000)
            if let follower {
                repeat { try emit(lines(from: follower)) } while follower.hasMore
            }
            if let newest = (try? store.walkIDs())?.last, newest != walk {
                walk = newest
                let next = JournalFollower(path: store.path(for: newest))
                follower = next
                repeat { try emit(lines(from: next)) } while next.hasMore
            }
        }
    }
}
