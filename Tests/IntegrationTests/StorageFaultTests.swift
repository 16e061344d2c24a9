import FieldLogTestSupport
import Foundation
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

/// The recorder on storage that fails under it, against a real gpsd: a full disk and I/O errors injected
/// into fieldlog's own write(2) and fsync(2) with libfiu (switched on and off in the running process),
/// and the state directory removed while recording. Each run is compared with a run of the same walk on
/// healthy storage: every fix must be in the journal, once, in order.
@Suite(
    .serialized,
    .enabled(if: Harness.gpsfakeAvailable, "needs gpsd and gpsfake (apt: gpsd gpsd-clients)"),
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/fiu-run"), "needs libfiu (apt: fiu-utils)"))
struct StorageFaultTests {
    let directory = Harness.temporaryDirectory()

    /// A 10-minute walk with bends: 600 fixes, 9 milestones.
    func walkCapture() throws -> String {
        var walk = SyntheticWalk()
        walk.add([.walk(seconds: 300, speed: 1.4, turn: 0.03), .walk(seconds: 300, speed: 1.4, turn: -0.05)])
        let capture = directory + "/walk.nmea"
        try walk.write(to: capture)
        return capture
    }

    /// The walk recorded on healthy storage.
    func control(_ capture: String) async throws -> WalkLog {
        let state = directory + "/control"
        let gpsd = try await GPSFake(capture: capture, in: directory)
        let outcome = try await fieldlog(
            ["run", "--once", "--gpsd", gpsd.address, "--state-dir", state], in: directory)
        await gpsd.wait()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        return try onlyWalk(in: state)
    }

    func onlyWalk(in state: String) throws -> WalkLog {
        let store = JournalStore(directory: state)
        let ids = try store.walkIDs()
        try #require(ids.count == 1, "\(ids)")
        return try store.read(ids[0])
    }

    /// Runs the walk under `fiu-run`, with `faults` switched on (fiu-ctrl) once the walk's journal exists,
    /// that is once gpsd is connected (libgps writes to its socket only then), and off `seconds` later.
    /// With `photos`, milestones are looked up in demo/photos (far from this walk: "none nearby").
    func record(
        _ capture: String, state: String, faults: [String], seconds: Double, photos: Bool = false,
        whileFailing: (() async throws -> Void)? = nil
    ) async throws -> Outcome {
        let gpsd = try await GPSFake(capture: capture, delay: 0.01, in: directory)
        var arguments = ["-x", Harness.fieldlog, "run", "--once", "--gpsd", gpsd.address, "--state-dir", state]
        if photos {
            arguments += ["--photos-dir", Harness.repository + "/demo/photos", "--cache-dir", state + "-cache"]
        }
        let recorder = try Child("/usr/bin/fiu-run", arguments, in: directory)
        var switchedOn: Date?
        var switchedOff = false
        while recorder.isRunning && !switchedOff {
            if switchedOn == nil, (try? JournalStore(directory: state).walkIDs().isEmpty) == false {
                try await control(recorder, faults.map { "enable_random \($0)" })
                switchedOn = Date()
                try await whileFailing?()
            }
            if let on = switchedOn, Date().timeIntervalSince(on) > seconds {
                try await control(recorder, faults.map { "disable \($0.split(separator: ",")[0])" })
                switchedOff = true
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let outcome = await recorder.wait(timeout: 120)
        await gpsd.wait()
        #expect(switchedOff, "the replay ended before the faults were switched off")
        return outcome
    }

    private func control(_ recorder: Child, _ commands: [String]) async throws {
        for command in commands {
            let control = try Child("/usr/bin/fiu-ctrl", ["-c", command, String(recorder.pid)], in: directory)
            #expect(await control.wait(timeout: 10).status == 0)
        }
    }

    /// Every fix the healthy run recorded from the faulty run's first fix on is there, once, in order; the
    /// milestones are numbered without gaps or repeats. (Under load fieldlog, started through fiu-run, may
    /// connect to gpsfake a second into its replay, 50 epochs at this pace: the start may differ by a minute
    /// of the walk's ten.)
    func expectNothingLost(_ log: WalkLog, against control: WalkLog, _ comment: Comment) throws {
        #expect(log.damagedLines.isEmpty, comment)
        let first = try #require(log.points.first?.fix.time)
        let start = try #require(control.points.first?.fix.time)
        #expect(abs(first - start) < 60, "\(comment): the recordings started \(first - start) s apart")
        // Either run may have connected late: compare from the later start on.
        let from = max(first, start)
        let expected = control.points.map(\.fix).filter { $0.time >= from }
        let recorded = log.points.map(\.fix).filter { $0.time >= from }
        #expect(recorded == expected, "\(comment): \(recorded.count) fixes, \(expected.count) on healthy storage")
        #expect(log.milestones.map(\.index) == Array(0..<log.milestones.count), comment)
        #expect(abs(log.milestones.count - control.milestones.count) <= 1, comment)
    }

    @Test func fullDiskHoldsEveryRecordAndWritesItWhenSpaceReturns() async throws {
        let capture = try walkCapture()
        let healthy = try await control(capture)
        let state = directory + "/full"
        // Every write fails with ENOSPC for 4 s of a 12 s replay.
        let outcome = try await record(
            capture, state: state, faults: ["name=posix/io/rw/write,probability=1,failinfo=28"], seconds: 4,
            photos: true)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try onlyWalk(in: state)
        try expectNothingLost(log, against: healthy, "full disk")
        let failed = log.events.filter { $0.kind == .storageFailed }
        #expect(failed.count == 1 && failed[0].message?.contains("No space left on device") == true, "\(log.events)")
        #expect(log.events.filter { $0.kind == .storageRecovered }.count == 1)
        // Milestones reached while the disk was full were looked up all the same; their outcomes were held too.
        #expect(log.pendingMilestones.isEmpty, "\(log.pendingMilestones.map(\.index))")
    }

    /// A star appended by `fieldlog star` (whose own fsync works) after the recorder's last good sync: the
    /// recorder's next fsync fails, it cuts its journal back to what was synced and writes its lines again,
    /// and the star must be written again with them, not lost.
    @Test func aStarSurvivesTheRecordersFailedFsync() async throws {
        let capture = try walkCapture()
        let state = directory + "/star"
        let outcome = try await record(
            capture, state: state, faults: ["name=posix/io/sync/fsync,probability=1,failinfo=5"], seconds: 7,
            whileFailing: {
                let starred = try await fieldlog(["star", "--state-dir", state, "0"], in: directory)
                #expect(starred.status == 0, "\(starred.stderr)")
            })
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try onlyWalk(in: state)
        #expect(log.events.contains { $0.kind == .storageFailed && $0.message?.contains("Input/output error") == true })
        #expect(log.starred == [0], "the star was lost")
        #expect(log.damagedLines.isEmpty)
    }

    @Test func ioErrorsOnWriteAndFsyncLoseNothing() async throws {
        let capture = try walkCapture()
        let healthy = try await control(capture)
        let state = directory + "/eio"
        // A third of writes and of fsyncs fail with EIO for 4 s.
        let outcome = try await record(
            capture, state: state,
            faults: [
                "name=posix/io/rw/write,probability=0.3,failinfo=5",
                "name=posix/io/sync/fsync,probability=0.3,failinfo=5",
            ], seconds: 4)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try onlyWalk(in: state)
        try expectNothingLost(log, against: healthy, "EIO")
        #expect(log.events.contains { $0.kind == .storageFailed && $0.message?.contains("Input/output error") == true })
    }

    /// libfiu fails every write(2), pipes and sockets too, which a real disk never does. The recorder woke
    /// its signal-waiting thread at exit with a one-byte write: lost, and the process never ended (CI hung
    /// in reliability/storage.py's EIO trial). Ended with shutdown(2) now, it exits when the replay does.
    @Test func aRecorderWhoseEveryWriteFailsStillEndsWithTheReplay() async throws {
        let capture = try walkCapture()
        let state = directory + "/every-write-fails"
        let gpsd = try await GPSFake(capture: capture, delay: 0.01, in: directory)
        let recorder = try Child(
            "/usr/bin/fiu-run",
            [
                "-x", "-c", "enable name=posix/io/rw/write,failinfo=5", Harness.fieldlog, "run", "--once",
                "--gpsd", gpsd.address, "--state-dir", state,
            ],
            in: directory)
        await gpsd.wait()
        let outcome = await recorder.wait(timeout: 30)
        #expect(
            outcome.status == 0, "exit \(outcome.status) (137: killed 30 s after the replay ended): \(outcome.stderr)")
        #expect(outcome.stderr.contains("storage still failing at exit"), "\(outcome.stderr)")
    }

    @Test func stateDirectoryRemovedWhileRecordingIsWrittenAnew() async throws {
        let capture = try walkCapture()
        let healthy = try await control(capture)
        let state = directory + "/removed"
        let gpsd = try await GPSFake(capture: capture, delay: 0.01, in: directory)
        let recorder = try Child(
            Harness.fieldlog, ["run", "--once", "--gpsd", gpsd.address, "--state-dir", state], in: directory)
        var removed = false
        while recorder.isRunning {
            if !removed,
                let log = try? JournalStore(directory: state).walkIDs().first.map({
                    try JournalStore(directory: state).read($0)
                }),
                log.milestones.count >= 3
            {
                try FileManager.default.removeItem(atPath: state)
                removed = true
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        await gpsd.wait()
        #expect(removed)
        let outcome = recorder.reap()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        try expectNothingLost(try onlyWalk(in: state), against: healthy, "directory removed")
    }
}
