import FieldLogDaemon
import FieldLogFakes
import FieldLogTestSupport
import Foundation
import Logging
import NIOCore
import Recording
import Testing
import WalkJournal
import WalkModel

/// The daemon as `fieldlog run` assembles it, in this process: settings to services to a journal, against a
/// fake gpsd on loopback.
@Suite struct AssemblyTests {
    let directory = Harness.temporaryDirectory()
    var logger: Logger { quietLogger }

    /// A straight walk north along a meridian at 1.5 m/s, one TPV a second.
    func walk(seconds: Int) -> [String] {
        (0..<seconds).map { second in
            let time = Timestamp.format(1_779_443_000 + Double(second))
            return FakeGPSD.tpv(
                time: time, lat: 51.5 + Double(second) * 1.5 / 111_200, lon: -0.12, speed: "1.5", track: 0)
        }
    }

    @Test func aReplayIsRecordedAndTheDaemonEndsWithIt() async throws {
        let lines = walk(seconds: 200)
        let gpsd = try await FakeGPSD.start { _ in .init(lines: lines, interval: .milliseconds(2)) }
        var settings = DaemonSettings.defaults
        settings.gpsd = HostAndPort(host: "127.0.0.1", port: "\(gpsd.port)")
        settings.stateDir = directory + "/state"
        settings.once = true
        settings.photos.photoSources = "none"
        let daemon = try await Daemon(settings: settings, logger: logger, environment: [:])
        #expect(daemon.photoService == nil, "photo sources: none")
        try await daemon.run()
        await gpsd.stop()

        let store = JournalStore(directory: settings.stateDir)
        let walks = try store.walkIDs()
        #expect(walks.count == 1)
        let log = try store.read(try #require(walks.first))
        #expect(log.points.count == 200)
        // 199 s at 1.5 m/s: milestones at 0, 100 and 200 m.
        #expect(abs(log.distance - 298.5) < 3, "\(log.distance)")
        #expect(log.milestones.map(\.index) == [0, 1, 2])
    }

    @Test func aRecorderShutDownFromOutsideKeepsWhatItHasRecorded() async throws {
        let lines = walk(seconds: 30)
        let gpsd = try await FakeGPSD.start { _ in .init(lines: lines, interval: .milliseconds(5), closeAtEnd: false) }
        var settings = DaemonSettings.defaults
        settings.gpsd = HostAndPort(host: "127.0.0.1", port: "\(gpsd.port)")
        settings.stateDir = directory + "/state"
        settings.photos.photoSources = "none"
        let daemon = try await Daemon(settings: settings, logger: logger, environment: [:])
        let running = Task { try await daemon.run() }
        let store = JournalStore(directory: settings.stateDir)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, daemon.recorder.status.distance < 40 {
            try await Task.sleep(for: .milliseconds(20))
        }
        await daemon.shutDown()
        try await running.value
        await gpsd.stop()
        let log = try store.read(try #require(try store.walkIDs().first))
        #expect(log.points.count == 30)
    }

    @Test func anUnreadableKeyFileStopsTheStartWithoutTheKey() async throws {
        var settings = DaemonSettings.defaults
        settings.stateDir = directory + "/state"
        settings.photos.apiKeyFile = directory + "/missing-key"
        await #expect(throws: DaemonError.self) {
            _ = try await Daemon(settings: settings, logger: logger, environment: ["FLICKR_API_KEY": "secret-key-1234"])
        }
        do {
            _ = try await Daemon(settings: settings, logger: logger, environment: ["FLICKR_API_KEY": "secret-key-1234"])
        } catch {
            #expect(error.message == "cannot read the API key file \(directory)/missing-key")
        }
    }

    @Test func aKeyFromTheCredentialsDirectoryMakesFlickrTheSource() async throws {
        let credentials = directory + "/credentials"
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        try Data("  abc123 \n".utf8).write(to: URL(fileURLWithPath: credentials + "/" + FlickrKey.credential))
        #expect(try FlickrKey.load(file: nil, environment: ["CREDENTIALS_DIRECTORY": credentials]) == "abc123")
        try Data("\n".utf8).write(to: URL(fileURLWithPath: credentials + "/" + FlickrKey.credential))
        #expect(
            try FlickrKey.load(file: nil, environment: ["CREDENTIALS_DIRECTORY": credentials]) == nil, "empty: none")
        #expect(try FlickrKey.load(file: nil, environment: ["FLICKR_API_KEY": "k"]) == "k")
        var settings = DaemonSettings.defaults
        settings.stateDir = directory + "/state"
        settings.photos.cacheDir = directory + "/cache"
        let daemon = try await Daemon(settings: settings, logger: logger, environment: ["FLICKR_API_KEY": "k"])
        #expect(daemon.photoService != nil)
    }

    /// The one list of settings: every key once, the file's text parses back to the same settings' keys, and
    /// deploy/fieldlog.conf names exactly these keys.
    @Test func theSettingsListIsTheConfigFilesKeys() throws {
        #expect(Set(DaemonSettings.keys).count == DaemonSettings.keys.count)
        #expect(!DaemonSettings.keys.contains("once"))
        let text = DaemonSettings.defaults.configurationText
        let written = text.split(separator: "\n").map { line in
            String(line.drop { $0 == "#" || $0 == " " }.prefix { $0 != ":" })
        }
        #expect(written == DaemonSettings.keys)
        let example = try String(contentsOfFile: Harness.repository + "/deploy/fieldlog.conf", encoding: .utf8)
        let documented = example.split(separator: "\n").compactMap { line -> String? in
            // "# key: value", not a comment's "# https://…".
            guard line.hasPrefix("# "), let colon = line.firstIndex(of: ":"),
                line.dropFirst(
                    line.distance(
                        from: line.startIndex, to: colon) + 1
                ).first == " "
            else { return nil }
            let key = line[line.index(line.startIndex, offsetBy: 2)..<colon]
            return key.allSatisfy { $0.isLowercase || $0 == "-" } ? String(key) : nil
        }
        #expect(Set(documented) == Set(DaemonSettings.keys))
    }

    @Test func invalidSettingsNameTheirOption() {
        var settings = DaemonSettings.defaults
        settings.every = 0
        #expect(throws: SettingsError(key: "every", "--every must be a positive number of metres")) {
            try settings.check()
        }
        settings = DaemonSettings.defaults
        settings.photos.thumbSize = 4
        #expect(throws: SettingsError(key: "thumb-size", "--thumb-size must be 16 to 2048 pixels")) {
            try settings.check()
        }
        #expect(HostAndPort("[::1]:2947") == HostAndPort(host: "::1", port: "2947"))
        #expect(HostAndPort("localhost") == nil)
        #expect(HostAndPort("host:0") == nil)
    }
}
