import FoundationEssentials
import Glibc
package import Logging
package import Photos
package import Recording
import ServiceLifecycle
import Thumbnailing
package import WalkJournal

/// `fieldlog run` assembled: the services a validated configuration makes (recorder, photos, systemd, and the
/// supervisor of the live page's and sharing's processes), run as one group until SIGTERM or SIGINT, or until a
/// replay (`once`) has ended and its photos are served. Nothing here serves the network.
package struct Daemon {
    package let settings: DaemonSettings
    /// The walk's state, recovered from the journal before anything runs.
    package let recorder: WalkRecorder
    package let store: JournalStore
    /// nil when no photo source is configured or the cache cannot be used.
    package let photoService: PhotoService?
    private let group: ServiceGroup
    private let logger: Logger

    /// Recovers the walk and makes the services; nothing runs yet. Throws for what stops fieldlog from
    /// starting at all (a state directory it cannot use, an API key file it cannot read). `version` goes into
    /// the User-Agent of requests to Wikimedia. `helperMode` says who runs the live page and sharing.
    package init(
        settings: DaemonSettings, helperMode: HelperMode = .children, logger: Logger,
        environment: [String: String] = ProcessInfo.processInfo.environment, executable: String = "/proc/self/exe",
        version: String = "unknown"
    ) async throws(DaemonError) {
        self.settings = settings
        self.logger = logger
        store = JournalStore(directory: settings.stateDir)
        do {
            recorder = try WalkRecorder(store: store, limits: settings.limits, logger: logger)
        } catch {
            throw DaemonError("\(error)")
        }
        do {
            photoService = try await Self.photoService(
                settings.photos, recorder: recorder, store: store, logger: logger, environment: environment,
                executable: executable, version: version)
        } catch {
            throw DaemonError("\(error)")
        }
        var readerConfiguration = GPSDReader.Configuration(host: settings.gpsd.host, port: settings.gpsd.port)
        readerConfiguration.once = settings.once
        let statusFile = StatusFile(directory: store.directory, gpsdAddress: settings.gpsd.description)
        let once = settings.once
        let photoService = photoService
        let recorderService = RecorderService(
            reader: GPSDReader(configuration: readerConfiguration, logger: logger),
            recorder: recorder,
            status: statusFile,
            onEnd: {
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
            logger.notice("no photo source (--photo-sources, FLICKR_API_KEY, --photos-dir); milestones get no photos")
            services = [.init(service: recorderService, successTerminationBehavior: .gracefullyShutdownGroup)]
        }
        if let activity = photoService?.activity {
            // The live page runs in a process of its own: it reads the photo service's state from status.json.
            activity.observe { statusFile.note(photos: $0.statusRecord) }
        }
        var helpers: [HelperSupervisor.Helper] = []
        if settings.http != nil { helpers.append(.init(name: "live-page", arguments: settings.helperArguments)) }
        if !settings.sharing.urls.isEmpty {
            helpers.append(.init(name: "live-share", arguments: settings.helperArguments))
        }
        if helperMode == .children && !helpers.isEmpty {
            let supervisor = HelperSupervisor(
                helpers: helpers, executable: executable, status: statusFile, logger: logger)
            // First, so that it stops last (a group stops its services in reverse): the helpers read the recorder's
            // session end, and sharing sends the walk's last fix, before they are told to stop.
            services.insert(.init(service: supervisor, successTerminationBehavior: .ignore), at: 0)
        }
        services.append(.init(service: ResidentPagesService(logger: logger), successTerminationBehavior: .ignore))
        // Last, so that it hears of a shutdown first (STOPPING=1); READY=1 as the group starts, state recovered.
        let notifier = SystemdNotifier(logger: logger)
        if notifier.isEnabled {
            let recorder = recorder
            let systemd = SystemdService(notifier: notifier, logger: logger) {
                _ = recorder.status
                return true
            }
            services.append(.init(service: systemd, successTerminationBehavior: .gracefullyShutdownGroup))
        }
        group = ServiceGroup(configuration: .init(services: services, logger: logger))
    }

    /// Runs the services until they end by themselves (a replay over) or `shutDown()`.
    package func run() async throws {
        try await group.run()
    }

    /// `run()`, and SIGTERM or SIGINT shut the services down gracefully (the journal synced, photo requests
    /// cancelled). The signals are taken over for the rest of the process: for `fieldlog run`, not for tests.
    package func runUntilSignalled() async throws {
        try await group.runUntilSignalled(logger: logger)
    }

    /// Ends `run()` as SIGTERM would.
    package func shutDown() async {
        await group.triggerGracefulShutdown()
    }

    /// The photo service for the configured source, or nil when no source is configured.
    private static func photoService(
        _ settings: PhotoSettings, recorder: WalkRecorder, store: JournalStore, logger: Logger,
        environment: [String: String], executable: String, version: String
    ) async throws -> PhotoService? {
        let key = try FlickrKey.load(file: settings.apiKeyFile, environment: environment)
        let names =
            settings.photoSources.flatMap { PhotoSourceChain.parse($0).names }
            ?? PhotoSourceChain.defaultNames(hasPhotosDirectory: settings.photosDir != nil, hasFlickrKey: key != nil)
        var sources: [PhotoSourceChain.Member] = []
        for name in names {
            switch name {
            case "local":
                guard let directory = settings.photosDir else {
                    logger.notice("photo source local: no --photos-dir; skipped")
                    continue
                }
                // EXIF blocks are read in photo workers too: a hostile one fails only its file.
                let folder = try LocalPhotoSource(
                    directory: directory, reader: .isolated(executable: executable, limits: PhotoWorkLimits()))
                let scan = await folder.lastScan
                logger.info("photos from \(directory): \(scan.summary)")
                for (name, reason) in scan.skipped.sorted(by: { $0.key < $1.key }) {
                    logger.info("photo \(name) not placed: \(reason.rawValue)")
                }
                sources.append(.init(name: "local", source: folder))
            case "flickr":
                guard let key else {
                    logger.notice("photo source flickr: no API key (FLICKR_API_KEY, --api-key-file); skipped")
                    continue
                }
                sources.append(
                    .init(
                        name: "flickr",
                        source: try FlickrSource(
                            apiKey: key, endpoint: settings.flickrEndpoint, caFile: settings.flickrCaFile,
                            budget: RequestBudget(perHour: settings.flickrRate), thumbnailSize: settings.thumbSize))
                )
            case "commons":
                if settings.contact == nil {
                    logger.notice(
                        "photo source commons: set `contact` (an e-mail address or URL): Wikimedia asks for one in the User-Agent"
                    )
                }
                // Its own budget: Wikimedia's limits are not Flickr's.
                let userAgent = CommonsSource.userAgent(version: version, contact: settings.contact)
                sources.append(
                    .init(
                        name: "commons",
                        source: try CommonsSource(
                            endpoint: settings.commonsEndpoint, caFile: settings.commonsCaFile,
                            budget: RequestBudget(perHour: 1800),
                            userAgent: userAgent, thumbnailSize: settings.thumbSize),
                        maxRadius: CommonsSource.maxRadius))
            default:
                break
            }
        }
        guard !sources.isEmpty else { return nil }
        logger.info("photo sources: \(sources.map(\.name).joined(separator: ", "))")
        let cache: ThumbnailCache
        do {
            cache = try ThumbnailCache(directory: settings.cacheDir, maxBytes: settings.cacheMax)
        } catch {
            // The walk is recorded all the same; its milestones stay pending until a later start has a cache.
            logger.error("no photos this session: \(error); milestones stay pending")
            return nil
        }
        if cache.sharesFilesystem(with: store.directory) {
            // A full disk is the walk's before it is the thumbnails'.
            recorder.setStorageFullHandler { [logger] in
                Task {
                    let freed = await cache.removeAll()
                    logger.warning(
                        "storage full: removed the thumbnail cache (\(freed) bytes) to make room for the walk journal")
                }
            }
        }
        return PhotoService(
            sources: sources, journal: recorder, store: store, thumbnails: cache,
            // Each photo is decoded in a child process of its own, under memory and CPU limits: no photo can
            // take the recorder down (PhotoWorkLimits says the budget).
            thumbnailer: IsolatedThumbnailer(executable: executable, size: settings.thumbSize), logger: logger,
            maxBackoff: settings.photoRetryMax)
    }
}

/// fieldlog cannot start: `message` says why, safe to print (never holds the API key).
package struct DaemonError: Error, CustomStringConvertible {
    package var message: String

    package init(_ message: String) {
        self.message = message
    }

    package var description: String { message }
}
