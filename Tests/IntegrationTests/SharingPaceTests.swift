import FieldLogFakes
import FieldLogTestSupport
import Foundation
import Testing
import WalkJournal
import WalkModel

/// The pace of sharing and its end, with the fieldlog binary: a backlog goes out at `--share-rate` over HTTP (the
/// Recorder's `/pub` stand-in) and MQTT (Mosquitto), not at a polling period; `run --once` leaves nothing of the
/// walk unsent.
@Suite(.serialized, .timeLimit(.minutes(4)), .enabled(if: Harness.gpsfakeAvailable))
final class SharingPaceTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var credentials: String { directory + "/credentials" }
    static let password = "pace-Pa55word"
    static let rate = 10.0

    init() throws {
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func writePassword(_ password: String) throws {
        try (password + "\n").write(toFile: credentials + "/share-password", atomically: true, encoding: .utf8)
    }

    /// `fieldlog run` replaying a 15-minute walk once, sharing with `destination`.
    func recordSharing(with destination: String, rate: Double = rate) async throws -> Outcome {
        let capture = try SharingHarness.walkCapture(seconds: 900, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.004, in: directory)
        let outcome = try await fieldlog(
            ["run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--photo-sources", "none"]
                + shareArguments(destination, rate: rate),
            in: directory, environment: ["CREDENTIALS_DIRECTORY": credentials], timeout: 120)
        await gpsd.wait()
        return outcome
    }

    func shareArguments(_ destination: String, rate: Double) -> [String] {
        [
            "--share", destination, "--share-device", "testdev", "--share-password-file", "share-password",
            "--share-rate", "\(rate)",
        ]
    }

    /// Runs the recorder (no gpsd: nothing new is journaled) while `count` says how many of `expected` messages
    /// have arrived; returns the seconds from the first to the last arrival.
    func sendBacklog(to destination: String, expected: Int, count: () -> Int) async throws -> Double {
        let recorder = try Child(
            Harness.fieldlog,
            ["run", "--gpsd", "127.0.0.1:\(Harness.freePort())", "--state-dir", state, "--photo-sources", "none"]
                + shareArguments(destination, rate: Self.rate),
            in: directory, environment: ["CREDENTIALS_DIRECTORY": credentials])
        defer { recorder.reap() }
        var first: Date?
        var last: Date?
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline, last == nil, recorder.isRunning {
            let arrived = count()
            if first == nil, arrived > 0 { first = Date() }
            if arrived >= expected { last = Date() }
            try await Task.sleep(for: .milliseconds(10))
        }
        recorder.signal(SIGTERM)
        #expect(await recorder.wait(timeout: 30).status == 0)
        let seconds = try #require(last).timeIntervalSince(try #require(first))
        return seconds
    }

    /// What a backlog of `count` messages at `rate` takes: the burst (the transport's window) goes at once, and
    /// a loaded machine is given half as long again.
    func expectPace(_ seconds: Double, count: Int, window: Int, _ transport: String) {
        let paced = Double(count - window) / Self.rate
        print(
            "\(transport): a backlog of \(count) messages in \(String(format: "%.2f", seconds)) s at --share-rate \(Self.rate) (\(String(format: "%.1f", Double(count) / seconds)) a second)"
        )
        #expect(
            seconds >= paced * 0.9,
            "\(transport): \(count) messages in \(seconds) s, faster than --share-rate \(Self.rate)")
        #expect(
            seconds <= paced * 1.5 + 1,
            "\(transport): \(count) messages in \(seconds) s, slower than --share-rate \(Self.rate)")
    }

    @Test func aBacklogGoesOutAtTheShareRateOverHTTP() async throws {
        try writePassword(Self.password)
        let server = try await FakeOwnTracksRecorder.start(user: "walker", password: Self.password)
        defer { server.stop() }
        // The walk is journaled while the Recorder answers 500: all of it waits.
        server.setFault(.serverError)
        #expect(try await recordSharing(with: server.url).status == 0)
        #expect(server.stored.isEmpty)
        let expected = try SharingHarness.expected(state: state).count
        #expect(expected > 80)
        server.setFault(.none)
        let seconds = try await sendBacklog(to: server.url, expected: expected) { server.stored.count }
        expectPace(seconds, count: expected, window: 1, "HTTP")
    }

    @Test(.enabled(if: MosquittoBroker.available))
    func aBacklogGoesOutAtTheShareRateOverMQTT() async throws {
        try writePassword(MosquittoBroker.password)
        let port = Harness.freePort()
        let destination = "mqtt://\(MosquittoBroker.user)@127.0.0.1:\(port)/"
        // The walk is journaled while no broker listens: all of it waits.
        #expect(try await recordSharing(with: destination).status == 0)
        let expected = try SharingHarness.expected(state: state).count
        let broker = try MosquittoBroker(in: directory, port: port)
        try await broker.start()
        let subscriber = try await MosquittoSubscriber(broker: broker, in: directory)
        let seconds = try await sendBacklog(to: destination, expected: expected) {
            subscriber.messages.filter { $0.topic.hasSuffix("/testdev") }.count
        }
        expectPace(seconds, count: expected, window: 10, "MQTT")
        await broker.stop()
    }

    /// The replay ends, the recorder journals the walk's last fix and stops; sharing waits for it to be
    /// acknowledged before it stops too.
    @Test func runOnceSendsTheWalkToItsLastFix() async throws {
        try writePassword(Self.password)
        let server = try await FakeOwnTracksRecorder.start(user: "walker", password: Self.password)
        defer { server.stop() }
        let outcome = try await recordSharing(with: server.url, rate: 50)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let expected = try SharingHarness.expected(state: state)
        let log = try JournalStore(directory: state).read(try JournalStore(directory: state).resolve(nil))
        let lastFix = try #require(log.points.last).fix.time
        let tsts = server.stored.compactMap {
            (try? JSONSerialization.jsonObject(with: $0.body) as? [String: Any])?["tst"] as? Int
        }
        #expect(server.stored.count == expected.count, "\(server.stored.count) of \(expected.count) messages stored")
        #expect(tsts.max() == Int(lastFix.rounded(.down)), "the last fix at \(lastFix) was not shared")
        #expect(outcome.stderr.contains("everything journaled is acknowledged"), "\(outcome.stderr.suffix(1500))")
    }
}
