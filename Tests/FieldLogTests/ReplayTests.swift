import FieldLog
import Foundation
import Testing

/// fieldlog against a real gpsd fed by gpsfake: real captures and long generated walks.
@Suite(.serialized, .enabled(if: Harness.gpsfakeAvailable, "needs gpsd and gpsfake (apt: gpsd gpsd-clients)"))
struct ReplayTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }

    /// Replays `capture` once through a private gpsd and records it with `fieldlog run --once`.
    func record(_ capture: String, extra: [String] = [], delay: Double = 0.002) throws -> Outcome {
        let gpsd = try GPSFake(capture: capture, delay: delay, in: directory)
        let outcome = try fieldlog(["run", "--once", "--gpsd", gpsd.address, "--state-dir", state] + extra, in: directory)
        gpsd.wait()
        return outcome
    }

    func walks() throws -> [WalkLog] {
        let store = JournalStore(directory: state)
        return try store.walkIDs().map { try store.read($0) }
    }

    @Test func realMotionCaptureGivesMilestonesEveryHundredMetres() throws {
        let outcome = try record(Harness.capture("bundg_zeus_9"))
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

    @Test(arguments: [
        "bu303-moving", "haicom-305N", "humminbird-M37", "gp-320fw-2019-04-07-coldboot",
        "trimble-lasseniq-bin2d", "ublox-neo-m8n",
    ])
    func everyCaptureRecordsCleanly(capture: String) throws {
        let outcome = try record(Harness.capture(capture))
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

    @Test func captureWithoutFixRecordsNoWalk() throws {
        let outcome = try record(Harness.capture("bu303-nofix"))
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try walks().isEmpty)
    }

    @Test func receiverStandingStillAddsNoDistance() throws {
        var walk = SyntheticWalk()
        walk.add([.stand(seconds: 600, jitter: 4), .walk(seconds: 10, speed: 0)])
        let capture = directory + "/standing.nmea"
        try walk.write(to: capture)
        let outcome = try record(capture, delay: 0.001)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try #require(try walks().first)
        #expect(log.points.count > 500)
        #expect(log.distance <= 10)
        #expect(log.milestones.count == 1)
    }

    @Test func longWalkMeasuresWhatWasWalked() throws {
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
        let outcome = try record(capture, delay: 0.001)
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
        #expect(afterStop <= walk.distanceAfterStretch[0] + 10, "\(afterStop) m after walking \(walk.distanceAfterStretch[0]) m")
    }
}
