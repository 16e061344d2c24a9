import ArgumentParser
import FieldLogDaemon
import FoundationEssentials
import Logging

/// `fieldlog live-page`: the live page, in a process of its own (started by `fieldlog run`, or its own unit).
struct LivePageCommand: AsyncParsableCommand, ConfiguredCommand {
    static let configuration = CommandConfiguration(
        commandName: "live-page",
        abstract: "Serve the live page of the walk being recorded (`run --http` starts it).",
        discussion: """
            Takes the settings of `fieldlog run` and serves the page on --http, reading the walk from its \
            journal and the recorder's state from status.json. It writes nothing of the walk: whatever its \
            clients do can cost this process, never the recording. Without --http it says so and ends.
            """
    )

    static let configKeys = Run.configKeys

    @OptionGroup var configOption: ConfigOption

    @OptionGroup var settings: DaemonSettings

    @Option(help: .hidden) var supervisor: Int32?

    func run() async throws {
        let logger = try startHelper(settings: settings, supervisor: supervisor, memory: HelperMemory.livePage)
        guard let http = settings.http else {
            writeStandardError("fieldlog live-page: no --http address (http: in the settings): no page to serve\n")
            return
        }
        do {
            try await LivePageProcess(settings: settings, http: http, logger: logger).runUntilSignalled()
        } catch {
            throw CleanExit.failure("fieldlog live-page: \(error)")
        }
    }
}

/// `fieldlog live-share`: sharing, in a process of its own (started by `fieldlog run`, or its own unit).
struct LiveShareCommand: AsyncParsableCommand, ConfiguredCommand {
    static let configuration = CommandConfiguration(
        commandName: "live-share",
        abstract: "Share the walk being recorded with the --share destinations (`run --share` starts it).",
        discussion: """
            Takes the settings of `fieldlog run`, reads the journal as its queue and publishes it to each \
            --share destination, keeping its position per destination. A broker or server can cost this \
            process, never the recording. Without --share it says so and ends.
            """
    )

    static let configKeys = Run.configKeys

    @OptionGroup var configOption: ConfigOption

    @OptionGroup var settings: DaemonSettings

    @Option(help: .hidden) var supervisor: Int32?

    func run() async throws {
        let logger = try startHelper(settings: settings, supervisor: supervisor, memory: HelperMemory.liveShare)
        guard !settings.sharing.urls.isEmpty else {
            writeStandardError(
                "fieldlog live-share: no --share destination (share: in the settings): nothing to share\n")
            return
        }
        do {
            try await ShareProcess(
                settings: settings, logger: logger, environment: ProcessInfo.processInfo.environment,
                recorder: supervisor
            )
            .runUntilSignalled()
        } catch {
            throw CleanExit.failure("fieldlog live-share: \(error)")
        }
    }
}

/// Ties a supervised process to its recorder and starts its log.
private func startHelper(settings: DaemonSettings, supervisor: Int32?, memory: Int) throws -> Logger {
    do {
        try boundHelperProcess(dataBytes: memory)
        if let supervisor { try endWithSupervisor(supervisor) }
    } catch {
        throw CleanExit.failure("fieldlog: \(error)")
    }
    LoggingSystem.bootstrap(JournaldLogHandler.standardError)
    var logger = Logger(label: "fieldlog")
    logger.logLevel = settings.logLevel
    return logger
}
