import FieldLogFakes
import FieldLogTestSupport
import Foundation
import Sharing
import Testing
import WalkJournal
import WalkModel

/// A password per destination (`--share-credentials`), none to a URL without a user, and a refusal of the
/// credentials asked again on a slow schedule (here `--share-rejected-retry 1`) until it passes: against
/// Mosquitto and the Recorder's `/pub` stand-in, with a walk replayed through gpsd.
@Suite(.serialized, .timeLimit(.minutes(4)), .enabled(if: MosquittoBroker.available && Harness.gpsfakeAvailable))
final class SharingCredentialsTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    static let hikerPassword = "hiker-Pa55word"

    init() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `URL PASSWORD` lines, mode 0600.
    func credentials(_ lines: [(String, String)]) throws -> String {
        let path = directory + "/share-credentials"
        try lines.map { "\($0) \($1)\n" }.joined().write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }

    func json(_ server: FakeOwnTracksRecorder) -> [[String: Any]] {
        server.stored.compactMap { try? JSONSerialization.jsonObject(with: $0.body) as? [String: Any] }
    }

    func shareEvents() throws -> [JournalEvent] {
        let store = JournalStore(directory: state)
        return try store.read(try store.resolve(nil)).events.filter { $0.kind == .shareRejected }
    }

    /// Three destinations: the broker and a `/pub` each with its own password, a `/pub` whose URL names no user.
    /// Each gets the whole walk; each server sees only its own password, the one without a user none.
    @Test func eachDestinationGetsOnlyItsOwnPassword() async throws {
        let broker = try MosquittoBroker(in: directory)
        try await broker.start()
        let subscriber = try await MosquittoSubscriber(broker: broker, in: directory)
        let hiker = try await FakeOwnTracksRecorder.start(user: "hiker", password: Self.hikerPassword)
        defer { hiker.stop() }
        let open = try await FakeOwnTracksRecorder.start(user: "nobody", password: nil)
        defer { open.stop() }
        let file = try credentials([(broker.url, MosquittoBroker.password), (hiker.url, Self.hikerPassword)])
        let capture = try SharingHarness.walkCapture(seconds: 300, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.006, in: directory)
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", state, "--share", broker.url, "--share", hiker.url,
                "--share", open.url, "--share-device", "testdev", "--share-credentials", file, "--share-rate", "50",
            ],
            in: directory)
        defer { recorder.reap() }
        await gpsd.wait()
        for (name, received) in [
            ("broker", { subscriber.messages.map(\.json) }), ("hiker", { self.json(hiker) }),
            ("open", { self.json(open) }),
        ] as [(String, () -> [[String: Any]])] {
            let (expected, comparison) = try await SharingHarness.waitForAll(received, state: state, timeout: 90)
            #expect(
                comparison.missing.isEmpty && expected.count > 20,
                "\(name): missing \(comparison.missing.count) of \(expected.count)")
        }
        #expect(hiker.authorizations == ["hiker:\(Self.hikerPassword)"], "\(hiker.authorizations)")
        #expect(open.authorizations.isEmpty, "a URL without a user gets no Authorization: \(open.authorizations)")
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 20)
        #expect(outcome.status == 0)
        for secret in [MosquittoBroker.password, Self.hikerPassword] {
            #expect(!outcome.stderr.contains(secret))
            for name in try FileManager.default.contentsOfDirectory(atPath: state) {
                #expect(
                    !(String(data: FileManager.default.contents(atPath: state + "/" + name) ?? Data(), encoding: .utf8)
                        ?? "").contains(secret), "\(name)")
            }
        }
        await broker.stop()
    }

    /// A `/pub` that answers 403 once (a proxy, an authentication backend that blinked): said once, asked
    /// again, and the whole walk arrives.
    @Test func aRefusalOnceIsSaidOnceAndTheWalkStillArrivesWhole() async throws {
        let server = try await FakeOwnTracksRecorder.start(user: "hiker", password: Self.hikerPassword)
        defer { server.stop() }
        server.setFault(.forbiddenOnce)
        let capture = try SharingHarness.walkCapture(seconds: 300, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.006, in: directory)
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", state, "--share", server.url, "--share-device", "testdev",
                "--share-credentials", try credentials([(server.url, Self.hikerPassword)]), "--share-rate", "50",
                "--share-rejected-retry", "1",
            ],
            in: directory)
        defer { recorder.reap() }
        await gpsd.wait()
        let (expected, comparison) = try await SharingHarness.waitForAll(
            { self.json(server) }, state: state, timeout: 90)
        #expect(
            comparison.missing.isEmpty && expected.count > 20,
            "missing \(comparison.missing.count) of \(expected.count)")
        #expect(
            await waitUntil(timeout: 30) {
                ShareStatusFile.read(directory: self.state)?.destinations.first?.connection == .connected
            })
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 20)
        #expect(outcome.status == 0)
        #expect(
            outcome.stderr.components(separatedBy: "the server refused the credentials (HTTP 403); asking again in 1 s")
                .count - 1 == 1, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("the credentials are accepted again"))
        #expect(try shareEvents().count == 1)
        #expect(!outcome.stderr.contains(Self.hikerPassword))
    }

    /// A broker that does not know the user yet answers "not authorised"; once it does, the next attempt of
    /// the slow schedule logs in and everything is sent.
    @Test func aBrokerThatRefusedTheLoginIsAskedAgainUntilItAccepts() async throws {
        let broker = try MosquittoBroker(in: directory)
        try await broker.start()
        let subscriber = try await MosquittoSubscriber(broker: broker, in: directory)
        let url = "mqtt://hiker@127.0.0.1:\(broker.port)/owntracks/hiker/testdev"
        let capture = try SharingHarness.walkCapture(seconds: 300, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.006, in: directory)
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", state, "--share", url, "--share-device", "testdev",
                "--share-credentials", try credentials([(url, Self.hikerPassword)]), "--share-rate", "50",
                "--share-rejected-retry", "1",
            ],
            in: directory)
        defer { recorder.reap() }
        let refused = await waitUntil(timeout: 60) {
            ShareStatusFile.read(directory: self.state)?.destinations.first?.connection == .rejected
        }
        #expect(refused, "the broker refused the unknown user")
        try broker.addUser("hiker", password: Self.hikerPassword)
        await gpsd.wait()
        let (expected, comparison) = try await SharingHarness.waitForAll(
            { subscriber.messages.filter { $0.topic == "owntracks/hiker/testdev" }.map(\.json) }, state: state,
            timeout: 120)
        #expect(
            comparison.missing.isEmpty && expected.count > 20,
            "missing \(comparison.missing.count) of \(expected.count)")
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 20)
        #expect(outcome.status == 0)
        let told = outcome.stderr.split(separator: "\n").filter {
            $0.contains("not authorised") && $0.contains("asking again in 1 s")
        }
        #expect(told.count == 1, "\(outcome.stderr)")
        #expect(try shareEvents().count == 1)
        await broker.stop()
        #expect(broker.log.contains("not authorised"))
        #expect(!outcome.stderr.contains(Self.hikerPassword))
    }
}
