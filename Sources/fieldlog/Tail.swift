import ArgumentParser
import Exports
import FoundationEssentials
import Glibc
import SystemIO
import WalkJournal
import WalkModel

struct Tail: ParsableCommand, ConfiguredCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the latest walk as it is recorded.",
        discussion: """
            Prints the last N journal records of the newest walk as readable lines: the local time of \
            each fix, its position, accuracy and the distance walked so far, milestones, track segments, \
            gpsd coming and going, errors. With -f it keeps printing as the walk grows and moves on to a \
            new walk when one starts. Meant for `ssh pi fieldlog tail -f`; ends quietly when its output \
            is closed.
            """
    )

    static let configKeys: Set<String> = ["state-dir"]

    @OptionGroup var configOption: ConfigOption

    @OptionGroup var stateDirectory: StateDirectoryOption

    @Option(name: [.customShort("n"), .customLong("lines")], help: "Number of records to show first.")
    var lines: Int = 10

    @Flag(name: .short, help: "Follow the journal as it grows, onto new walks too.")
    var follow = false

    func validate() throws {
        guard lines >= 0 else { throw ValidationError("-n must be 0 or more") }
    }

    func run() throws {
        // A reader that went away (`| head`, a dropped SSH session) ends tail quietly, not by SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        let store = JournalStore(directory: stateDirectory.path)
        let formatter = TailFormatter()
        func lines(from follower: JournalFollower) -> [String] {
            follower.newLines().compactMap(JournalCodec.decode).compactMap(formatter.line(for:))
        }
        var walk: String?
        do {
            walk = try store.walkIDs().last
        } catch {
            throw CleanExit.failure("fieldlog: \(error)")
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

    private func emit(_ lines: some Collection<String>) throws {
        guard !lines.isEmpty else { return }
        let text = lines.joined(separator: "\n") + "\n"
        guard let failure = FileIO.writeAll(text.utf8, to: STDOUT_FILENO) else { return }
        // A reader that went away ends tail quietly; anything else (a full disk) is an error.
        if failure.number == EPIPE { throw ExitCode.success }
        throw CleanExit.failure("fieldlog: cannot write to standard output: \(failure.reason)")
    }
}
