import FieldLogTestSupport
import Foundation
import Logging
import Recording
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

/// fieldlog against a real gpsd fed by gpsfake: real captures and long generated walks.
@Suite(.serialized, .enabled(if: Harness.gpsfakeAvailable, "needs gpsd and gpsfake (apt: gpsd gpsd-clients)"))
struct ReplayTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }

    /// Replays `capture` once through a private gpsd and records it with `fieldlog run --once`.
    func record(_ capture: String, extra: [String] = [], delay: Double = 0.002) async throws -> Outcome {
        let gpsd = try await GPSFake(capture: capture, delay: delay, in: directory)
        let outcome = try await fieldlog(
            ["run", "--once", "--gpsd", gpsd.address, "--state-dir", state] + extra, in: directory)
        await gpsd.wait()
        return outcome
    }

    func walks() throws -> [WalkLog] {
        let store = JournalStore(directory: state)
        return try store.walkIDs().map { try store.read($0) }
    }

    @Test func realMotionCaptureGivesMilestonesEveryHundredMetres() async throws {
        let outcome = try await record(Harness.capture("bundg_zeus_9"))
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let logs = try walks()
        #expect(logs.count == 1)
        let log = try #require(logs.first)
        // gpsd's own expected output (bundg_zeus_9.log.chk) puts the boat about 430 m along its track.
        #expect(log.distance > 390 && log.distance < 450, "distance \(log.distance)")
        #expect(log.milestones.map(\.index) == [0, 1, 2, 3, 4])
        #expect(log.damagedLines.isEmpty)
        for (milestone, next) in zip(log.milestones, log.milestones.dropFirst()) {
            #expect(next.distance >= Double(next.index) * 100)
            #expect(next.time > milestone.time)
        }
        // One fix per epoch: times strictly increase.
        let times = log.points.map(\.fix.time)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
    }

    /// status.json after a replay, and `fieldlog status` reading it beside the journal.
    @Test func statusShowsTheWalkAndTheAgeOfItsLastFix() async throws {
        let outcome = try await record(Harness.capture("bundg_zeus_9"))
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try #require(try walks().last)
        let written = try #require(StatusFile.read(directory: state))
        // Milestones and the end of the session are written at once, whatever the 30 s interval.
        #expect(written.gpsd == .stopped)
        #expect(written.recording.walkID == log.id && written.recording.milestones == log.milestones.count)
        let stopped = try await fieldlog(["status", "--state-dir", state], in: directory)
        #expect(stopped.stdout.contains("walk       \(log.id)"), "\(stopped.stdout)")
        #expect(stopped.stdout.contains("recorder   not running"), "\(stopped.stdout)")

        // A status.json written 12 s ago, when the last fix it knew of was 10 s older than the journal's last:
        // that fix arrived 2 s ago. (This test's own pid stands in for a running recorder.)
        let lastFix = try #require(log.points.last).fix.time
        var running = written
        running.pid = getpid()
        running.gpsd = .connected
        running.recording.lastFixTime = lastFix - 10
        running.lastFixWall = Date().timeIntervalSince1970 - 12
        try JSONEncoder().encode(running).write(to: URL(fileURLWithPath: state + "/" + StatusFile.fileName))
        let asked = Date()
        let live = try await fieldlog(["status", "--state-dir", state], in: directory)
        #expect(live.status == 0, "\(live.stderr)")
        // 2 s, plus however long `fieldlog status` took to start and answer (seconds under emulation), measured.
        let answered = 2 + Int(Date().timeIntervalSince(asked).rounded(.up))
        #expect((2...answered).contains { live.stdout.contains(", \($0) s ago") }, "\(live.stdout)")
        #expect(live.stdout.contains("recorder   running (pid \(getpid()))"), "\(live.stdout)")
        #expect(live.stdout.contains("gpsd       connected"), "\(live.stdout)")
    }

    @Test(arguments: [
        "bu303-moving", "haicom-305N", "humminbird-M37", "gp-320fw-2019-04-07-coldboot",
        "trimble-lasseniq-bin2d", "ublox-neo-m8n",
    ])
    func everyCaptureRecordsCleanly(capture: String) async throws {
        let outcome = try await record(Harness.capture(capture))
        #expect(outcome.status == 0, "\(outcome.stderr)")
        for log in try walks() {
            #expect(log.damagedLines.isEmpty)
            #expect(log.milestones.first?.index == 0)
            let distances = log.points.map(\.distance)
            #expect(zip(distances, distances.dropFirst()).allSatisfy { $0 <= $1 }, "distance went backwards")
            let times = log.points.map(\.fix.time)
            #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "time went backwards in the track")
            #expect(log.points.allSatisfy { ($0.fix.horizontalError ?? 0) <= 50 })
            // Short captures: nobody walks 5 km in a minute.
            #expect(log.distance < 2000, "\(capture): \(log.distance) m")
        }
    }

    @Test func captureWithoutFixRecordsNoWalk() async throws {
        let outcome = try await record(Harness.capture("bu303-nofix"))
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try walks().isEmpty)
    }

    @Test func receiverStandingStillAddsNoDistance() async throws {
        var walk = SyntheticWalk()
        walk.add([.stand(seconds: 600, jitter: 4), .walk(seconds: 10, speed: 0)])
        let capture = directory + "/standing.nmea"
        try walk.write(to: capture)
        let outcome = try await record(capture, delay: 0.001)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try #require(try walks().first)
        #expect(log.points.count > 500)
        #expect(log.distance <= 10)
        #expect(log.milestones.count == 1)
    }

    /// The distance goals through a real gpsd: switchbacks from a receiver that measures its speed, and a
    /// curvy path from one that does not (empty RMC speed, so gpsd derives a speed and sends no track).
    @Test(arguments: [(PathShape.switchbacks, true, 0.03), (.curvy, false, 0.06)])
    func realisticReceiverThroughGPSDMeasuresWhatWasWalked(
        shape: PathShape, measuresSpeed: Bool, tolerance: Double
    )
        async throws
    {
        let walk = shape.walk(receiver: .realistic(wander: 5, reportedError: 2, measuresSpeed: measuresSpeed), seed: 4)
        let capture = directory + "/\(shape.rawValue).nmea"
        try walk.write(to: capture)
        let outcome = try await record(capture, delay: 0.001)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try #require(try walks().first)
        #expect(log.points.count >= walk.fixes.count - 2, "\(log.points.count) of \(walk.fixes.count) epochs")
        // gpsd's fixes as the journal has them: Doppler speed with a course, or a derived speed without.
        #expect(log.points.dropFirst().allSatisfy { $0.fix.speed != nil && ($0.fix.track != nil) == measuresSpeed })
        let eph = try #require(log.points.first?.fix.horizontalError)
        #expect(abs(eph - walk.fixes[0].horizontalError!) < 0.01, "gpsd's eph is 19 x HDOP: \(eph) m")
        let error = abs(log.distance - walk.trueDistance) / walk.trueDistance
        #expect(error < tolerance, "measured \(log.distance) m, walked \(walk.trueDistance) m")
        #expect(abs(log.milestones.count - (Int(walk.trueDistance / 100) + 1)) <= 1)
    }

    @Test func longWalkMeasuresWhatWasWalked() async throws {
        var walk = SyntheticWalk()
        // Two hours at 1.4 m/s with bends, a 10-minute stop, a tunnel and stray fixes.
        walk.add([
            .walk(seconds: 1800, speed: 1.4, turn: 0.05),
            .stand(seconds: 600, jitter: 4),
            .walk(seconds: 600, speed: 1.4, turn: -0.2),
            .outlier(metres: 900),
            .walk(seconds: 1200, speed: 1.4),
            .noFix(seconds: 90, speed: 1.4),
            .walk(seconds: 1800, speed: 1.4, turn: 0.1),
            .outlier(metres: 3000),
            .walk(seconds: 1110, speed: 1.4, turn: -0.05),
        ])
        let capture = directory + "/long-walk.nmea"
        try walk.write(to: capture)
        let outcome = try await record(capture, delay: 0.001)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try #require(try walks().first)
        let error = abs(log.distance - walk.trueDistance) / walk.trueDistance
        #expect(error < 0.02, "measured \(log.distance) m, walked \(walk.trueDistance) m")
        #expect(log.milestones.count == Int(log.distance / 100) + 1)
        #expect(log.milestones.map(\.index) == Array(0..<log.milestones.count))
        // The tunnel is the only break longer than --gap.
        #expect(log.segments.count == 1)
        #expect(Set(log.points.map(\.segment)) == [0, 1])
        // Standing still for 10 minutes (from 30:00 to 40:00) adds at most 10 m to what was walked before.
        let afterStop = try #require(log.points.last { $0.fix.time <= walk.startTime + 2400 }).distance
        #expect(
            afterStop <= walk.distanceAfterStretch[0] + 10,
            "\(afterStop) m after walking \(walk.distanceAfterStretch[0]) m")
    }
}

/// The recorder as a long-running daemon: gpsd coming and going, signals, and a crash.
@Suite(.serialized, .enabled(if: Harness.gpsfakeAvailable, "needs gpsd and gpsfake (apt: gpsd gpsd-clients)"))
struct DaemonTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }

    func walks() throws -> [WalkLog] {
        let store = JournalStore(directory: state)
        return try store.walkIDs().map { try store.read($0) }
    }

    /// Writes the stretches as a capture file, continuing `walk`'s clock and position.
    func capture(_ walk: inout SyntheticWalk, _ name: String, _ stretches: [SyntheticWalk.Stretch]) throws -> String {
        walk.clear()
        walk.add(stretches)
        let path = directory + "/" + name + ".nmea"
        try walk.write(to: path)
        return path
    }

    /// Polls until `condition` holds on the journal, for at most `timeout` seconds.
    func waitFor(timeout: Double = 120, _ condition: ([WalkLog]) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let logs = try? walks(), condition(logs) { return true }
            try? await Task.sleep(for: .milliseconds(200))
        }
        return false
    }

    /// The reader hands events to the recorder on its own thread; when recording fails (a full disk), it stops
    /// reading and `run` rethrows, instead of reconnecting and dropping fixes.
    @Test func readerStopsAndRethrowsWhenItsHandlerFails() async throws {
        struct DiskFull: Error {}
        let gpsd = try await GPSFake(capture: Harness.capture("bundg_zeus_9"), delay: 0.05, in: directory)
        let reader = GPSDReader(
            configuration: .init(host: "127.0.0.1", port: String(gpsd.port)), logger: quietLogger)
        let heard = EventLog()
        await #expect(throws: DiskFull.self) {
            try await reader.run { event in
                if case .fix = event, heard.add(event) == 3 { throw DiskFull() }
                if case .connected = event { _ = heard.add(event) }
            }
        }
        let events = heard.events
        #expect(events.count == 4 && events.first == .connected, "\(events)")
        #expect(events.dropFirst().allSatisfy { if case .fix = $0 { true } else { false } })
    }

    @Test func survivesGPSDAbsentAndRestartingThenStopsCleanlyOnSIGTERM() async throws {
        let port = Harness.freePort()
        // fieldlog starts first: gpsd is not there yet.
        let recorder = try Child(
            Harness.fieldlog, ["run", "--gpsd", "127.0.0.1:\(port)", "--state-dir", state], in: directory)
        try await Task.sleep(for: .seconds(1.5))
        // A straight walk at constant speed, so the true distance between any two fixes is known.
        var walk = SyntheticWalk()
        let first = try capture(&walk, "first", [.walk(seconds: 300, speed: 1.4)])
        try await GPSFake(capture: first, port: port, delay: 0.01, in: directory).wait()
        // gpsd is gone; a minute of walking later (GPS time) it is back.
        let second = try capture(&walk, "second", [.noFix(seconds: 60, speed: 1.4), .walk(seconds: 300, speed: 1.4)])
        try await GPSFake(capture: second, port: port, delay: 0.01, in: directory).wait()
        #expect(await waitFor { $0.first?.points.last?.fix.time == walk.time })
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 15)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let logs = try walks()
        #expect(logs.count == 1)
        let log = try #require(logs.first)
        #expect(log.isOpen, "a stopped session leaves the walk open for the next one")
        #expect(log.segments.count == 1)
        let firstFix = try #require(log.points.first).fix.time
        let walked = (walk.time - firstFix) * 1.4
        #expect(walked > 600, "fieldlog missed most of the first replay")
        #expect(abs(log.distance - walked) / walked < 0.02, "\(log.distance) of \(walked)")
        let kinds = log.events.map(\.kind)
        #expect(kinds.filter { $0 == .gpsdConnected }.count == 2)
        #expect(kinds.contains(.gpsdLost))
        #expect(kinds.last == .sessionEnd)
        #expect(outcome.stderr.contains("unavailable"))
    }

    @Test func killDuringReplayLosesNothingSyncedAndCountsNothingTwice() async throws {
        var walk = SyntheticWalk()
        let first = try capture(&walk, "first", [.walk(seconds: 800, speed: 1.4, turn: 0.02)])
        let gpsd = try await GPSFake(capture: first, delay: 0.002, in: directory)
        let recorder = try Child(
            Harness.fieldlog, ["run", "--gpsd", gpsd.address, "--state-dir", state], in: directory)
        #expect(await waitFor { ($0.first?.milestones.count ?? 0) >= 5 })
        recorder.signal(SIGKILL)
        await recorder.wait(timeout: 5)
        await gpsd.wait()
        let store = JournalStore(directory: state)
        let path = store.path(for: try #require(try store.walkIDs().first))
        let beforeRestart = try #require(FileManager.default.contents(atPath: path))
        let killedAt = try #require(try walks().first)
        // A power cut can also leave half a line.
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"dist":12"#.utf8))
        handle.closeFile()

        // A minute later (GPS time) the walker is still walking when fieldlog comes back.
        let second = try capture(
            &walk, "second", [.noFix(seconds: 60, speed: 1.4), .walk(seconds: 900, speed: 1.4, turn: -0.02)])
        let restartedGPSD = try await GPSFake(capture: second, delay: 0.002, in: directory)
        let outcome = try await fieldlog(
            ["run", "--once", "--gpsd", restartedGPSD.address, "--state-dir", state], in: directory)
        await restartedGPSD.wait()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let logs = try walks()
        #expect(logs.count == 1, "the walk is resumed, not restarted")
        let log = try #require(logs.first)
        #expect(log.damagedLines.isEmpty, "torn line repaired")
        // Everything journaled before the kill is still there, byte for byte.
        let after = try #require(FileManager.default.contents(atPath: path))
        #expect(after.prefix(beforeRestart.count) == beforeRestart)
        #expect(log.points.prefix(killedAt.points.count).elementsEqual(killedAt.points))
        #expect(log.milestones.map(\.index) == Array(0..<log.milestones.count), "no milestone twice")
        #expect(log.events.contains { $0.kind == .resumed })
        // What was walked while fieldlog was down is bridged: the distance is the walk's.
        #expect(
            abs(log.distance - walk.trueDistance) / walk.trueDistance < 0.02, "\(log.distance) of \(walk.trueDistance)")
        // One milestone for every hundred metres reached at a recorded fix; a bridged gap crossing several
        // hundreds gives one, since nobody knows where the walker was in between.
        let hundreds = Set(log.points.map { Int($0.distance / 100) })
        #expect(log.milestones.count == hundreds.count)
    }
}

/// Events a reader's handler saw, from its thread.
private final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var fixes = 0
    private var all: [GPSEvent] = []

    /// Returns how many fixes it has seen.
    func add(_ event: GPSEvent) -> Int {
        lock.withLock {
            all.append(event)
            if case .fix = event { fixes += 1 }
            return fixes
        }
    }

    var events: [GPSEvent] { lock.withLock { all } }
}
