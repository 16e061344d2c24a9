import FieldLogTestSupport
import Foundation
import Recording
import Sharing
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

/// Sharing under faults, with a real broker and a walk replayed through gpsd: the broker stopped for minutes of
/// GPS time and restarted without persistence, fieldlog killed with SIGKILL and restarted, a wrong password, a
/// certificate that does not verify. After each, every message the walk calls for arrived, in order, at most
/// the in-flight window twice, and the walk was recorded all the same.
@Suite(.serialized, .timeLimit(.minutes(4)), .enabled(if: MosquittoBroker.available && Harness.gpsfakeAvailable))
final class SharingFaultTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var credentials: String { directory + "/credentials" }
    /// The transport's in-flight window: what a crash or a lost connection can make a server see twice.
    static let window = 10

    init() throws {
        try FileManager.default.createDirectory(atPath: directory + "/credentials", withIntermediateDirectories: true)
        try (MosquittoBroker.password + "\n").write(
            toFile: directory + "/credentials/share-password", atomically: true, encoding: .utf8)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func recorder(gpsd: GPSFake, broker: MosquittoBroker, extra: [String] = []) throws -> Child {
        var arguments = [
            "run", "--gpsd", gpsd.address, "--state-dir", state, "--share", broker.url, "--share-device", "testdev",
            "--share-password-file", "share-password", "--share-rate", "50",
        ]
        if broker.tls { arguments += ["--share-ca-file", broker.caFile] }
        return try Child(
            Harness.fieldlog, arguments + extra, in: directory, environment: ["CREDENTIALS_DIRECTORY": credentials])
    }

    func waitForAcknowledged(_ count: Int, timeout: Double = 30) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while (SharingHarness.cursor(state: state)?.acknowledged ?? 0) < count && Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        try #require(
            (SharingHarness.cursor(state: state)?.acknowledged ?? 0) >= count,
            "stuck at \(SharingHarness.cursor(state: state)?.acknowledged ?? -1)")
    }

    func points() -> Int {
        let store = JournalStore(directory: state)
        return ((try? store.walkIDs().last).flatMap { try? store.read($0) })?.points.count ?? 0
    }

    /// Stopped (SIGTERM) for about 5 s, which is minutes of the replay's GPS time, then restarted with persistence
    /// off: what libmosquitto held unacknowledged comes again, the backlog drains oldest first, nothing is lost.
    @Test func brokerDownForMinutesOfTheWalkThenRestartedWithoutPersistence() async throws {
        let broker = try MosquittoBroker(in: directory, persistence: false)
        try await broker.start()
        var subscriber = try await MosquittoSubscriber(broker: broker, in: directory)
        let capture = try SharingHarness.walkCapture(seconds: 600, in: directory)
        // About 40 s of GPS time a second.
        let gpsd = try await GPSFake(capture: capture, delay: 0.012, in: directory)
        let recorder = try recorder(gpsd: gpsd, broker: broker)
        defer { recorder.reap() }
        try await waitForAcknowledged(4)
        await broker.stop()
        try await Task.sleep(for: .milliseconds(200))
        var received = subscriber.messages.map(\.json)
        let pointsAtStop = points()
        try await Task.sleep(for: .seconds(5))
        #expect(
            points() - pointsAtStop > 60, "the walk went on while the broker was down: \(points() - pointsAtStop) fixes"
        )
        // The subscriber's session died with the broker: it must be back before fieldlog reconnects, or messages
        // would go to nobody. fieldlog's sharing process (the recorder's child) waits, stopped, meanwhile.
        let sharing = try #require(StatusFile.read(directory: state)?.helpers?.first { $0.name == "live-share" }?.pid)
        subscriber.stop()
        kill(sharing, SIGSTOP)
        try await broker.start(persistence: false)
        subscriber = try await MosquittoSubscriber(broker: broker, in: directory)
        kill(sharing, SIGCONT)
        await gpsd.wait()
        let (expected, _) = try await SharingHarness.waitForAll(
            { received + subscriber.messages.map(\.json) }, state: state)
        received += subscriber.messages.map(\.json)
        let comparison = SharingHarness.compare(received: received, expected: expected)
        #expect(comparison.missing.isEmpty, "missing \(comparison.missing)")
        #expect(comparison.unexpected.isEmpty && !comparison.outOfOrder)
        #expect(comparison.mostCopies <= 2, "a point seen at most twice")
        #expect(comparison.duplicates <= Self.window, "\(comparison.duplicates) duplicates")
        // Fixes fed while no recorder read them (or while a loaded machine lagged) are not in the walk: a floor only.
        #expect(expected.count > 20, "\(expected.count) points in the walk")
        recorder.signal(SIGTERM)
        #expect(await recorder.wait(timeout: 20).status == 0)
    }

    /// SIGKILL while messages are in flight, then a new recorder: it resumes from the durable position, so the
    /// broker sees at most the in-flight window again, and nothing is missing.
    @Test func killedWithSIGKILLResendsAtMostTheWindow() async throws {
        let broker = try MosquittoBroker(in: directory)
        try await broker.start()
        let subscriber = try await MosquittoSubscriber(broker: broker, in: directory)
        let capture = try SharingHarness.walkCapture(seconds: 600, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.012, in: directory)
        let first = try recorder(gpsd: gpsd, broker: broker)
        defer { first.reap() }
        try await waitForAcknowledged(8)
        first.signal(SIGKILL)
        await first.wait(timeout: 10)
        let second = try recorder(gpsd: gpsd, broker: broker)
        defer { second.reap() }
        await gpsd.wait()
        let (expected, comparison) = try await SharingHarness.waitForAll(
            { subscriber.messages.map(\.json) }, state: state)
        #expect(comparison.missing.isEmpty, "missing \(comparison.missing)")
        #expect(comparison.unexpected.isEmpty && !comparison.outOfOrder)
        #expect(comparison.mostCopies <= 2, "a point seen at most twice")
        #expect(comparison.duplicates <= Self.window, "\(comparison.duplicates) duplicates")
        // Fixes fed while no recorder read them (or while a loaded machine lagged) are not in the walk: a floor only.
        #expect(expected.count > 20, "\(expected.count) points in the walk")
        second.signal(SIGTERM)
        #expect(await second.wait(timeout: 20).status == 0)
    }
}

/// Destinations that refuse fieldlog: a wrong password, a certificate that does not verify. Beside the other
/// fault suites (each suite runs its tests one at a time).
@Suite(.serialized, .timeLimit(.minutes(3)), .enabled(if: MosquittoBroker.available && Harness.gpsfakeAvailable))
final class SharingRefusalTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var credentials: String { directory + "/credentials" }

    init() throws {
        try FileManager.default.createDirectory(atPath: directory + "/credentials", withIntermediateDirectories: true)
        try (MosquittoBroker.password + "\n").write(
            toFile: directory + "/credentials/share-password", atomically: true, encoding: .utf8)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func recorder(gpsd: GPSFake, broker: MosquittoBroker) throws -> Child {
        try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", state, "--share", broker.url, "--share-device", "testdev",
                "--share-password-file", "share-password",
            ],
            in: directory, environment: ["CREDENTIALS_DIRECTORY": credentials])
    }

    func points() -> Int {
        let store = JournalStore(directory: state)
        return ((try? store.walkIDs().last).flatMap { try? store.read($0) })?.points.count ?? 0
    }

    /// A wrong password: one refusal at the broker (the next attempt is a minute away), one journal event, the
    /// status says so, the walk goes on.
    @Test func aWrongPasswordIsSaidOnceAndTheWalkGoesOn() async throws {
        try "not-the-password\n".write(toFile: credentials + "/share-password", atomically: true, encoding: .utf8)
        let broker = try MosquittoBroker(in: directory)
        try await broker.start()
        let capture = try SharingHarness.walkCapture(seconds: 300, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.006, in: directory)
        let recorder = try recorder(gpsd: gpsd, broker: broker)
        defer { recorder.reap() }
        await gpsd.wait()
        try await Task.sleep(for: .seconds(2))
        let status = try await fieldlog(["status", "--state-dir", state], in: directory)
        #expect(status.stdout.contains("\(broker.url): rejected"), "\(status.stdout)")
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 20)
        #expect(outcome.status == 0)
        await broker.stop()
        #expect(broker.log.components(separatedBy: "not authorised").count - 1 == 1, "one attempt only: \(broker.log)")
        let store = JournalStore(directory: state)
        let log = try store.read(try store.resolve(nil))
        #expect(log.points.count > 250)
        #expect(log.events.filter { $0.kind == .shareRejected }.count == 1)
        #expect(outcome.stderr.components(separatedBy: "asking again in 60 s").count - 1 == 1, "\(outcome.stderr)")
        #expect(!outcome.stderr.contains("not-the-password") && !status.stdout.contains("not-the-password"))
    }

    /// A broker whose certificate the trusted CA did not sign: refused, said so, nothing sent, the walk goes on.
    @Test func aCertificateThatDoesNotVerifyIsRefused() async throws {
        let broker = try MosquittoBroker(in: directory, tls: true)
        try await broker.start()
        let subscriber = try await MosquittoSubscriber(broker: broker, in: directory)
        let capture = try SharingHarness.walkCapture(seconds: 200, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.006, in: directory)
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", state, "--share", broker.url, "--share-device", "testdev",
                "--share-password-file", "share-password", "--share-ca-file", broker.directory + "/other-ca.pem",
            ],
            in: directory, environment: ["CREDENTIALS_DIRECTORY": credentials])
        defer { recorder.reap() }
        await gpsd.wait()
        let status = try await fieldlog(["status", "--state-dir", state], in: directory)
        let line = status.stdout.split(separator: "\n").first { $0.hasPrefix("share ") } ?? ""
        #expect(line.contains("certificate verify failed") && !line.contains(": connected,"), "\(status.stdout)")
        #expect(subscriber.messages.isEmpty)
        #expect(points() > 150)
        recorder.signal(SIGTERM)
        #expect(await recorder.wait(timeout: 20).status == 0)
    }
}
