import ArgumentParser
import FieldLogCommands
import Glibc
import SystemIO

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
        do {
            try JournalTail(stateDirectory: stateDirectory.path, lines: lines, follow: follow).run(emit: emit)
        } catch let error as CommandError {
            throw CleanExit.failure("fieldlog: \(error)")
        }
    }

    private func emit(_ lines: [String]) throws {
        guard !lines.isEmpty else { return }
        let text = lines.joined(separator: "\n") + "\n"
        guard let failure = FileIO.writeAll(text.utf8, to: STDOUT_FILENO) else { return }
        // A reader that went away ends tail quietly; anything else (a full disk) is an error.
        if failure.number == EPIPE { throw ExitCode.success }
        throw CleanExit.failure("fieldlog: cannot write to standard output: \(failure.reason)")
    }
}
