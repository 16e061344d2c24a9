import ArgumentParser
import FieldLog
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// Where the walk is published live (`--share`), as OwnTracks locations.
struct ShareOptions: ParsableArguments {
    static let configKeys: Set<String> = [
        "share", "share-device", "share-tid", "share-every", "share-rate", "share-password-file", "share-ca-file",
    ]

    @Option(
        help: ArgumentHelp(
            "Publish the walk live to this OwnTracks server; repeat for several (the file: URLs separated by spaces).",
            discussion: """
                mqtt://[USER@]HOST[:PORT][/TOPIC] or mqtts://… (TLS, verified) for an MQTT broker, topic \
                owntracks/USER/DEVICE by default; https://[USER@]HOST[:PORT]/pub for the OwnTracks Recorder's \
                HTTP mode or Traccar's OwnTracks port (plain http only on loopback). The password comes from \
                --share-password-file, never from the URL.
                """,
            valueName: "url"))
    var share: [String] = []

    @Option(help: "The OwnTracks device name (the topic's last level, the Recorder's d). Default: the host name.")
    var shareDevice: String?

    @Option(help: "The OwnTracks tracker id shown on the map: two characters. Default: the device's last two.")
    var shareTid: String?

    @Option(help: "Seconds of GPS time between shared fixes at most (the first and last of a segment and milestones always go).")
    var shareEvery: Double = 10

    @Option(help: "Messages a second at most per destination, also for a backlog after an outage.")
    var shareRate: Double = 5

    @Option(
        help: ArgumentHelp(
            "Read the password for the destinations from this file.",
            discussion: """
                A relative path is looked up in $CREDENTIALS_DIRECTORY first (systemd LoadCredential=). Without \
                this option the credential share-password is used if systemd passes one.
                """))
    var sharePasswordFile: String?

    @Option(help: "Also trust the CA certificate(s) in this PEM file for the destinations' TLS.")
    var shareCaFile: String?

    /// The lines of `settingsText` for these options.
    var settings: KeyValuePairs<String, String?> {
        [
            "share": share.isEmpty ? nil : urls.joined(separator: " "), "share-device": shareDevice, "share-tid": shareTid,
            "share-every": "\(shareEvery)", "share-rate": "\(shareRate)", "share-password-file": sharePasswordFile,
            "share-ca-file": shareCaFile,
        ]
    }

    /// Every URL given, the file's (space-separated) and the command line's.
    var urls: [String] {
        share.flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init) }
    }

    var device: String {
        shareDevice ?? ShareDestination.defaultDevice()
    }

    var tid: String {
        shareTid ?? String(device.suffix(2))
    }

    func validate() throws {
        guard shareEvery.isFinite && shareEvery >= 1 else { throw ValidationError("--share-every must be at least 1 second") }
        guard shareRate.isFinite && shareRate >= 0.1 && shareRate <= 1000 else {
            throw ValidationError("--share-rate must be 0.1 to 1000 messages a second")
        }
        if let shareDevice, ShareDestination.sanitizedDevice(shareDevice) != shareDevice {
            throw ValidationError("--share-device must be up to 64 lowercase letters, digits, '-', '_' or '.'")
        }
        if let shareTid, shareTid.count != 2 || shareTid.contains(where: { $0 == "\"" || $0 == "\\" || $0.isWhitespace }) {
            throw ValidationError("--share-tid must be two characters")
        }
        _ = try destinations()
    }

    func destinations() throws -> [ShareDestination] {
        do {
            return try urls.map { url throws(ShareError) in try ShareDestination(url: url, device: device) }
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// The credential the systemd unit loads the password into (LoadCredential=share-password:...).
    static let passwordCredential = "share-password"

    /// The password (the file's first line), or nil when none is set up; an empty file counts as none.
    func password() throws -> String? {
        let environment = ProcessInfo.processInfo.environment
        var path: String?
        if let sharePasswordFile {
            path = sharePasswordFile
            if !sharePasswordFile.hasPrefix("/"), let credentials = environment["CREDENTIALS_DIRECTORY"],
                FileManager.default.fileExists(atPath: credentials + "/" + sharePasswordFile)
            {
                path = credentials + "/" + sharePasswordFile
            }
        } else if let credentials = environment["CREDENTIALS_DIRECTORY"],
            FileManager.default.fileExists(atPath: credentials + "/" + Self.passwordCredential)
        {
            path = credentials + "/" + Self.passwordCredential
        }
        guard let path else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            // The path is told, never the contents.
            throw ValidationError("cannot read the share password file \(path)")
        }
        let line = String(decoding: data, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
            .first.map(String.init) ?? ""
        return line.isEmpty ? nil : line
    }

    func settings(cacheDirectory: String?) throws -> ShareService.Settings {
        ShareService.Settings(
            destinations: try destinations(), password: try password(), caFile: shareCaFile, tid: tid, every: shareEvery,
            rate: shareRate, cacheDirectory: cacheDirectory)
    }
}

extension Run {
    /// The sharing service for --share, or nil when the walk is not shared.
    func makeShareService(recorder: WalkRecorder, store: JournalStore, logger: Logger) throws -> ShareService? {
        guard !sharing.urls.isEmpty else { return nil }
        let settings: ShareService.Settings
        do {
            settings = try sharing.settings(cacheDirectory: photos.cacheDir)
        } catch {
            throw CleanExit.failure("fieldlog: \(error)")
        }
        // Journaled into the current walk by the recorder, which owns the journal.
        return ShareService(settings: settings, store: store, logger: logger) { kind, message in
            recorder.note(kind, message: message)
        }
    }
}
