import FieldLogFakes
import FieldLogTestSupport
import Foundation
import Testing

/// What sharing says of a destination that fails, with the fieldlog binary and a real Mosquitto: the failure
/// named as it is, on one line.
@Suite(.serialized, .timeLimit(.minutes(3)), .enabled(if: MosquittoBroker.available && Harness.gpsfakeAvailable))
final class SharingWordsTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var credentials: String { directory + "/credentials" }

    init() throws {
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        try (MosquittoBroker.password + "\n").write(
            toFile: credentials + "/share-password", atomically: true, encoding: .utf8)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `fieldlog share --walk latest` of a short recorded walk to `url`; its output.
    func share(to url: String) async throws -> Outcome {
        let capture = try SharingHarness.walkCapture(seconds: 60, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.004, in: directory)
        #expect(
            try await fieldlog(
                ["run", "--once", "--gpsd", gpsd.address, "--state-dir", state], in: directory, timeout: 60
            ).status == 0)
        await gpsd.wait()
        return try await fieldlog(
            [
                "share", "--walk", "latest", "--state-dir", state, "--timeout", "5", "--share", url, "--share-device",
                "testdev",
                "--share-password-file", "share-password",
            ],
            in: directory, environment: ["CREDENTIALS_DIRECTORY": credentials], timeout: 60)
    }

    /// Plain `mqtt://` to a broker's TLS port: Mosquitto closes the connection without a CONNACK. Said as what it
    /// is, not as a TLS failure (there is no TLS on this side), nor as "connection lost", on one line.
    @Test func plainMQTTToATLSPortIsSaidToBeNoMQTTAnswer() async throws {
        let broker = try MosquittoBroker(in: directory, tls: true)
        try await broker.start()
        let outcome = try await share(to: "mqtt://\(MosquittoBroker.user)@127.0.0.1:\(broker.port)/")
        await broker.stop()
        #expect(outcome.status != 0)
        let line = try #require(
            outcome.stdout.split(separator: "\n").first { $0.contains("messages acknowledged") },
            "\(outcome.stdout) \(outcome.stderr)")
        #expect(line.contains("without an MQTT answer (is it a TLS port") && !line.contains("TLS failed"), "\(line)")
        #expect(outcome.stdout.split(separator: "\n").count == 1, "one line: \(outcome.stdout)")
    }

    @Test func nothingListeningIsSaidToBeARefusedConnection() async throws {
        let port = Harness.freePort()
        let outcome = try await share(to: "mqtt://\(MosquittoBroker.user)@127.0.0.1:\(port)/")
        #expect(outcome.status != 0)
        #expect(outcome.stdout.contains("connection refused (nothing listens on port \(port))"), "\(outcome.stdout)")
    }

    /// A Recorder whose user has an encryption key answers `/pub` with the friends' array encrypted in an object:
    /// an acknowledgement like `[]`, each message stored once (not retried for ever, stored at every retry).
    @Test func theRecordersEncryptedAnswerIsAnAcknowledgement() async throws {
        let server = try await FakeOwnTracksRecorder.start(
            user: MosquittoBroker.user, password: MosquittoBroker.password)
        defer { server.stop() }
        server.setFault(.encryptedAnswer)
        let outcome = try await share(to: server.url)
        let expected = try SharingHarness.expected(state: state).count
        #expect(outcome.status == 0, "\(outcome.stdout) \(outcome.stderr)")
        #expect(outcome.stdout.contains("\(expected) of \(expected) messages acknowledged"), "\(outcome.stdout)")
        #expect(
            server.stored.count == expected && server.seen == expected,
            "\(server.stored.count) stored, \(server.seen) seen")
    }

    /// The bundled walk with its demo photos, shared over HTTP: every location, milestone and photo is one the
    /// Recorder serves (its lines under 32 KiB), each photo with its image.
    @Test func everyMessageOfAWalkWithPhotosIsOneTheRecorderServes() async throws {
        let gpsd = try await GPSFake(capture: Harness.capture("bundg_zeus_9"), in: directory)
        let recorded = try await fieldlog(
            [
                "run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--cache-dir", directory + "/cache",
                "--photos-dir", Harness.repository + "/demo/photos",
            ],
            in: directory, timeout: 120)
        await gpsd.wait()
        #expect(recorded.status == 0, "\(recorded.stderr)")
        let server = try await FakeOwnTracksRecorder.start(
            user: MosquittoBroker.user, password: MosquittoBroker.password)
        defer { server.stop() }
        let outcome = try await fieldlog(
            [
                "share", "--walk", "latest", "--state-dir", state, "--cache-dir", directory + "/cache", "--timeout",
                "10",
                "--share", server.url, "--share-device", "testdev", "--share-password-file", "share-password",
            ],
            in: directory, environment: ["CREDENTIALS_DIRECTORY": credentials], timeout: 60)
        #expect(outcome.status == 0, "\(outcome.stdout) \(outcome.stderr)")
        let photos = server.stored.filter { String(decoding: $0.body, as: UTF8.self).contains("\"fl_photo\"") }
        let withImage = photos.filter { String(decoding: $0.body, as: UTF8.self).contains("\"image\":\"") }
        let longest = server.stored.map { FakeOwnTracksRecorder.recorderLineBytes($0.body) }.max() ?? 0
        print(
            "a walk with photos over HTTP: \(server.stored.count) stored, \(server.served.count) served, \(withImage.count) of \(photos.count) photos with their image, longest Recorder line \(longest) bytes"
        )
        #expect(server.stored.count == (try SharingHarness.expected(state: state).count))
        #expect(server.served.count == server.stored.count && photos.count >= 4 && withImage.count == photos.count)
    }
}
