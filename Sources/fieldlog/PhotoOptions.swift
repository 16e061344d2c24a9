import ArgumentParser
import CBuildStamp
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

/// Where milestone photos come from and where their thumbnails go.
struct PhotoOptions: ParsableArguments {
    @Option(help: "Use the geotagged JPEGs in this folder instead of Flickr.")
    var photosDir: String?

    @Option(
        help: ArgumentHelp(
            "Read the Flickr API key from this file instead of $FLICKR_API_KEY.",
            discussion: """
                A relative path is looked up in $CREDENTIALS_DIRECTORY first (systemd LoadCredential=). \
                Without this option and $FLICKR_API_KEY, the credential flickr-api-key is used if systemd \
                passes one.
                """))
    var apiKeyFile: String?

    @Option(help: "Flickr REST endpoint (https; plain http only on loopback).")
    var flickrEndpoint: String = FlickrSource.defaultEndpoint

    @Option(help: "Also trust the CA certificate(s) in this PEM file for Flickr and its images (a test server, a proxy).")
    var flickrCaFile: String?

    @Option(help: "Flickr calls (searches and downloads) per hour at most: up to 3599 for Flickr itself, which allows 3600 per key; any for another endpoint.")
    var flickrRate: Int = 3000

    @Option(
        help: ArgumentHelp(
            "Photo sources in order of preference: a comma list of flickr, commons, local, or none.",
            discussion: """
                Each milestone is served by the first source that finds a photo; the next is asked when one \
                finds nothing or cannot be used. Default: local with --photos-dir; else flickr,commons with a \
                Flickr key; else commons.
                """))
    var photoSources: String?

    @Option(help: "Wikimedia Commons API endpoint (https; plain http only on loopback).")
    var commonsEndpoint: String = CommonsSource.defaultEndpoint

    @Option(help: "Also trust the CA certificate(s) in this PEM file for Commons and its images (a test server, a proxy).")
    var commonsCaFile: String?

    @Option(help: "How Wikimedia can reach whoever runs this device (an e-mail address or URL), sent in the User-Agent as Wikimedia asks.")
    var contact: String?

    @Option(help: "Directory of the thumbnail cache.")
    var cacheDir: String = "/var/cache/fieldlog"

    @Option(help: "Largest size of the thumbnail cache, in bytes.")
    var cacheMax: Int = 64 << 20

    @Option(help: "Long side of thumbnails, in pixels.")
    var thumbSize: Int = 320

    @Option(help: "Longest wait between retries of a photo that could not be fetched, in seconds.")
    var photoRetryMax: Double = 300

    func validate() throws {
        // Flickr's own limit binds Flickr only; a mirror or a test server on loopback sets its own.
        if flickrEndpoint == FlickrSource.defaultEndpoint {
            guard (1...3599).contains(flickrRate) else {
                throw ValidationError("--flickr-rate must be 1 to 3599 calls per hour (Flickr allows 3600 per key)")
            }
        } else {
            guard flickrRate >= 1 else { throw ValidationError("--flickr-rate must be at least 1 call per hour") }
        }
        if let photoSources, let problem = PhotoSourceChain.parse(photoSources).problem {
            throw ValidationError(problem)
        }
        guard cacheMax >= 64 << 10 else { throw ValidationError("--cache-max must be at least 65536 bytes") }
        guard (16...2048).contains(thumbSize) else { throw ValidationError("--thumb-size must be 16 to 2048 pixels") }
        guard photoRetryMax.isFinite && photoRetryMax >= 1 else {
            throw ValidationError("--photo-retry-max must be at least 1 second")
        }
    }

    /// The photo service for the chosen sources, or nil when none is configured.
    func makeService(recorder: WalkRecorder, store: JournalStore, logger: Logger) async throws -> PhotoService? {
        let key = try apiKey()
        let names = photoSources.flatMap { PhotoSourceChain.parse($0).names }
            ?? PhotoSourceChain.defaultNames(hasPhotosDirectory: photosDir != nil, hasFlickrKey: key != nil)
        var sources: [PhotoSourceChain.Member] = []
        for name in names {
            switch name {
            case "local":
                guard let photosDir else {
                    logger.notice("photo source local: no --photos-dir; skipped")
                    continue
                }
                // EXIF blocks are read in photo workers too: a hostile one fails only its file.
                let folder = try LocalPhotoSource(
                    directory: photosDir, reader: .isolated(executable: "/proc/self/exe", limits: PhotoWorkLimits()))
                let scan = await folder.lastScan
                logger.info(
                    "photos from \(photosDir): \(scan.photos) geotagged, \(scan.withoutGPS) without position, \(scan.unreadable) unreadable")
                sources.append(.init(name: "local", source: folder))
            case "flickr":
                guard let key else {
                    logger.notice("photo source flickr: no API key (FLICKR_API_KEY, --api-key-file); skipped")
                    continue
                }
                sources.append(.init(name: "flickr", source: try FlickrSource(
                    apiKey: key, endpoint: flickrEndpoint, caFile: flickrCaFile, budget: RequestBudget(perHour: flickrRate),
                    thumbnailSize: thumbSize)))
            case "commons":
                if contact == nil {
                    logger.notice("photo source commons: set `contact` (an e-mail address or URL): Wikimedia asks for one in the User-Agent")
                }
                // Its own budget: Wikimedia's limits are not Flickr's.
                let userAgent = CommonsSource.userAgent(version: String(cString: fieldlog_build_version()), contact: contact)
                sources.append(.init(name: "commons", source: try CommonsSource(
                    endpoint: commonsEndpoint, caFile: commonsCaFile, budget: RequestBudget(perHour: 1800),
                    userAgent: userAgent, thumbnailSize: thumbSize), maxRadius: CommonsSource.maxRadius))
            default:
                break
            }
        }
        guard !sources.isEmpty else { return nil }
        logger.info("photo sources: \(sources.map(\.name).joined(separator: ", "))")
        let cache: ThumbnailCache
        do {
            cache = try ThumbnailCache(directory: cacheDir, maxBytes: cacheMax)
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
                    logger.warning("storage full: removed the thumbnail cache (\(freed) bytes) to make room for the walk journal")
                }
            }
        }
        return PhotoService(
            sources: sources, recorder: recorder, store: store, thumbnails: cache,
            // Each photo is decoded in a child process of its own, under memory and CPU limits: no photo can
            // take the recorder down (PhotoWorkLimits says the budget).
            thumbnailer: IsolatedThumbnailer(executable: "/proc/self/exe", size: thumbSize), logger: logger,
            maxBackoff: photoRetryMax)
    }

    /// The credential the systemd unit loads the key into (LoadCredential=flickr-api-key:...).
    static let apiKeyCredential = "flickr-api-key"

    /// The Flickr key (--api-key-file, else $FLICKR_API_KEY, else the service's credential), or nil when none
    /// is set up. An empty key file counts as none: the systemd unit gives
    /// its credential an empty default so that the service starts before anyone has installed a key.
    private func apiKey() throws -> String? {
        let key: String?
        if let apiKeyFile {
            var path = apiKeyFile
            if !path.hasPrefix("/"), let credentials = ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"],
                FileManager.default.fileExists(atPath: credentials + "/" + path)
            {
                path = credentials + "/" + path
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("cannot read the API key file \(path)")
            }
            key = String(decoding: data, as: UTF8.self)
        } else if let environment = ProcessInfo.processInfo.environment["FLICKR_API_KEY"], !environment.isEmpty {
            key = environment
        } else if let credentials = ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"] {
            key = FileManager.default.contents(atPath: credentials + "/" + Self.apiKeyCredential).map {
                String(decoding: $0, as: UTF8.self)
            }
        } else {
            key = nil
        }
        let trimmed = String(
            String.UnicodeScalarView((key ?? "").unicodeScalars.drop { $0.properties.isWhitespace }.reversed()
                .drop { $0.properties.isWhitespace }.reversed()))
        return trimmed.isEmpty ? nil : trimmed
    }
}
