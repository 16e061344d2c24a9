import FieldLogFakes
import FieldLogTestSupport
import Foundation
import Sharing
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

/// `--share http://…/pub` against a stand-in for the OwnTracks Recorder's HTTP mode on loopback: the request it
/// documents (POST, `?u=&d=`, `X-Limit-U`/`X-Limit-D`, `topic` and `tid` in the body, basic auth), and faults:
/// 5xx, slow answers, answers cut short or not from OwnTracks (no acknowledgement: the position must not move),
/// and 401 (said once, asked again only slowly).
@Suite(.serialized, .timeLimit(.minutes(3)), .enabled(if: Harness.gpsfakeAvailable))
final class SharingHTTPTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var credentials: String { directory + "/credentials" }
    static let password = "http-Pa55word"

    init() throws {
        try FileManager.default.createDirectory(atPath: directory + "/credentials", withIntermediateDirectories: true)
        try (Self.password + "\n").write(
            toFile: directory + "/credentials/share-password", atomically: true, encoding: .utf8)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func acknowledged() -> Int { SharingHarness.cursor(state: state)?.acknowledged ?? 0 }

    @Test func theRecorderGetsEveryPointOnlyARealAcknowledgementMovesThePosition() async throws {
        let server = try await FakeOwnTracksRecorder.start(user: "walker", password: Self.password)
        defer { server.stop() }
        let capture = try SharingHarness.walkCapture(seconds: 900, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.015, in: directory)
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", state, "--share", server.url, "--share-device", "testdev",
                "--share-tid", "tw", "--share-password-file", "share-password", "--share-rate", "50",
            ],
            in: directory, environment: ["CREDENTIALS_DIRECTORY": credentials])
        defer { recorder.reap() }
        // The recorder and its sharing process start first: on a loaded 2-core machine that has taken over 30 s.
        let deadline = Date().addingTimeInterval(60)
        while server.stored.count < 5 && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(server.stored.count >= 5)
        // Answers that are no acknowledgement: the position stays where it is while they last (two tries each),
        // and moves on once real answers come again.
        for fault in [FakeOwnTracksRecorder.Fault.dropBody, .notOwnTracks, .serverError] {
            server.setFault(fault)
            // The first request under the fault: the answer before it was taken (one message at a time), so its
            // position is written by then.
            let seenAtFault = server.seen
            let faulted = Date().addingTimeInterval(30)
            while server.seen < seenAtFault + 1 && Date() < faulted { try await Task.sleep(for: .milliseconds(20)) }
            let before = acknowledged()
            let seen = server.seen
            // (Retries back off with full jitter: 1, then 2 s at most; a loaded machine is given ample time.)
            let deadline = Date().addingTimeInterval(30)
            while server.seen < seen + 2 && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
            #expect(server.seen >= seen + 1, "\(fault): retried")
            #expect(acknowledged() == before, "\(fault): no acknowledgement, no progress")
            server.setFault(.none)
            let recovery = Date().addingTimeInterval(30)
            while acknowledged() == before && Date() < recovery { try await Task.sleep(for: .milliseconds(50)) }
            #expect(acknowledged() > before, "\(fault): moving on once acknowledged")
        }
        server.setFault(.slow(1.5))
        try await Task.sleep(for: .seconds(4))
        server.setFault(.none)
        await gpsd.wait()
        let (expected, comparison) = try await SharingHarness.waitForAll(
            { server.stored.compactMap { try? JSONSerialization.jsonObject(with: $0.body) as? [String: Any] } },
            state: state)
        #expect(comparison.missing.isEmpty, "missing \(comparison.missing)")
        #expect(comparison.unexpected.isEmpty && !comparison.outOfOrder)
        // One message at a time: an answer lost after the server stored it is the one duplicate it can cause.
        #expect(comparison.duplicates <= 3, "\(comparison.duplicates)")
        #expect(expected.count > 60)
        // The Recorder's request: user and device in the query and the headers, topic and tid in the body.
        let first = try #require(server.stored.first)
        #expect(first.path == "/pub?u=walker&d=testdev")
        #expect(first.headers["x-limit-u"] == "walker" && first.headers["x-limit-d"] == "testdev")
        #expect(first.headers["content-type"] == "application/json")
        let json = try #require(try JSONSerialization.jsonObject(with: first.body) as? [String: Any])
        #expect(json["topic"] as? String == "owntracks/walker/testdev" && json["tid"] as? String == "tw")
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 20)
        #expect(outcome.status == 0)
        #expect(!outcome.stderr.contains(Self.password))
    }

    /// The Recorder's own form of the URL, as its README gives it for the apps (`/pub?u=USER&d=DEVICE`): the walk
    /// is stored under that user and device. (The Recorder takes `X-Limit-U`/`X-Limit-D` over the query: sent with
    /// fieldlog's defaults, they filed the walk under fieldlog/HOSTNAME.)
    @Test func theRecordersOwnURLFormNamesUserAndDevice() async throws {
        let server = try await FakeOwnTracksRecorder.start(user: "walker", password: nil)
        defer { server.stop() }
        let capture = try SharingHarness.walkCapture(seconds: 60, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.004, in: directory)
        let recorded = try await fieldlog(
            ["run", "--once", "--gpsd", gpsd.address, "--state-dir", state], in: directory, timeout: 60)
        #expect(recorded.status == 0, "\(recorded.stderr)")
        await gpsd.wait()
        let outcome = try await fieldlog(
            [
                "share", "--walk", "latest", "--state-dir", state, "--timeout", "30", "--share",
                "http://127.0.0.1:\(server.port)/pub?u=walker&d=pi", "--share-device", "testdev",
            ],
            in: directory, timeout: 60)
        #expect(outcome.status == 0, "\(outcome.stdout) \(outcome.stderr)")
        #expect(server.stored.count > 5)
        for request in server.stored {
            #expect(request.path == "/pub?u=walker&d=pi")
            #expect(request.headers["x-limit-u"] == "walker" && request.headers["x-limit-d"] == "pi")
            let json = try #require(try JSONSerialization.jsonObject(with: request.body) as? [String: Any])
            #expect(json["topic"] as? String == "owntracks/walker/pi")
        }
    }

    /// Said once; the next attempt is a minute away (`SharingCredentialsTests` sees it come).
    @Test func aRefusedPasswordIsSaidOnceAndNotAskedAgainAtOnce() async throws {
        let server = try await FakeOwnTracksRecorder.start(user: "walker", password: "another")
        defer { server.stop() }
        let capture = try SharingHarness.walkCapture(seconds: 300, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.006, in: directory)
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", state, "--share", server.url, "--share-device", "testdev",
                "--share-password-file", "share-password",
            ],
            in: directory, environment: ["CREDENTIALS_DIRECTORY": credentials])
        defer { recorder.reap() }
        await gpsd.wait()
        try await Task.sleep(for: .seconds(1))
        let status = try await fieldlog(["status", "--state-dir", state], in: directory)
        #expect(status.stdout.contains("\(server.url): rejected"), "\(status.stdout)")
        #expect(server.seen == 1, "asked \(server.seen) times")
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 20)
        #expect(outcome.status == 0)
        let store = JournalStore(directory: state)
        let log = try store.read(try store.resolve(nil))
        #expect(log.events.filter { $0.kind == .shareRejected }.count == 1)
        #expect(log.points.count > 250)
        #expect(!outcome.stderr.contains(Self.password))
    }
}
