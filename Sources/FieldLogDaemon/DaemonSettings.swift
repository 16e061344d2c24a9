package import ArgumentParser
package import Logging
import Photos
package import Recording

/// Everything `fieldlog run` is told, each setting declared once: as an option, whose long name is also its key
/// in fieldlog.conf. `entries` reads them back, so the config file's keys, `--check-config`'s output and the
/// check of deploy/fieldlog.conf all come from these declarations (`Settings.swift`).
package struct DaemonSettings: ParsableArguments, Sendable {
    @Option(help: "gpsd address as HOST:PORT.")
    package var gpsd = HostAndPort(host: "127.0.0.1", port: "2947")

    @Option(help: "Directory holding the walk journals.")
    package var stateDir = DaemonSettings.defaultStateDirectory

    @Option(help: "Metres walked between milestones.")
    package var every = WalkLimits().milestoneEvery

    @Option(help: "Seconds without a fix that start a new track segment.")
    package var gap = WalkLimits().segmentGap

    @Option(help: "Seconds of GPS time after which an interrupted walk is closed instead of resumed.")
    package var idleGap = WalkLimits().idleGap

    @Option(help: "Drop fixes whose horizontal error (eph) exceeds this many metres.")
    package var maxEph = WalkLimits().maxHorizontalError

    @Option(help: "Drop jumps implying more than this speed, in m/s.")
    package var maxSpeed = WalkLimits().maxSpeed

    @Option(help: "A position may be off by this many metres (or its eph, if larger): slack for jumps and gaps.")
    package var minStep = WalkLimits().minStep

    /// Not a key: a file could not be overridden.
    @Flag(help: "Stop when gpsd closes the connection instead of reconnecting (replays, demos).")
    package var once = false

    @OptionGroup package var photos: PhotoSettings

    @OptionGroup package var sharing: ShareSettings

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
    package var http: HostAndPort?

    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical.")
    package var logLevel: Logger.Level = .info

    package init() {}

    package static let defaultStateDirectory = "/var/lib/fieldlog"

    /// Every setting at its default.
    package static var defaults: DaemonSettings {
        // Parsing no arguments cannot fail: every option has a default, and the defaults are valid.
        try! parse([])
    }

    /// What the recorder's walk logic runs with.
    package var limits: WalkLimits {
        var limits = WalkLimits()
        limits.milestoneEvery = every
        limits.segmentGap = gap
        limits.idleGap = idleGap
        limits.maxHorizontalError = maxEph
        limits.maxSpeed = maxSpeed
        limits.minStep = minStep
        return limits
    }

    /// The arguments that give a process started beside the recorder these same settings, and no file's.
    package var helperArguments: [String] {
        ["--config", "/dev/null"] + entries.compactMap { key, value in value.map { "--\(key)=\($0)" } }
    }

    /// Every setting with its value as fieldlog.conf writes it; nil for one that is not set.
    package var entries: [(key: String, value: String?)] { settingEntries }

    /// The keys fieldlog.conf may hold.
    package static let keys: [String] = defaults.entries.map(\.key)

    /// The settings as lines of a configuration file; an unset one as a comment.
    package var configurationText: String {
        entries.map { key, value in
            value.map { "\(key): \(ConfigFile.quoted($0))\n" } ?? "# \(key): (not set)\n"
        }.joined()
    }

    /// Throws for a value fieldlog cannot run with, naming the option as a user gives it.
    package func check() throws(SettingsError) {
        try requirePositive(every, "every", unit: "metres")
        try requirePositive(gap, "gap", unit: "seconds")
        try requirePositive(idleGap, "idle-gap", unit: "seconds")
        try requirePositive(maxEph, "max-eph", unit: "metres")
        try requirePositive(maxSpeed, "max-speed", unit: "m/s")
        guard minStep.isFinite && minStep >= 0 else {
            throw SettingsError(key: "min-step", "--min-step must be 0 or more metres")
        }
        try photos.check()
        try sharing.check()
    }

    private func requirePositive(_ value: Double, _ key: String, unit: String) throws(SettingsError) {
        guard value.isFinite && value > 0 else {
            throw SettingsError(key: key, "--\(key) must be a positive number of \(unit)")
        }
    }
}

/// Who runs the processes beside the recorder (the live page, sharing).
package enum HelperMode: String, CaseIterable, Sendable, ExpressibleByArgument {
    /// `fieldlog run` starts them as its children and restarts them when they end.
    case children
    /// systemd runs them as units of their own (fieldlog-live.service, fieldlog-share.service).
    case units
}

/// Where milestone photos come from and where their thumbnails go.
package struct PhotoSettings: ParsableArguments, Sendable {
    @Option(help: "Use the geotagged JPEGs in this folder instead of Flickr.")
    package var photosDir: String?

    @Option(
        help: ArgumentHelp(
            "Read the Flickr API key from this file instead of $FLICKR_API_KEY.",
            discussion: """
                A relative path is looked up in $CREDENTIALS_DIRECTORY first (systemd LoadCredential=). \
                Without this option and $FLICKR_API_KEY, the credential flickr-api-key is used if systemd \
                passes one.
                """))
    package var apiKeyFile: String?

    @Option(help: "Flickr REST endpoint (https; plain http only on loopback).")
    package var flickrEndpoint = FlickrSource.defaultEndpoint

    @Option(
        help: "Also trust the CA certificate(s) in this PEM file for Flickr and its images (a test server, a proxy).")
    package var flickrCaFile: String?

    @Option(
        help:
            "Flickr calls (searches and downloads) per hour at most: up to 3599 for Flickr itself, which allows 3600 per key; any for another endpoint."
    )
    package var flickrRate = 3000

    @Option(
        help: ArgumentHelp(
            "Photo sources in order of preference: a comma list of flickr, commons, local, or none.",
            discussion: """
                Each milestone is served by the first source that finds a photo; the next is asked when one \
                finds nothing or cannot be used. Default: local with --photos-dir; else flickr,commons with a \
                Flickr key; else commons.
                """))
    package var photoSources: String?

    @Option(help: "Wikimedia Commons API endpoint (https; plain http only on loopback).")
    package var commonsEndpoint = CommonsSource.defaultEndpoint

    @Option(
        help: "Also trust the CA certificate(s) in this PEM file for Commons and its images (a test server, a proxy).")
    package var commonsCaFile: String?

    @Option(
        help:
            "How Wikimedia can reach whoever runs this device (an e-mail address or URL), sent in the User-Agent as Wikimedia asks."
    )
    package var contact: String?

    @Option(help: "Directory of the thumbnail cache.")
    package var cacheDir = PhotoSettings.defaultCacheDirectory

    @Option(help: "Largest size of the thumbnail cache, in bytes.")
    package var cacheMax = 64 << 20

    @Option(help: "Long side of thumbnails, in pixels.")
    package var thumbSize = 320

    @Option(help: "Longest wait between retries of a photo that could not be fetched, in seconds.")
    package var photoRetryMax: Double = 300

    package init() {}

    package static let defaultCacheDirectory = "/var/cache/fieldlog"

    package func check() throws(SettingsError) {
        // Flickr's own limit binds Flickr only; a mirror or a test server on loopback sets its own.
        if flickrEndpoint == FlickrSource.defaultEndpoint {
            guard (1...3599).contains(flickrRate) else {
                throw SettingsError(
                    key: "flickr-rate", "--flickr-rate must be 1 to 3599 calls per hour (Flickr allows 3600 per key)")
            }
        } else {
            guard flickrRate >= 1 else {
                throw SettingsError(key: "flickr-rate", "--flickr-rate must be at least 1 call per hour")
            }
        }
        if let photoSources, let problem = PhotoSourceChain.parse(photoSources).problem {
            throw SettingsError(key: "photo-sources", problem)
        }
        guard cacheMax >= 64 << 10 else {
            throw SettingsError(key: "cache-max", "--cache-max must be at least 65536 bytes")
        }
        guard (16...2048).contains(thumbSize) else {
            throw SettingsError(key: "thumb-size", "--thumb-size must be 16 to 2048 pixels")
        }
        guard photoRetryMax.isFinite && photoRetryMax >= 1 else {
            throw SettingsError(key: "photo-retry-max", "--photo-retry-max must be at least 1 second")
        }
    }
}

/// A setting fieldlog cannot run with; `message` names the option and says what it must be.
package struct SettingsError: Error, CustomStringConvertible, Equatable {
    package var key: String
    package var message: String

    package init(key: String, _ message: String) {
        self.key = key
        self.message = message
    }

    package var description: String { message }
}
