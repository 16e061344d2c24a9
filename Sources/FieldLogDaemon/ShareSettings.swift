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
    package var passwordFile: String?
    package var caFile: String?

    package init() {}

    /// The credential the systemd unit loads the password into (LoadCredential=share-password:...).
    package static let passwordCredential = "share-password"

    /// These settings as fieldlog.conf keys.
    package var entries: KeyValuePairs<String, String?> {
        [
            "share": share.isEmpty ? nil : urls.joined(separator: " "), "share-device": device, "share-tid": tid,
            "share-every": "\(every)", "share-rate": "\(rate)", "share-password-file": passwordFile,
            "share-ca-file": caFile,
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
        _ = try destinations()
    }

    package func destinations() throws(SettingsError) -> [ShareDestination] {
        do {
            return try urls.map { url throws(ShareError) in try ShareDestination(url: url, device: deviceName) }
        } catch {
            throw SettingsError(key: "share", error.message)
        }
    }

    /// The password (the file's first line; a relative name is looked up in $CREDENTIALS_DIRECTORY first, and
    /// without a file the credential share-password is used), or nil when none is set up; an empty file
    /// counts as none.
    package func password(environment: [String: String]) throws(SettingsError) -> String? {
        guard let path = Credential.path(file: passwordFile, name: Self.passwordCredential, environment: environment)
        else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            // The path is told, never the contents.
            throw SettingsError(key: "share-password-file", "cannot read the share password file \(path)")
        }
        let line = String(decoding: data, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
            .first.map(String.init) ?? ""
        return line.isEmpty ? nil : line
    }

    /// What the sharing service runs with.
    package func serviceSettings(cacheDirectory: String?, environment: [String: String]) throws(SettingsError)
        -> ShareService.Settings
    {
        ShareService.Settings(
            destinations: try destinations(), password: try password(environment: environment), caFile: caFile,
            tid: trackerID, every: every, rate: rate, cacheDirectory: cacheDirectory)
    }
}
