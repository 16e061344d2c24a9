import ArgumentParser
import FieldLogDaemon
import FoundationEssentials
import Logging
import Sharing
import WalkJournal

struct Share: AsyncParsableCommand, ConfiguredCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a stored walk once to the sharing destinations.",
        discussion: """
            For a trip recorded offline, or before sharing was set up: every shared point of the walk, its \
            milestones and photos go to each --share destination (from the settings file or the command line), \
            oldest first at --share-rate, and fieldlog waits for their acknowledgements. The recorder's own \
            position per destination is left as it is.
            """
    )

    static let configKeys = Set(ShareSettings.keys).union(["state-dir", "cache-dir", "log-level"])

    @OptionGroup var configOption: ConfigOption

    @OptionGroup var stateDirectory: StateDirectoryOption

    @Option(help: "The walk to send: its id (see `fieldlog walks`) or latest.")
    var walk: String

    @OptionGroup var sharing: ShareSettings

    @Option(help: "Directory of the thumbnail cache (photos are sent with their thumbnail when it is there).")
    var cacheDir: String = PhotoSettings.defaultCacheDirectory

    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .warning

    @Option(help: "Give up after this many seconds without an acknowledgement.")
    var timeout: Double = 60

    func validate() throws {
        do {
            try sharing.check()
            try sharing.validateDestinations()
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        // A process that only shares: a broker's oversized packet fails here, not under the OOM killer.
        do {
            try ShareProcessMemory.apply()
        } catch {
            throw CleanExit.failure("fieldlog: \(error)")
        }
        LoggingSystem.bootstrap(JournaldLogHandler.standardError)
        var logger = Logger(label: "fieldlog")
        logger.logLevel = logLevel
        guard !sharing.urls.isEmpty else {
            throw CleanExit.failure("fieldlog: no destination: give --share URL, or share: in the settings file")
        }
        let store = JournalStore(directory: stateDirectory.path)
        let id: String
        do {
            id = try store.resolve(walk)
        } catch {
            throw CleanExit.failure("fieldlog: \(error)")
        }
        let settings = sharing.serviceSettings(
            cacheDirectory: cacheDir, environment: ProcessInfo.processInfo.environment)
        var complete = true
        for target in settings.targets {
            switch target {
            case let .unusable(url, reason):
                complete = false
                writeStandardError("fieldlog: \(url): \(reason)\n")
            case let .ready(destination, password, warning):
                if let warning { writeStandardError("fieldlog: \(destination.url): \(warning)\n") }
                do {
                    let outcome = try await ShareOnce.send(
                        walk: id, to: destination, password: password, settings: settings, store: store, logger: logger,
                        timeout: timeout)
                    var line =
                        "walk \(id) to \(destination.url): \(outcome.acknowledged) of \(outcome.sent) messages acknowledged"
                    if outcome.acknowledged < outcome.sent {
                        complete = false
                        line +=
                            " (\(outcome.status.connection.rawValue)\(outcome.status.error.map { ": " + $0 } ?? ""))"
                    }
                    try writeStandardOutput(line + "\n")
                } catch let error as ShareError {
                    complete = false
                    writeStandardError("fieldlog: \(error)\n")
                }
            }
        }
        if !complete { throw ExitCode.failure }
    }
}
