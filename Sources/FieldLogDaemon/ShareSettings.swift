package import ArgumentParser
import FoundationEssentials
package import Sharing

/// Where the walk is published live (`--share`), as OwnTracks locations.
package struct ShareSettings: ParsableArguments, Sendable {
    @Option(
        help: ArgumentHelp(
            "Publish the walk live to this OwnTracks server; repeat for several (the file: URLs separated by spaces).",
            discussion: """
                mqtt://[USER@]HOST[:PORT][/TOPIC] or mqtts://… (TLS, verified) for an MQTT broker, topic \
                owntracks/USER/DEVICE by default; https://[USER@]HOST[:PORT]/pub for the OwnTracks Recorder's \
                HTTP mode or Traccar's OwnTracks port (plain http only on loopback); /pub?u=USER&d=DEVICE, the \
                Recorder's own form, names the user and device there. A password goes only to a URL \
                that names a user, from --share-credentials or --share-password-file, never from the URL, and \
                never over plain mqtt or http to another host. A destination that cannot be set up is reported \
                (log, status, live page) and left out; the walk is recorded all the same.
                """,
            valueName: "url"))
    package var share: [String] = []

    @Option(help: "The OwnTracks device name (the topic's last level, the Recorder's d). Default: the host name.")
    package var shareDevice: String?

    @Option(help: "The OwnTracks tracker id shown on the map: two characters. Default: the device's last two.")
    package var shareTid: String?

    @Option(
        help:
            "Seconds of GPS time between shared fixes at most (the first and last of a segment and milestones always go)."
    )
    package var shareEvery: Double = 10

    @Option(help: "Messages a second at most per destination, also for a backlog after an outage.")
    package var shareRate: Double = 5

    @Option(
        help: ArgumentHelp(
            "Read a password per destination from this file: lines of URL PASSWORD.",
            discussion: """
                Each line: a destination's URL exactly as given to --share, spaces or tabs, and its password (the \
                rest of the line); blank lines and lines starting with # are skipped. At most 4 KiB, a regular \
                file (not a link), best mode 0600. A relative path is looked up in $CREDENTIALS_DIRECTORY first \
                (systemd LoadCredential=). Without this option the credential share-credentials is used if \
                systemd passes one.
                """,
            valueName: "file"))
    package var shareCredentials: String?

    @Option(
        help: ArgumentHelp(
            "Read the password of the one destination whose URL names a user from this file (its first line).",
            discussion: """
                For one destination with a login; with several, give each its own in --share-credentials (a \
                destination listed there takes its line). At most 4 KiB, a regular file (not a link), best \
                mode 0600. A relative path is looked up in $CREDENTIALS_DIRECTORY first (systemd \
                LoadCredential=). Without this option the credential share-password is used if systemd passes one.
                """,
            valueName: "file"))
    package var sharePasswordFile: String?

    @Option(help: "Also trust the CA certificate(s) in this PEM file for the destinations' TLS.")
    package var shareCaFile: String?

    @Option(
        help: ArgumentHelp(
            "Seconds before a destination that refused the credentials (HTTP 401/403, MQTT not authorised) is asked again.",
            discussion: "Then twice as long each time, up to 30 minutes, for as long as the walk goes on.",
            valueName: "seconds"))
    package var shareRejectedRetry = ShareRetry.rejectedDefault

    package init() {}

    /// Every sharing setting at its default.
    package static var defaults: ShareSettings {
        // Parsing no arguments cannot fail: every option has a default, and the defaults are valid.
        try! parse([])
    }

    package static let keys: [String] = defaults.settingEntries.map(\.key)

    /// Every URL given, the file's (space-separated) and the command line's.
    package var urls: [String] {
        share.flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init) }
    }

    package var deviceName: String {
        shareDevice ?? ShareDestination.defaultDevice()
    }

    package var trackerID: String {
        shareTid ?? String(deviceName.suffix(2))
    }

    package func check() throws(SettingsError) {
        guard shareEvery.isFinite && shareEvery >= 1 else {
            throw SettingsError(key: "share-every", "--share-every must be at least 1 second")
        }
        guard shareRate.isFinite && shareRate >= 0.1 && shareRate <= 1000 else {
            throw SettingsError(key: "share-rate", "--share-rate must be 0.1 to 1000 messages a second")
        }
        if let shareDevice, ShareDestination.sanitizedDevice(shareDevice) != shareDevice {
            throw SettingsError(
                key: "share-device", "--share-device must be up to 64 lowercase letters, digits, '-', '_' or '.'")
        }
        if let shareTid,
            shareTid.count != 2 || shareTid.contains(where: { $0 == "\"" || $0 == "\\" || $0.isWhitespace })
        {
            throw SettingsError(key: "share-tid", "--share-tid must be two characters")
        }
        guard shareRejectedRetry.isFinite && shareRejectedRetry >= 1 && shareRejectedRetry <= ShareRetry.rejectedMax
        else {
            throw SettingsError(
                key: "share-rejected-retry",
                "--share-rejected-retry must be 1 to \(Int(ShareRetry.rejectedMax)) seconds")
        }
    }

    /// Throws for the first URL that is no destination. Not part of `check()`: the recorder starts with a bad
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
            credentialsFile: shareCredentials, passwordFile: sharePasswordFile, environment: environment)
        // In the order given: a bad URL in its place, the others as the passwords set them up.
        var ready = passwords.targets(destinations)[...]
        return urls.map { url in faults[url].map { .unusable(url: url, reason: $0.message) } ?? ready.removeFirst() }
    }

    /// What the sharing service runs with.
    package func serviceSettings(cacheDirectory: String?, environment: [String: String]) -> ShareService.Settings {
        var settings = ShareService.Settings(
            targets: targets(environment: environment), caFile: shareCaFile, tid: trackerID, every: shareEvery,
            rate: shareRate, cacheDirectory: cacheDirectory)
        settings.rejectedRetry = shareRejectedRetry
        return settings
    }
}
