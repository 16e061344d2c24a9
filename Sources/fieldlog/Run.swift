import ArgumentParser
import CBuildStamp
import FieldLogDaemon
import FoundationEssentials
import Glibc
import Logging
import Recording
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

    @OptionGroup var options: RecorderOptions

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

    var configOption: ConfigOption { options.configOption }

    var settings: DaemonSettings {
        var settings = options.settings
        settings.helpers = helpers
        return settings
    }

    func validate() throws {
        do {
            try settings.validate()
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
        logger.logLevel = options.logLevel
        do {
            try await Daemon(settings: settings, logger: logger, version: String(cString: fieldlog_build_version()))
                .runUntilSignalled()
        } catch {
            throw CleanExit.failure("fieldlog: \(error)")
        }
    }
}

extension HostAndPort: ExpressibleByArgument {
    package init?(argument: String) {
        self.init(argument)
    }

    package var defaultValueDescription: String { description }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

struct StateDirectoryOption: ParsableArguments {
    @Option(name: .customLong("state-dir"), help: "Directory holding the walk journals.")
    var path: String = DaemonSettings().stateDirectory
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

/// Every setting of `fieldlog run`, also taken by the processes it starts (`live-page`, `live-share`), so that
/// they read the same fieldlog.conf the same way.
struct RecorderOptions: ParsableArguments {
    @OptionGroup var configOption: ConfigOption

    @Option(help: "gpsd address as HOST:PORT.")
    var gpsd: HostAndPort = DaemonSettings().gpsd

    @OptionGroup var stateDirectory: StateDirectoryOption

    @Option(help: "Metres walked between milestones.")
    var every: Double = WalkLimits().milestoneEvery

    @Option(help: "Seconds without a fix that start a new track segment.")
    var gap: Double = WalkLimits().segmentGap

    @Option(help: "Seconds of GPS time after which an interrupted walk is closed instead of resumed.")
    var idleGap: Double = WalkLimits().idleGap

    @Option(help: "Drop fixes whose horizontal error (eph) exceeds this many metres.")
    var maxEph: Double = WalkLimits().maxHorizontalError

    @Option(help: "Drop jumps implying more than this speed, in m/s.")
    var maxSpeed: Double = WalkLimits().maxSpeed

    @Option(help: "A position may be off by this many metres (or its eph, if larger): slack for jumps and gaps.")
    var minStep: Double = WalkLimits().minStep

    @Flag(help: "Stop when gpsd closes the connection instead of reconnecting (replays, demos).")
    var once = false

    @OptionGroup var photos: PhotoOptions

    @OptionGroup var sharing: ShareOptions

    @Option(
        help: ArgumentHelp(
            "Serve the live page of the walk on ADDRESS:PORT (off by default).",
            discussion: """
                A read-only page anyone who can reach ADDRESS may open: the walk's track, milestones, photos \
                with their attribution, favourites and the recorder's status, updated as the walk goes on, \
                and its exports. 127.0.0.1 keeps it on the device; 0.0.0.0 offers it to every network the \
                device is on (its Wi-Fi hotspot). The API key is never shown.
                """,
            valueName: "address:port"))
    var http: HostAndPort?

    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    /// The settings the options (after fieldlog.conf's) make.
    var settings: DaemonSettings {
        var settings = DaemonSettings()
        settings.gpsd = gpsd
        settings.stateDirectory = stateDirectory.path
        settings.limits.milestoneEvery = every
        settings.limits.segmentGap = gap
        settings.limits.idleGap = idleGap
        settings.limits.maxHorizontalError = maxEph
        settings.limits.maxSpeed = maxSpeed
        settings.limits.minStep = minStep
        settings.once = once
        settings.photos = photos.settings
        settings.http = http
        settings.logLevel = logLevel
        settings.sharing = sharing.settings
        return settings
    }

}

extension HelperMode: ExpressibleByArgument {}
