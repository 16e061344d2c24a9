import FieldLogFakes
import FieldLogTestSupport
import Foundation
import Sharing
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

/// `fieldlog run --share` against a real Mosquitto broker started by the test (its own port, password file and
/// TLS listener with a CA made for the test), a walk replayed through gpsd, and a subscriber checking every
/// message: fields and units, `tst` against the journal, order, the GPS-time rate, milestones and photos.
@Suite(.serialized, .timeLimit(.minutes(4)), .enabled(if: MosquittoBroker.available && Harness.gpsfakeAvailable))
final class SharingTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var cache: String { directory + "/cache" }
    var credentials: String { directory + "/credentials" }
    let flickr = FakeFlickr()

    init() throws {
        try FileManager.default.createDirectory(atPath: directory + "/credentials", withIntermediateDirectories: true)
        try (MosquittoBroker.password + "\n").write(
            toFile: directory + "/credentials/share-password", atomically: true, encoding: .utf8)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func shareArguments(_ broker: MosquittoBroker, url: String? = nil) -> [String] {
        var arguments = [
            "--share", url ?? broker.url, "--share-device", "testdev", "--share-tid", "tw",
            "--share-password-file", "share-password", "--share-rate", "50",
        ]
        if broker.tls { arguments += ["--share-ca-file", broker.caFile] }
        return arguments
    }

    var environment: [String: String] { ["CREDENTIALS_DIRECTORY": credentials] }

    /// Photos along the walk's path (heading 45° from the synthetic walk's start), one per 100 m.
    func photosAlongThePath() async throws {
        let jpeg = [UInt8](FileManager.default.contents(atPath: Harness.fixtures + "/photos/p05_left01_gray.jpg")!)
        for hundred in 0...9 {
            let spot = Geodesy.destination(55.9486, -3.1999, bearing: 45, distance: Double(hundred) * 100)
            flickr.add(
                .init(
                    id: "8100\(hundred)", latitude: spot.lat, longitude: spot.lon, title: "View \(hundred)", jpeg: jpeg)
            )
        }
        try await flickr.start()
    }

    @Test func aWalkArrivesPointByPointOverVerifiedTLSWithMilestonesAndPhotos() async throws {
        let broker = try MosquittoBroker(in: directory, tls: true)
        try await broker.start()
        let subscriber = try await MosquittoSubscriber(broker: broker, in: directory)
        try await photosAlongThePath()
        let capture = try SharingHarness.walkCapture(seconds: 420, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.004, in: directory)
        let page = Harness.freePort()
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", state, "--cache-dir", cache, "--flickr-endpoint",
                flickr.endpoint,
                "--photo-retry-max", "1", "--http", "127.0.0.1:\(page)",
            ] + shareArguments(broker),
            in: directory, environment: environment.merging(["FLICKR_API_KEY": FakeFlickr.apiKey]) { $1 })
        defer { recorder.reap() }
        // Beside it, on the same gpsd, a recorder that does not share: sharing must not change what is recorded.
        let plainState = directory + "/plain-state"
        let plain = try Child(
            Harness.fieldlog, ["run", "--once", "--gpsd", gpsd.address, "--state-dir", plainState], in: directory)
        defer { plain.reap() }
        await gpsd.wait()
        #expect(await plain.wait(timeout: 30).status == 0)
        let store = JournalStore(directory: state)
        // Every milestone's photo journaled, then every message out.
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, ((try? store.read(store.resolve(nil)))?.pendingMilestones.count ?? 1) > 0 {
            try await Task.sleep(for: .milliseconds(200))
        }
        let topic = "owntracks/walker/testdev"
        func received() -> [[String: Any]] { subscriber.messages.filter { $0.topic == topic }.map(\.json) }
        let (expected, comparison) = try await SharingHarness.waitForAll(received, state: state)
        #expect(comparison.missing.isEmpty, "missing \(comparison.missing)")
        #expect(comparison.unexpected.isEmpty && !comparison.outOfOrder, "\(comparison.unexpected)")
        #expect(comparison.duplicates == 0)

        let log = try store.read(try store.resolve(nil))
        let messages = received()
        // A walk of 7 minutes: a few dozen messages, not one per fix.
        #expect(
            log.points.count > 350 && messages.count < log.points.count / 5,
            "\(messages.count) for \(log.points.count) fixes")
        #expect(log.milestones.count >= 5, "\(log.milestones.count) milestones")
        let points = Dictionary(log.points.map { (Int($0.fix.time.rounded(.down)), $0) }) { first, _ in first }
        var previous: [String: Any]?
        for (index, message) in messages.enumerated() {
            let tst = try #require(message["tst"] as? Int)
            #expect(message["_type"] as? String == "location")
            #expect(message["tid"] as? String == "tw")
            // tst is the journaled fix's own GPS time, and the fields are its values in OwnTracks units.
            let point = try #require(points[tst], "tst \(tst) is no journaled fix time")
            #expect(
                SharingHarness.MessageKey.scaled(message["lat"] as! Double)
                    == SharingHarness.MessageKey.scaled(point.fix.latitude))
            #expect(
                SharingHarness.MessageKey.scaled(message["lon"] as! Double)
                    == SharingHarness.MessageKey.scaled(point.fix.longitude))
            if message["fl_photo"] == nil {
                func whole(_ value: Double?) -> Int? { value.map { Int($0.rounded()) }.flatMap { $0 == 0 ? nil : $0 } }
                #expect(message["vel"] as? Int == whole(point.fix.speed.map { $0 * 3.6 }), "vel in km/h")
                #expect(message["acc"] as? Int == whole(point.fix.horizontalError))
                #expect(message["alt"] as? Int == whole(point.fix.altitude))
                #expect(message["cog"] as? Int == whole(point.fix.track))
            }
            // At most one per 10 s of GPS time, but the walk's first and last fixes and milestones.
            if let previous, message["fl_milestone"] == nil, index < messages.count - 1 {
                #expect(tst - (previous["tst"] as! Int) >= 10, "\(tst) after \(previous["tst"]!)")
            }
            if message["fl_photo"] == nil { previous = message }
        }
        #expect(
            messages.first?["tst"] as? Int == Int(log.points.first!.fix.time.rounded(.down)), "the walk's first fix")
        #expect(
            messages.contains { $0["tst"] as? Int == Int(log.points.last!.fix.time.rounded(.down)) },
            "the walk's last fix")
        // Every milestone, at its position, with a POI; every photo with its thumbnail.
        let milestoneMessages = messages.filter { $0["fl_milestone"] != nil && $0["fl_photo"] == nil }
        #expect(milestoneMessages.map { $0["fl_milestone"] as! Int } == log.milestones.map(\.index))
        #expect(
            milestoneMessages.allSatisfy {
                ($0["poi"] as? String)?.hasPrefix("Milestone ") == true && $0["t"] as? String == "u"
            })
        let photoMessages = messages.filter { $0["fl_photo"] != nil }
        let found = log.photos.values.compactMap { photo -> (Int, String, String)? in
            guard case let .found(candidate, _, key) = photo.outcome else { return nil }
            return (photo.milestone, candidate.id, key)
        }
        #expect(
            found.count >= 5 && photoMessages.count == found.count,
            "\(photoMessages.count) photo messages, \(found.count) photos")
        for (milestone, id, key) in found {
            let message = try #require(photoMessages.first { $0["fl_photo"] as? String == id })
            #expect(message["fl_milestone"] as? Int == milestone)
            #expect(message["imagename"] as? String == id + ".jpg")
            let image = try #require((message["image"] as? String).flatMap { Data(base64Encoded: $0) })
            // The rendition made for sharing from the cached thumbnail: 192 px, the same bytes as made here.
            let cached = try #require(FileManager.default.contents(atPath: cache + "/" + key + ".jpg"))
            #expect(SharedPhoto.make(from: [UInt8](cached)) == .image([UInt8](image)), "the rendition of the thumbnail")
            let at = try #require(log.milestones.first { $0.index == milestone })
            #expect(
                message["tst"] as? Int == Int(at.time.rounded(.down)), "a photo goes at its milestone's time and place")
        }

        // fieldlog status: the destination, connected, nothing waiting, the last acknowledged time.
        // (share-status.json follows within a few seconds.)
        let wanted = "\(broker.url): connected, 0 waiting, last acknowledged fix time"
        var status = try await fieldlog(["status", "--state-dir", state], in: directory)
        let statusDeadline = Date().addingTimeInterval(10)
        while !status.stdout.contains(wanted) && Date() < statusDeadline {
            try await Task.sleep(for: .milliseconds(300))
            status = try await fieldlog(["status", "--state-dir", state], in: directory)
        }
        let shareLine = status.stdout.split(separator: "\n").first { $0.hasPrefix("share ") }
        #expect(shareLine?.contains(wanted) == true, "\(status.stdout)")

        // The live page's status line: the destination under a neutral label (no host, no user), and its state.
        let livePage = RawHTTP.get("/", port: page, readFor: 10)
        #expect(
            livePage.body.contains("sharing: destination 1 connected, 0 waiting, last acknowledged"), "\(livePage.head)"
        )
        #expect(
            !livePage.body.contains(MosquittoBroker.password) && !livePage.body.contains(MosquittoBroker.user + "@")
                && !livePage.body.contains(broker.url))

        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 20)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("sharing the walk with \(broker.url)"))
        // The password is nowhere: log, journal, status, state.
        #expect(!outcome.stderr.contains(MosquittoBroker.password))
        for name in try FileManager.default.contentsOfDirectory(atPath: state) {
            let text = String(
                decoding: FileManager.default.contents(atPath: state + "/" + name) ?? Data(), as: UTF8.self)
            #expect(!text.contains(MosquittoBroker.password), "\(name)")
        }
        #expect(!status.stdout.contains(MosquittoBroker.password))
        // The walk as recorded (fixes, milestones, segments, start and end) is the same with sharing as without,
        // byte for byte; healthy sharing journals nothing.
        func walkLines(_ directory: String) throws -> [String] {
            try SharingHarness.journalWithoutEvents(state: directory).filter { line in
                ["fix", "milestone", "segment", "walk_start", "walk_end"].contains {
                    line.contains("\"type\":\"\($0)\"")
                }
            }
        }
        #expect(try walkLines(state) == walkLines(plainState))
        #expect(try walkLines(state).count > 350)
        #expect(!(try String(contentsOfFile: store.path(for: log.id), encoding: .utf8)).contains("share_"))

        // fieldlog share --walk: the stored walk again, to another topic, all of it; the journal untouched.
        let journalBefore = FileManager.default.contents(atPath: store.path(for: log.id))
        let again = try await fieldlog(
            ["share", "--walk", "latest", "--state-dir", state, "--cache-dir", cache]
                + shareArguments(
                    broker, url: "mqtts://\(MosquittoBroker.user)@127.0.0.1:\(broker.port)/owntracks/walker/replay"),
            in: directory, environment: environment, timeout: 60)
        #expect(again.status == 0, "\(again.stdout) \(again.stderr)")
        #expect(
            FileManager.default.contents(atPath: store.path(for: log.id)) == journalBefore,
            "sharing never writes the journal")
        let replayExpected = try SharingHarness.expected(state: state)
        #expect(
            again.stdout.contains("\(replayExpected.count) of \(replayExpected.count) messages acknowledged"),
            "\(again.stdout)")
        try await Task.sleep(for: .milliseconds(500))
        let replayed = subscriber.messages.filter { $0.topic == "owntracks/walker/replay" }.map(\.json)
        let replayComparison = SharingHarness.compare(received: replayed, expected: replayExpected)
        #expect(replayComparison.missing.isEmpty && !replayComparison.outOfOrder && replayComparison.duplicates == 0)
        #expect(expected.count <= replayExpected.count)
        await flickr.stop()
    }
}
