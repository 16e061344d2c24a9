import ArgumentParser
import CBuildStamp
import FieldLogDaemon
import FoundationEssentials
import Glibc
import Logging
import SystemIO

struct Run: AsyncParsableCommand, ConfiguredCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record walks from gpsd until stopped.",
        discussion: """
            Connects to gpsd, keeps one fix per receiver epoch, and journals the walk in --state-dir. \
            A milestone is recorded at the first good fix and every --every metres walked. If gpsd is \
            absent or goes away, fieldlog reconnects with backoff, forever. SIGTERM or SIGINT ends the \
            session with everything synced; a later run resumes the walk if fixes continue within \
            --idle-gap seconds of GPS time. The live page (--http) and sharing (--share) run in processes \
            of their own, which read the journal: nothing they do can stop or slow the recording.
            """
    )

    /// Every option but --once (a replay switch the command line could not turn off again) and --config.
    static let configKeys = Set(DaemonSettings.keys)

    // The settings as a group of this command, not inside another group: in a debug build argument-parser checks
    // every group's arguments again for each level above it, and one more level cost each start 1.7 s.
    @OptionGroup var configOption: ConfigOption

    @OptionGroup var settings: DaemonSettings

    @Option(
        help: ArgumentHelp(
            "Who runs the live page and sharing: children (started and restarted by this process) or units.",
            discussion: """
                children: `fieldlog live-page` and `fieldlog live-share`, started with these settings and \
                restarted with backoff when they end. units: systemd starts them (fieldlog-live.service, \
                fieldlog-share.service), and this process records only.
                """))
    var helpers: HelperMode = .children

    @Flag(help: "Print the settings fieldlog would run with (the file's, then the command line's) and exit.")
    var checkConfig = false

    func validate() throws {
        do {
            try settings.check()
            // A bad --share URL never stops the recording (sharing reports it and leaves it out); the check says it.
            if checkConfig { try settings.sharing.validateDestinations() }
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        if checkConfig {
            try writeStandardOutput(settings.configurationText)
            return
        }
        // One line per event with a <N> priority when stderr is the journal, plain text otherwise.
        LoggingSystem.bootstrap(JournaldLogHandler.standardError)
        var logger = Logger(label: "fieldlog")
        logger.logLevel = settings.logLevel
        do {
            try await Daemon(
                settings: settings, helperMode: helpers, logger: logger,
                version: String(cString: fieldlog_build_version())
            )
            .runUntilSignalled()
        } catch {
            throw CleanExit.failure("fieldlog: \(error)")
        }
    }
}

/// `--state-dir`, for the commands that read what `fieldlog run` records.
struct StateDirectoryOption: ParsableArguments {
    @Option(name: .customLong("state-dir"), help: "Directory holding the walk journals.")
    var path: String = DaemonSettings.defaultStateDirectory
}

enum CleanExit {
    /// One clear line on stderr and exit status 1, for errors a user can cause.
    static func failure(_ message: String) -> ExitCode {
        writeStandardError(message + "\n")
        return ExitCode.failure
    }
}

/// Writes `text` to standard error at once, unbuffered.
func writeStandardError(_ text: String) {
    _ = FileIO.writeAll(text.utf8, to: STDERR_FILENO)
}
