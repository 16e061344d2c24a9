import Logging
import Photos
import Recording

/// Everything `fieldlog run` is told, each setting under its key: the long option without its dashes, and
/// the key in fieldlog.conf. `entries` is the one list of them: the config file's keys, `--check-config`'s
/// output and the check of deploy/fieldlog.conf all come from it.
package struct DaemonSettings: Sendable, Equatable {
    package var gpsd = HostAndPort(host: "127.0.0.1", port: "2947")
    package var stateDirectory = "/var/lib/fieldlog"
    package var limits = WalkLimits()
    /// Stop when gpsd closes the connection (replays, demos). Not a key: a file could not be overridden.
    package var once = false
    package var photos = PhotoSettings()
    /// Where the live page listens; nil: no live page.
    package var http: HostAndPort?
    package var logLevel: Logger.Level = .info
    package var sharing = ShareSettings()
    /// Who runs the live page and sharing. Not a key: the systemd unit says it on its command line.
    package var helpers = HelperMode.children

    package init() {}

    /// The arguments that give a process started beside the recorder these same settings, and no file's.
    package var helperArguments: [String] {
        ["--config", "/dev/null"] + entries.compactMap { key, value in value.map { "--\(key)=\($0)" } }
    }

    /// Every setting with its value as fieldlog.conf writes it; nil for one that is not set.
    package var entries: [(key: String, value: String?)] {
        Array(ownEntries) + Array(sharing.entries)
    }

    private var ownEntries: KeyValuePairs<String, String?> {
        [
            "gpsd": gpsd.description, "state-dir": stateDirectory, "every": "\(limits.milestoneEvery)",
            "gap": "\(limits.segmentGap)", "idle-gap": "\(limits.idleGap)", "max-eph": "\(limits.maxHorizontalError)",
            "max-speed": "\(limits.maxSpeed)", "min-step": "\(limits.minStep)", "photos-dir": photos.directory,
            "api-key-file": photos.apiKeyFile, "flickr-endpoint": photos.flickrEndpoint,
            "flickr-ca-file": photos.flickrCAFile, "flickr-rate": "\(photos.flickrRate)",
            "cache-dir": photos.cacheDirectory,
            "cache-max": "\(photos.cacheMax)", "thumb-size": "\(photos.thumbnailSize)",
            "photo-retry-max": "\(photos.retryMax)", "log-level": "\(logLevel)", "http": http?.description,
            "photo-sources": photos.sources, "commons-endpoint": photos.commonsEndpoint,
            "commons-ca-file": photos.commonsCAFile, "contact": photos.contact,
        ]
    }

    /// The keys fieldlog.conf may hold.
    package static let keys: [String] = DaemonSettings().entries.map(\.key)

    /// The settings as lines of a configuration file; an unset one as a comment.
    package var configurationText: String {
        entries.map { key, value in
            value.map { "\(key): \(ConfigFile.quoted($0))\n" } ?? "# \(key): (not set)\n"
        }.joined()
    }

    /// Throws for a value fieldlog cannot run with, naming the option as a user gives it.
    package func validate() throws(SettingsError) {
        try requirePositive(limits.milestoneEvery, "every", unit: "metres")
        try requirePositive(limits.segmentGap, "gap", unit: "seconds")
        try requirePositive(limits.idleGap, "idle-gap", unit: "seconds")
        try requirePositive(limits.maxHorizontalError, "max-eph", unit: "metres")
        try requirePositive(limits.maxSpeed, "max-speed", unit: "m/s")
        guard limits.minStep.isFinite && limits.minStep >= 0 else {
            throw SettingsError(key: "min-step", "--min-step must be 0 or more metres")
        }
        try photos.validate()
        try sharing.validate()
    }

    private func requirePositive(_ value: Double, _ key: String, unit: String) throws(SettingsError) {
        guard value.isFinite && value > 0 else {
            throw SettingsError(key: key, "--\(key) must be a positive number of \(unit)")
        }
    }
}

/// Who runs the processes beside the recorder (the live page, sharing).
package enum HelperMode: String, CaseIterable, Sendable {
    /// `fieldlog run` starts them as its children and restarts them when they end.
    case children
    /// systemd runs them as units of their own (fieldlog-live.service, fieldlog-share.service).
    case units
}

/// Where milestone photos come from and where their thumbnails go.
package struct PhotoSettings: Sendable, Equatable {
    /// A folder of geotagged JPEGs to use instead of Flickr.
    package var directory: String?
    package var apiKeyFile: String?
    package var flickrEndpoint = FlickrSource.defaultEndpoint
    package var flickrCAFile: String?
    package var flickrRate = 3000
    /// A comma list of flickr, commons, local, or none (`PhotoSourceChain`); nil: the default for what is set up.
    package var sources: String?
    package var commonsEndpoint = CommonsSource.defaultEndpoint
    package var commonsCAFile: String?
    /// How Wikimedia can reach whoever runs this device, for the User-Agent.
    package var contact: String?
    package var cacheDirectory = "/var/cache/fieldlog"
    package var cacheMax = 64 << 20
    package var thumbnailSize = 320
    /// Longest wait between retries of a photo that could not be fetched, seconds.
    package var retryMax: Double = 300

    package init() {}

    package func validate() throws(SettingsError) {
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
        if let sources, let problem = PhotoSourceChain.parse(sources).problem {
            throw SettingsError(key: "photo-sources", problem)
        }
        guard cacheMax >= 64 << 10 else {
            throw SettingsError(key: "cache-max", "--cache-max must be at least 65536 bytes")
        }
        guard (16...2048).contains(thumbnailSize) else {
            throw SettingsError(key: "thumb-size", "--thumb-size must be 16 to 2048 pixels")
        }
        guard retryMax.isFinite && retryMax >= 1 else {
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
