import FieldLogFakes
import FieldLogTestSupport
import Foundation
import Recording
import Sharing
import SystemIO
import Testing
import WalkJournal

/// A broker that attacks (HostileMQTTBroker) against the fieldlog binary sharing over MQTT through libmosquitto:
/// a packet announcing 256 MiB, and a flood of QoS 2 messages never released. The process that shares stays
/// small, drops the broker and comes back with a growing backoff, says what happened, and once a real Mosquitto
/// takes the port, shares all the same.
@Suite(.serialized, .timeLimit(.minutes(4)), .enabled(if: MosquittoBroker.available && Harness.gpsfakeAvailable))
final class SharingHostileBrokerTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var credentials: String { directory + "/credentials" }
    /// Far above a sharing process's own (about 30 MB resident) and far below what either attack makes of it
    /// without its bounds (hundreds of MB within seconds).
    static let residentBound = 120 << 20
    /// The watch kills a process above this, so that an unbounded client cannot take the test machine down.
    static let residentKill = 600 << 20

    init() throws {
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        try (MosquittoBroker.password + "\n").write(
            toFile: credentials + "/share-password", atomically: true, encoding: .utf8)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func shareArguments(port: UInt16) -> [String] {
        [
            "--share", "mqtt://\(MosquittoBroker.user)@127.0.0.1:\(port)/", "--share-device", "testdev",
            "--share-password-file", "share-password", "--share-rate", "50",
        ]
    }

    var environment: [String: String] { ["CREDENTIALS_DIRECTORY": credentials] }

    /// The largest resident size of `child` seen while watching it for `seconds`, in bytes; the process is killed
    /// above `residentKill`.
    func watchResident(_ child: Child, seconds: Double) async throws -> Int {
        try await watchResident(pid: child.pid, seconds: seconds) { child.isRunning }
    }

    /// The peak resident memory of process `pid` over `seconds` while `running` says so.
    func watchResident(pid: pid_t, seconds: Double, running: () -> Bool) async throws -> Int {
        var peak = 0
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline && running() {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") || line.hasPrefix("VmRSS:") {
                peak = max(peak, (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) << 10)
            }
            if peak > Self.residentKill { kill(pid, SIGKILL) }
            try await Task.sleep(for: .milliseconds(50))
        }
        return peak
    }

    /// A finished walk in the state directory, for `fieldlog share --walk`.
    func recordAWalk() async throws {
        let capture = try SharingHarness.walkCapture(seconds: 300, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.004, in: directory)
        let recorder = try Child(
            Harness.fieldlog, ["run", "--once", "--gpsd", gpsd.address, "--state-dir", state], in: directory)
        #expect(await recorder.wait(timeout: 60).status == 0)
        await gpsd.wait()
    }

    /// A PUBLISH announcing 268,435,455 bytes, and 250 MB of it as fast as the client reads. `fieldlog share`
    /// limits its own memory, so libmosquitto cannot allocate the packet: it disconnects, says so, and tries again
    /// later; with Mosquitto in the broker's place, the walk goes out whole.
    @Test func aPacketOf256MiBIsRefusedAndTheWalkGoesOutOnceARealBrokerIsBack() async throws {
        try await recordAWalk()
        let expected = try SharingHarness.expected(state: state).count
        let port = Harness.freePort()
        // Each child before its broker: it would inherit the listening socket (NIO's is not close-on-exec) and
        // keep the port from Mosquitto.
        let first = try Child(
            Harness.fieldlog,
            ["share", "--walk", "latest", "--state-dir", state, "--timeout", "8"] + shareArguments(port: port),
            in: directory, environment: environment)
        defer { first.reap() }
        var hostile = try await HostileMQTTBroker.start(port: Int(port), attack: .hugePacket(body: 250_000_000))
        let peak = try await watchResident(first, seconds: 12)
        let outcome = await first.wait(timeout: 20)
        #expect(peak < Self.residentBound, "peak resident \(peak >> 20) MiB")
        #expect(
            outcome.stdout.contains("the broker sent a packet larger than the ")
                && outcome.stdout.contains(" MiB fieldlog allows; disconnected)"), "\(outcome.stdout) \(outcome.stderr)"
        )
        // Back off, growing: a few connections in 8 s (one, on a machine slow to start it), not a hot loop; the
        // packet was never read.
        #expect((1...6).contains(hostile.connections), "\(hostile.connections) connections")
        #expect(hostile.attackBytes < 64 << 20, "\(hostile.attackBytes >> 20) MiB of it read")
        await hostile.stop()

        // A second run: a few seconds of the attack, then Mosquitto on the same port.
        let second = try Child(
            Harness.fieldlog,
            ["share", "--walk", "latest", "--state-dir", state, "--timeout", "90"] + shareArguments(port: port),
            in: directory, environment: environment)
        defer { second.reap() }
        hostile = try await HostileMQTTBroker.start(port: Int(port), attack: .hugePacket(body: 250_000_000))
        let attacked = hostile
        #expect(await waitUntil(timeout: 60) { attacked.connections >= 1 || !second.isRunning })
        let secondPeak = try await watchResident(second, seconds: 3)
        await hostile.stop()
        let broker = try MosquittoBroker(in: directory, port: port)
        try await broker.start()
        let subscriber = try await MosquittoSubscriber(broker: broker, in: directory)
        let done = await second.wait(timeout: 120)
        #expect(
            done.status == 0 && done.stdout.contains("\(expected) of \(expected) messages acknowledged"),
            "\(done.stdout) \(done.stderr)")
        #expect(subscriber.messages.count >= expected)
        #expect(secondPeak < Self.residentBound, "peak resident \(secondPeak >> 20) MiB")
        await broker.stop()
    }

    /// QoS 2 PUBLISHes of 100 KB, never released, as fast as the recorder reads them: it drops the broker at the
    /// first, frees what libmosquitto kept of it, says so in its status, and comes back with a growing backoff;
    /// with Mosquitto in the broker's place, sharing goes on to the walk's end.
    @Test func aFloodOfUnreleasedQoS2MessagesIsCutOffAndSharingGoesOn() async throws {
        let port = Harness.freePort()
        let capture = try SharingHarness.walkCapture(seconds: 900, in: directory)
        // About 25 s of replay: the walk goes on through the attack and after it.
        let gpsd = try await GPSFake(capture: capture, delay: 0.025, in: directory)
        let recorder = try Child(
            Harness.fieldlog, ["run", "--gpsd", gpsd.address, "--state-dir", state] + shareArguments(port: port),
            in: directory, environment: environment)
        defer { recorder.reap() }
        // After the children (which would inherit its listening socket).
        let hostile = try await HostileMQTTBroker.start(port: Int(port), attack: .qos2Flood(payload: 100_000))
        // Watched for 10 s from the first connection (sharing's process starts beside the recorder), with the
        // share status read as it goes.
        var peak = 0
        var said = Set<String>()
        #expect(await waitUntil { hostile.connections > 0 })
        // The process that shares, which the recorder started: what the broker can grow is its.
        let sharing = try #require(StatusFile.read(directory: state)?.helpers?.first { $0.name == "live-share" }?.pid)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && recorder.isRunning {
            peak = max(peak, try await watchResident(pid: sharing, seconds: 0.5) { processExists(sharing) })
            if let error = ShareStatusFile.read(directory: state)?.destinations.first?.error { said.insert(error) }
        }
        #expect(recorder.isRunning)
        #expect(peak < Self.residentBound, "peak resident \(peak >> 20) MiB")
        #expect(
            said.contains("the broker sent a QoS 2 message, though fieldlog subscribes to nothing; disconnected"),
            "\(said)")
        #expect((2...7).contains(hostile.connections), "\(hostile.connections) connections in 10 s")
        await hostile.stop()

        let broker = try MosquittoBroker(in: directory, port: port)
        try await broker.start()
        let subscriber = try await MosquittoSubscriber(broker: broker, in: directory)
        await gpsd.wait()
        // Everything acknowledged, by one broker or the other, and the last of it by Mosquitto.
        let finalDeadline = Date().addingTimeInterval(90)
        var expected = 0
        while Date() < finalDeadline {
            expected = try SharingHarness.expected(state: state).count
            if let cursor = SharingHarness.cursor(state: state), cursor.acknowledged >= expected,
                cursor.walk == (try JournalStore(directory: state).walkIDs().last)
            {
                break
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(SharingHarness.cursor(state: state)?.acknowledged == expected, "\(expected) expected")
        #expect(subscriber.messages.count > 0)
        #expect(
            try SharingHarness.expected(state: state).last.map { last in
                subscriber.messages.contains { SharingHarness.MessageKey($0.json) == last }
            } ?? false, "the walk's last message went to Mosquitto")
        recorder.signal(SIGTERM)
        #expect(await recorder.wait(timeout: 20).status == 0)
        await broker.stop()
    }
}
