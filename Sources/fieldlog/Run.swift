import ArgumentParser
import FieldLog
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Logging
import ServiceLifecycle

struct Run: AsyncParsableCommand, ConfiguredCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record walks from gpsd until stopped.",
        discussion: """
            Connects to gpsd, keeps one fix per receiver epoch, and journals the walk in --state-dir. \
            A milestone is recorded at the first good fix and every --every metres walked. If gpsd is \
            absent or goes away, fieldlog reconnects with backoff, forever. SIGTERM or SIGINT ends the \
            session with everything synced; a later run resumes the walk if fixes continue within \
            --idle-gap seconds of GPS time.
            """
    )

    /// Every option but --once (a replay switch the command line could not turn off again) and --config.
    static let configKeys: Set<String> = Set([
        "gpsd", "state-dir", "every", "gap", "idle-gap", "max-eph", "max-speed", "min-step", "photos-dir",
        "api-key-file", "flickr-endpoint", "flickr-ca-file", "flickr-rate", "cache-dir", "cache-max", "thumb-size", "photo-retry-max",
        "log-level", "http",
    ]).union(ShareOptions.configKeys)

    @OptionGroup var configOption: ConfigOption

    @Option(help: "gpsd address as HOST:PORT.")
    var gpsd: HostAndPort = HostAndPort(host: "127.0.0.1", port: "2947")

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

    @Flag(help: "Print the settings fieldlog would run with (the file's, then the command line's) and exit.")
    var checkConfig = false

    /// The settings as lines of a configuration file; an unset option as a comment.
    var settingsText: String {
        let settings: KeyValuePairs<String, String?> = [
            "gpsd": gpsd.description, "state-dir": stateDirectory.path, "every": "\(every)", "gap": "\(gap)",
            "idle-gap": "\(idleGap)", "max-eph": "\(maxEph)", "max-speed": "\(maxSpeed)", "min-step": "\(minStep)",
            "photos-dir": photos.photosDir, "api-key-file": photos.apiKeyFile, "flickr-endpoint": photos.flickrEndpoint,
            "flickr-ca-file": photos.flickrCaFile,
            "flickr-rate": "\(photos.flickrRate)", "cache-dir": photos.cacheDir, "cache-max": "\(photos.cacheMax)",
            "thumb-size": "\(photos.thumbSize)", "photo-retry-max": "\(photos.photoRetryMax)", "log-level": "\(logLevel)",
            "http": http?.description,
        ]
        return (Array(settings) + Array(sharing.settings)).map { key, value in
            value.map { "\(key): \(ConfigFile.quoted($0))\n" } ?? "# \(key): (not set)\n"
        }.joined()
    }

    func validate() throws {
        try requirePositive(every, "--every", unit: "metres")
        try requirePositive(gap, "--gap", unit: "seconds")
        try requirePositive(idleGap, "--idle-gap", unit: "seconds")
        try requirePositive(maxEph, "--max-eph", unit: "metres")
        try requirePositive(maxSpeed, "--max-speed", unit: "m/s")
        guard minStep.isFinite && minStep >= 0 else { throw ValidationError("--min-step must be 0 or more metres") }
        try photos.validate()
        try sharing.validate()
    }

    private func requirePositive(_ value: Double, _ name: String, unit: String) throws {
        guard value.isFinite && value > 0 else { throw ValidationError("\(name) must be a positive number of \(unit)") }
    }

    func run() async throws {
        if checkConfig {
            try writeStandardOutput(settingsText)
            return
        }
        // One line per event with a <N> priority when stderr is the journal, plain text otherwise.
        LoggingSystem.bootstrap(JournaldLogHandler.standardError)
        var logger = Logger(label: "fieldlog")
        logger.logLevel = logLevel
        var limits = WalkLimits()
        limits.milestoneEvery = every
        limits.segmentGap = gap
        limits.idleGap = idleGap
        limits.maxHorizontalError = maxEph
        limits.maxSpeed = maxSpeed
        limits.minStep = minStep

        let store = JournalStore(directory: stateDirectory.path)
        let recorder: WalkRecorder
        do {
            recorder = try WalkRecorder(store: store, limits: limits, logger: logger)
        } catch {
            throw CleanExit.failure("fieldlog: \(error)")
        }
        var readerConfiguration = GPSDReader.Configuration(host: gpsd.host, port: gpsd.port)
        readerConfiguration.once = once
        let photoService: PhotoService?
        do {
            photoService = try await photos.makeService(recorder: recorder, store: store, logger: logger)
        } catch {
            throw CleanExit.failure("fieldlog: \(error)")
        }
        let statusFile = StatusFile(directory: store.directory, gpsdAddress: gpsd.description)
        let recorderService = RecorderService(
            reader: GPSDReader(configuration: readerConfiguration, logger: logger),
            recorder: recorder,
            status: statusFile,
            onEnd: { [once] in
                // A replay is over when its photos are served too.
                if once { photoService?.finishWhenIdle() }
            })
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let photoService {
            recorder.setMilestoneHandler { milestone, walkID in
                photoService.enqueue(milestone, walkID: walkID)
            }
            services = [
                .init(service: recorderService, successTerminationBehavior: once ? .ignore : .gracefullyShutdownGroup),
                .init(service: photoService, successTerminationBehavior: .gracefullyShutdownGroup),
            ]
        } else {
            logger.notice("no photo source: set FLICKR_API_KEY, --api-key-file or --photos-dir; milestones get no photos")
            services = [.init(service: recorderService, successTerminationBehavior: .gracefullyShutdownGroup)]
        }
        let shareService = try makeShareService(recorder: recorder, store: store, logger: logger)
        if let shareService {
            services.append(.init(service: shareService, successTerminationBehavior: .ignore))
        }
        if let http {
            let activity = photoService?.activity
            let web = WebService(
                configuration: .init(host: http.host, port: Int(http.port)!), store: store,
                cacheDirectory: photos.cacheDir,
                currentWalk: { recorder.summary.walkID },
                status: {
                    let summary = recorder.summary
                    let gpsd = statusFile.gpsdState
                    return LiveStatus(
                        distance: summary.distance, milestones: summary.milestones, gpsd: gpsd.state,
                        lastFixWall: gpsd.lastFixWall, photos: activity?.current, storage: summary.storage?.reason,
                        suspectFixes: summary.suspectFixes, rejectedFixes: summary.rejectedFixes,
                        shares: shareService?.statuses.map { $0.line })
                },
                logger: logger)
            services.append(.init(service: web, successTerminationBehavior: .ignore))
        }
        // Last, so that it hears of a shutdown first (STOPPING=1); READY=1 as the group starts, state recovered.
        let notifier = SystemdNotifier(logger: logger)
        if notifier.isEnabled {
            let systemd = SystemdService(notifier: notifier, logger: logger) { _ = recorder.summary; return true }
            services.append(.init(service: systemd, successTerminationBehavior: .gracefullyShutdownGroup))
        }
        // Signals are waited for here, not by the group (see ShutdownSignals).
        let group = ServiceGroup(configuration: .init(services: services, logger: logger))
        do {
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { [logger] in
                    guard let signal = try await ShutdownSignals.first(of: [SIGTERM, SIGINT]) else { return }
                    logger.info("signal \(signal): shutting down")
                    await group.triggerGracefulShutdown()
                }
                try await group.run()
                tasks.cancelAll()
            }
        } catch {
            throw CleanExit.failure("fieldlog: \(error)")
        }
    }
}

/// HOST:PORT or [IPv6]:PORT, for gpsd and for the live page.
struct HostAndPort: ExpressibleByArgument, CustomStringConvertible {
    var host: String
    var port: String

    init(host: String, port: String) {
        self.host = host
        self.port = port
    }

    init?(argument: String) {
        // [v6::addr]:port, host:port
        guard let colon = argument.lastIndex(of: ":") else { return nil }
        var host = String(argument[..<colon])
        let port = String(argument[argument.index(after: colon)...])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let number = UInt16(port), number > 0 else { return nil }
        self.host = host
        self.port = port
    }

    var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    var defaultValueDescription: String { description }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

struct StateDirectoryOption: ParsableArguments {
    @Option(name: .customLong("state-dir"), help: "Directory holding the walk journals.")
    var path: String = "/var/lib/fieldlog"
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
