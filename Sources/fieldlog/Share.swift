import ArgumentParser
import FieldLogCommands
import FieldLogDaemon
import Logging

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
        try command { () throws(CommandError) in try WalkSending.boundMemory() }
        LoggingSystem.bootstrap(JournaldLogHandler.standardError)
        var logger = Logger(label: "fieldlog")
        logger.logLevel = logLevel
        let complete: Bool
        do {
            complete = try await WalkSending.send(
                walk: walk, stateDirectory: stateDirectory.path, settings: sharing, cacheDirectory: cacheDir,
                timeout: timeout, logger: logger, report: { try writeStandardOutput($0 + "\n") },
                warn: { writeStandardError("fieldlog: \($0)\n") })
        } catch let error as CommandError {
            throw CleanExit.failure("fieldlog: \(error)")
        }
        if !complete { throw ExitCode.failure }
    }
}
