import FoundationEssentials
import Sharing

/// Where the walk is published live (`--share`), as OwnTracks locations.
package struct ShareSettings: Sendable, Equatable {
    /// Destination URLs; the config file gives them separated by spaces.
    package var share: [String] = []
    /// The OwnTracks device name; nil: the host name.
    package var device: String?
    /// The tracker id; nil: the device's last two characters.
    package var tid: String?
    /// Seconds of GPS time between shared fixes at most.
    package var every: Double = 10
    /// Messages a second at most per destination.
    package var rate: Double = 5
    /// `URL PASSWORD` lines, a password per destination (`SharePasswords`).
    package var credentialsFile: String?
    /// The password of the one destination whose URL names a user (`SharePasswords`).
    package var passwordFile: String?
    package var caFile: String?
    /// Seconds before a destination that refused the credentials is asked again, doubling (`ShareRetry`).
    package var rejectedRetry = ShareRetry.rejectedDefault

    package init() {}

    /// These settings as fieldlog.conf keys.
    package var entries: KeyValuePairs<String, String?> {
        [
            "share": share.isEmpty ? nil : urls.joined(separator: " "), "share-device": device, "share-tid": tid,
            "share-every": "\(every)", "share-rate": "\(rate)", "share-credentials": credentialsFile,
            "share-password-file": passwordFile, "share-ca-file": caFile, "share-rejected-retry": "\(rejectedRetry)",
        ]
    }

    package static let keys: [String] = ShareSettings().entries.map(\.key)

    /// Every URL given, the file's (space-separated) and the command line's.
    package var urls: [String] {
        share.flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init) }
    }

    package var deviceName: String {
        device ?? ShareDestination.defaultDevice()
    }

    package var trackerID: String {
        tid ?? String(deviceName.suffix(2))
    }

    package func validate() throws(SettingsError) {
        guard every.isFinite && every >= 1 else {
            throw SettingsError(key: "share-every", "--share-every must be at least 1 second")
        }
        guard rate.isFinite && rate >= 0.1 && rate <= 1000 else {
            throw SettingsError(key: "share-rate", "--share-rate must be 0.1 to 1000 messages a second")
        }
        if let device, ShareDestination.sanitizedDevice(device) != device {
            throw SettingsError(
                key: "share-device", "--share-device must be up to 64 lowercase letters, digits, '-', '_' or '.'")
        }
        if let tid, tid.count != 2 || tid.contains(where: { $0 == "\"" || $0 == "\\" || $0.isWhitespace }) {
            throw SettingsError(key: "share-tid", "--share-tid must be two characters")
        }
        guard rejectedRetry.isFinite && rejectedRetry >= 1 && rejectedRetry <= ShareRetry.rejectedMax else {
            throw SettingsError(
                key: "share-rejected-retry",
                "--share-rejected-retry must be 1 to \(Int(ShareRetry.rejectedMax)) seconds")
        }
    }

    /// Throws for the first URL that is no destination. Not part of `validate()`: the recorder starts with a bad
    /// URL, which sharing reports and leaves out; `run --check-config` and `fieldlog share` refuse it.
    package func validateDestinations() throws(SettingsError) {
        for url in urls {
            do {
                _ = try ShareDestination(url: url, device: deviceName)
            } catch {
                throw SettingsError(key: "share", error.message)
            }
        }
    }

    /// Each destination with the password meant for it, or unusable with the reason (a bad URL, a password file
    /// that cannot be used): never a reason to stop.
    package func targets(environment: [String: String]) -> [ShareTarget] {
        var destinations: [ShareDestination] = []
        var faults: [String: ShareError] = [:]
        for url in urls {
            do {
                destinations.append(try ShareDestination(url: url, device: deviceName))
            } catch {
                faults[url] = error
            }
        }
        let passwords = SharePasswords(
            credentialsFile: credentialsFile, passwordFile: passwordFile, environment: environment)
        // In the order given: a bad URL in its place, the others as the passwords set them up.
        var ready = passwords.targets(destinations)[...]
        return urls.map { url in faults[url].map { .unusable(url: url, reason: $0.message) } ?? ready.removeFirst() }
    }

    /// What the sharing service runs with.
    package func serviceSettings(cacheDirectory: String?, environment: [String: String]) -> ShareService.Settings {
        var settings = ShareService.Settings(
            targets: targets(environment: environment), caFile: caFile, tid: trackerID, every: every, rate: rate,
            cacheDirectory: cacheDirectory)
        settings.rejectedRetry = rejectedRetry
        return settings
    }
}
