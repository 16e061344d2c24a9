import FieldLogTestSupport
import Foundation
import Recording
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

// The walk's state machine fed fixes built in code: distance, milestones, filtering, segments, recovery.

private let t0 = Timestamp.parse("2026-05-18T08:00:00Z")!

/// Fixes once a second along a great circle at `speed`, each up to `noise` metres off the true spot.
/// Also returns the true positions, so tests can measure what was really walked.
private func straightWalk(
    from start: (lat: Double, lon: Double) = (47.0, 8.0), bearing: Double = 90, seconds: Int,
    speed: Double = 1.4, noise: Double = 1, eph: Double? = nil, startTime: Double = t0, seed: UInt64 = 1
) -> (fixes: [Fix], truth: [(lat: Double, lon: Double)]) {
    var random = SplitMix(seed: seed)
    var fixes: [Fix] = []
    var truth: [(lat: Double, lon: Double)] = []
    for second in 0...seconds {
        let spot = Geodesy.destination(start.lat, start.lon, bearing: bearing, distance: speed * Double(second))
        truth.append(spot)
        let noisy = Geodesy.destination(
            spot.lat, spot.lon, bearing: random.next(in: 0..<360), distance: random.next(in: 0..<1) * noise)
        fixes.append(
            Fix(time: startTime + Double(second), latitude: noisy.lat, longitude: noisy.lon, horizontalError: eph))
    }
    return (fixes, truth)
}

/// Fixes once a second at one spot, each up to `jitter` metres off it.
private func standing(
    at spot: (lat: Double, lon: Double), seconds: Int, jitter: Double, eph: Double?, startTime: Double, seed: UInt64
) -> [Fix] {
    var random = SplitMix(seed: seed)
    return (0..<seconds).map { second in
        let noisy = Geodesy.destination(
            spot.lat, spot.lon, bearing: random.next(in: 0..<360), distance: random.next(in: 0..<1) * jitter)
        return Fix(time: startTime + Double(second), latitude: noisy.lat, longitude: noisy.lon, horizontalError: eph)
    }
}

private func pathLength(_ points: [(lat: Double, lon: Double)]) -> Double {
    zip(points, points.dropFirst()).reduce(0) { $0 + Geodesy.distance($1.0.lat, $1.0.lon, $1.1.lat, $1.1.lon) }
}

private func feed(_ tracker: inout WalkTracker, _ fixes: some Sequence<Fix>) -> [WalkEvent] {
    fixes.flatMap { tracker.ingest($0) }
}

extension WalkEvent {
    fileprivate var milestone: Milestone? {
        if case let .milestone(milestone) = self { return milestone }
        return nil
    }

    fileprivate var point: TrackPoint? {
        if case let .point(point) = self { return point }
        return nil
    }

    fileprivate var segmentBreak: SegmentBreak? {
        if case let .segment(segment) = self { return segment }
        return nil
    }

    fileprivate var isRejection: Bool {
        if case .rejected = self { return true }
        return false
    }
}

private func relativeError(_ measured: Double, _ truth: Double) -> Double {
    abs(measured - truth) / truth
}

// MARK: - Distance and milestones

@Test(arguments: [3.0, 8.0, nil] as [Double?])
func straightKilometreGivesDistanceAndElevenMilestones(eph: Double?) {
    // 730 s at 1.4 m/s: just over 1 km, so the 1000 m milestone is reached even though the last metres
    // (below one counting step) are not counted yet.
    let walk = straightWalk(seconds: 730, eph: eph)
    let truth = pathLength(walk.truth)
    #expect(truth > 1021 && truth < 1023)
    let limits = WalkLimits()
    let step = max(limits.minStep, eph ?? limits.unknownHorizontalError)
    var tracker = WalkTracker(limits: limits)
    let events = feed(&tracker, walk.fixes)

    #expect(!events.contains { $0.isRejection })
    #expect(relativeError(tracker.distance, truth) < 0.02, "measured \(tracker.distance) m of \(truth) m")
    let milestones = events.compactMap(\.milestone)
    #expect(milestones.map(\.index) == Array(0...10))
    #expect(tracker.milestoneCount == 11)
    for milestone in milestones {
        #expect(milestone.distance >= Double(milestone.index) * 100, "milestone \(milestone.index)")
        // Placed at the first point past the multiple: one counting step after it at most (plus noise).
        #expect(milestone.distance < Double(milestone.index) * 100 + step + 3, "milestone \(milestone.index)")
    }
    #expect(zip(milestones, milestones.dropFirst()).allSatisfy { $0.time < $1.time })
    // A milestone sits on the point that reached it.
    let points = events.compactMap(\.point)
    for milestone in milestones {
        let point = points.first { $0.fix.time == milestone.time }
        #expect(point?.distance == milestone.distance)
        #expect(point?.fix.latitude == milestone.latitude && point?.fix.longitude == milestone.longitude)
    }
    // Distance along the track never goes down, and every fix became a point.
    #expect(points.count == walk.fixes.count)
    #expect(zip(points, points.dropFirst()).allSatisfy { $0.distance <= $1.distance })
}

/// Receivers standing still: jitter up to 4 m around the spot, with an honest eph, a tiny one, or none at all.
private let standingReceivers: [(jitter: Double, eph: Double?)] = [(4, 10), (4, 12), (4, nil), (2, nil), (1, 3)]

@Test(arguments: standingReceivers)
func standingStillTenMinutesAddsNothing(jitter: Double, eph: Double?) {
    // Twenty different ten minutes, so a lucky draw cannot hide jitter being walked.
    var worst = 0.0
    var extraMilestones = 0
    for seed in 1...20 as ClosedRange<UInt64> {
        var tracker = WalkTracker(limits: WalkLimits())
        let fixes = standing(at: (47, 8), seconds: 600, jitter: jitter, eph: eph, startTime: t0, seed: seed)
        let events = feed(&tracker, fixes)
        worst = max(worst, tracker.distance)
        extraMilestones += events.compactMap(\.milestone).count - 1
        #expect(events.compactMap(\.point).count == 600)
    }
    #expect(worst <= 10, "standing walked up to \(worst) m")
    #expect(extraMilestones == 0)
}

@Test(arguments: standingReceivers)
func standingStillTenMinutesAfterWalkingAddsAtMostTenMetres(jitter: Double, eph: Double?) {
    var worst = -Double.infinity
    var extraMilestones = 0
    for seed in 1...20 as ClosedRange<UInt64> {
        // Walk 150 m, then stand for ten minutes while the receiver wanders around the spot.
        let walk = straightWalk(seconds: 107, eph: eph, seed: seed)
        let walked = pathLength(walk.truth)
        var tracker = WalkTracker(limits: WalkLimits())
        let walking = feed(&tracker, walk.fixes)
        #expect(walking.compactMap(\.milestone).map(\.index) == [0, 1])
        // What the tracker has not counted yet (less than a step) may still be counted while standing, but
        // nothing beyond what was walked plus 10 m.
        let stand = standing(
            at: walk.truth.last!, seconds: 600, jitter: jitter, eph: eph, startTime: walk.fixes.last!.time + 1,
            seed: seed + 100)
        let events = feed(&tracker, stand)
        worst = max(worst, tracker.distance - walked)
        extraMilestones += events.compactMap(\.milestone).count
        #expect(events.compactMap(\.point).count == 600)
    }
    #expect(worst <= 10, "up to \(worst) m more than walked")
    #expect(extraMilestones == 0)
}

@Test func antimeridianCrossingMeasuresTheShortWay() {
    #expect(abs(Geodesy.distance(0, 179.999, 0, -179.999) - 222.4) < 0.5)
    // Eastwards from 179.999° E over the date line to 179.999° W (about 220 m at 10° N).
    let walk = straightWalk(from: (10, 179.999), bearing: 90, seconds: 160)
    #expect(walk.truth.first!.lon > 179.99 && walk.truth.last!.lon < -179.998)
    let truth = pathLength(walk.truth)
    var tracker = WalkTracker(limits: WalkLimits())
    let events = feed(&tracker, walk.fixes)
    #expect(!events.contains { $0.isRejection })
    #expect(events.compactMap(\.segmentBreak).isEmpty)
    #expect(relativeError(tracker.distance, truth) < 0.03, "measured \(tracker.distance) m of \(truth) m")
    #expect(events.compactMap(\.milestone).map(\.index) == [0, 1, 2])
}

@Test func walkingOverTheNorthPoleMeasuresSanely() {
    // From 89.999° N straight north: over the pole (111 m on) and down the other side, 280 m in all.
    let walk = straightWalk(from: (89.999, 10), bearing: 0, seconds: 200)
    let truth = pathLength(walk.truth)
    #expect(abs(truth - 280) < 0.5)
    var tracker = WalkTracker(limits: WalkLimits())
    let events = feed(&tracker, walk.fixes)
    #expect(!events.contains { $0.isRejection })
    #expect(relativeError(tracker.distance, truth) < 0.03, "measured \(tracker.distance) m of \(truth) m")
}

@Test func circlingCloseToThePoleMeasuresSanely() {
    // Round the pole at 89.9999° N (11 m away from it), 10° of longitude a second: longitude races
    // through ±180 every lap while the walker moves under 2 m a second. The receiver measures its speed:
    // from positions alone, a circle 22 m across is indistinguishable from standing.
    var tracker = WalkTracker(limits: WalkLimits())
    var fixes: [Fix] = []
    let speed = 2 * Double.pi * Geodesy.distance(89.9999, 0, 90, 0) / 36
    for second in 0...360 {
        let lon = (Double(second) * 10 + 180).truncatingRemainder(dividingBy: 360) - 180
        fixes.append(
            Fix(
                time: t0 + Double(second), latitude: 89.9999, longitude: lon, horizontalError: 3, speed: speed,
                track: (lon + 270).truncatingRemainder(dividingBy: 360)))
    }
    let truth = zip(fixes, fixes.dropFirst()).reduce(0) {
        $0 + Geodesy.distance($1.0.latitude, $1.0.longitude, $1.1.latitude, $1.1.longitude)
    }
    #expect(truth > 690 && truth < 700)
    let events = feed(&tracker, fixes)
    #expect(!events.contains { $0.isRejection })
    #expect(relativeError(tracker.distance, truth) < 0.03, "measured \(tracker.distance) m of \(truth) m")
}

// MARK: - Filtering

@Test func timeGoingBackwardsOrRepeatingIsRejected() {
    let walk = straightWalk(seconds: 30)
    var tracker = WalkTracker(limits: WalkLimits())
    _ = feed(&tracker, walk.fixes)
    let distance = tracker.distance
    let last = tracker.lastPoint
    let ahead = Geodesy.destination(walk.truth.last!.lat, walk.truth.last!.lon, bearing: 90, distance: 20)
    let lastTime = walk.fixes.last!.time

    for time in [lastTime, lastTime - 1, lastTime - 3600, t0 - 1] {
        let events = tracker.ingest(Fix(time: time, latitude: ahead.lat, longitude: ahead.lon))
        #expect(events.count == 1)
        guard case let .rejected(_, reason) = events.first else {
            Issue.record("fix at \(time - lastTime) s was accepted: \(events)")
            continue
        }
        #expect(reason == "time did not advance")
        #expect(tracker.distance == distance)
        #expect(tracker.lastPoint == last)
    }
    // Time moving on again is accepted and counts from where the walk was.
    let events = tracker.ingest(Fix(time: lastTime + 14, latitude: ahead.lat, longitude: ahead.lon))
    #expect(events.compactMap(\.point).count == 1)
    #expect(abs(tracker.distance - distance - 20) < 2)
}

@Test func singleOutlierIsRejectedAndLeavesDistanceAlone() {
    let walk = straightWalk(seconds: 200)
    let wildIndex = 120
    let spot = walk.truth[wildIndex]
    let away = Geodesy.destination(spot.lat, spot.lon, bearing: 200, distance: 1000)
    var withOutlier = walk.fixes
    withOutlier[wildIndex] = Fix(time: walk.fixes[wildIndex].time, latitude: away.lat, longitude: away.lon)
    var withoutOutlier = walk.fixes
    withoutOutlier.remove(at: wildIndex)

    var tracker = WalkTracker(limits: WalkLimits())
    let before = feed(&tracker, withOutlier[..<wildIndex])
    let atOutlier = tracker.ingest(withOutlier[wildIndex])
    #expect(atOutlier.count == 1)
    #expect(atOutlier.first?.isRejection == true)
    let after = feed(&tracker, withOutlier[(wildIndex + 1)...])
    #expect(!(before + after).contains { $0.isRejection })
    #expect((before + after).compactMap(\.segmentBreak).isEmpty)

    var reference = WalkTracker(limits: WalkLimits())
    _ = feed(&reference, withoutOutlier)
    #expect(tracker.distance == reference.distance)
    #expect(tracker.milestoneCount == reference.milestoneCount)
    #expect(tracker.segment == 0)
}

@Test func tenOutliersInARowAtANewPlaceRestartMeasuring() throws {
    let walk = straightWalk(seconds: 60)
    var tracker = WalkTracker(limits: WalkLimits())
    _ = feed(&tracker, walk.fixes)
    let before = tracker.distance
    let lastTime = walk.fixes.last!.time

    // The receiver (or the reference) was wrong: from now on fixes say we are 2 km away, and keep walking there.
    let far = Geodesy.destination(walk.truth.last!.lat, walk.truth.last!.lon, bearing: 0, distance: 2000)
    let there = straightWalk(from: far, bearing: 90, seconds: 40, startTime: lastTime + 1, seed: 5)
    let first = feed(&tracker, there.fixes[0..<9])
    #expect(first.count == 9)
    #expect(first.allSatisfy { $0.isRejection })
    #expect(tracker.distance == before)

    let tenth = tracker.ingest(there.fixes[9])
    #expect(tenth.first?.segmentBreak == SegmentBreak(index: 1, time: there.fixes[9].time, gap: 10))
    let point = try #require(tenth.compactMap(\.point).first)
    #expect(point.segment == 1)
    // No distance for the jump itself.
    #expect(tracker.distance == before)
    #expect(tenth.compactMap(\.milestone).isEmpty)

    // Walking on at the new place counts normally.
    let rest = feed(&tracker, there.fixes[10...])
    #expect(!rest.contains { $0.isRejection })
    let walkedThere = pathLength(Array(there.truth[9...]))
    #expect(abs(tracker.distance - before - walkedThere) < 6, "\(tracker.distance - before) m of \(walkedThere) m")
    #expect(tracker.segment == 1)
}

@Test func nineOutliersInARowDoNotRestartMeasuring() {
    let walk = straightWalk(seconds: 80)
    var tracker = WalkTracker(limits: WalkLimits())
    var events = feed(&tracker, walk.fixes[0...50])
    for index in 51...59 {
        let spot = walk.truth[index]
        let away = Geodesy.destination(spot.lat, spot.lon, bearing: 0, distance: 2000)
        events += tracker.ingest(Fix(time: walk.fixes[index].time, latitude: away.lat, longitude: away.lon))
    }
    events += feed(&tracker, walk.fixes[60...])
    #expect(events.filter { $0.isRejection }.count == 9)
    #expect(events.compactMap(\.segmentBreak).isEmpty)
    // Exactly as if those nine seconds had brought no fix at all.
    var reference = WalkTracker(limits: WalkLimits())
    _ = feed(&reference, walk.fixes[0...50] + walk.fixes[60...])
    #expect(tracker.distance == reference.distance)
    #expect(tracker.lastPoint == reference.lastPoint)
}

@Test func gapLongerThanSegmentGapBreaksSegmentAndBridgesPlausibleDistance() {
    // 100 s walking, a 60 s tunnel without fixes at the same pace, 100 s walking again.
    let walk = straightWalk(seconds: 260)
    let truth = pathLength(walk.truth)
    let fixes = Array(walk.fixes[0...100]) + Array(walk.fixes[161...])
    var tracker = WalkTracker(limits: WalkLimits())
    let before = feed(&tracker, fixes[0...100])
    #expect(before.compactMap(\.segmentBreak).isEmpty)
    let distanceBefore = tracker.distance

    let exit = tracker.ingest(walk.fixes[161])
    #expect(exit.first?.segmentBreak == SegmentBreak(index: 1, time: walk.fixes[161].time, gap: 61))
    #expect(exit.compactMap(\.point).first?.segment == 1)
    // The ~84 m walked in the tunnel (plus what was not yet counted before it) still count.
    let bridged = tracker.distance - distanceBefore
    #expect(bridged > 80 && bridged < 92, "bridged \(bridged) m")

    _ = feed(&tracker, walk.fixes[162...])
    #expect(tracker.segment == 1)
    #expect(relativeError(tracker.distance, truth) < 0.02, "measured \(tracker.distance) m of \(truth) m")
}

@Test func gapWithImplausibleJumpBreaksSegmentWithoutDistance() {
    let walk = straightWalk(seconds: 50)
    var tracker = WalkTracker(limits: WalkLimits())
    _ = feed(&tracker, walk.fixes)
    let before = tracker.distance
    // 60 s later, 20 km away: nobody walks (or cycles) that fast.
    let far = Geodesy.destination(walk.truth.last!.lat, walk.truth.last!.lon, bearing: 45, distance: 20_000)
    let events = tracker.ingest(Fix(time: walk.fixes.last!.time + 60, latitude: far.lat, longitude: far.lon))
    #expect(events.first?.segmentBreak?.index == 1)
    #expect(events.compactMap(\.point).first?.distance == before)
    #expect(tracker.distance == before)
}

@Test func horizontalErrorAboveLimitIsRejected() {
    let limits = WalkLimits()
    var tracker = WalkTracker(limits: limits)
    // Before the walk has started: a bad first fix does not start it.
    let bad = tracker.ingest(Fix(time: t0, latitude: 47, longitude: 8, horizontalError: limits.maxHorizontalError + 1))
    #expect(bad.count == 1)
    guard case let .rejected(_, reason) = bad.first else {
        Issue.record("accepted \(bad)")
        return
    }
    #expect(reason.contains("horizontal error"))
    #expect(tracker.lastPoint == nil)
    #expect(tracker.milestoneCount == 0)

    // At the limit is still fine.
    let walk = straightWalk(seconds: 100, eph: limits.maxHorizontalError, startTime: t0 + 1)
    _ = feed(&tracker, walk.fixes)
    #expect(tracker.lastPoint?.fix.time == walk.fixes.last!.time)
    let distance = tracker.distance
    let ahead = Geodesy.destination(walk.truth.last!.lat, walk.truth.last!.lon, bearing: 90, distance: 30)
    let imprecise = tracker.ingest(
        Fix(time: walk.fixes.last!.time + 20, latitude: ahead.lat, longitude: ahead.lon, horizontalError: 120))
    #expect(imprecise.count == 1 && imprecise.first?.isRejection == true)
    #expect(tracker.distance == distance)
    #expect(tracker.lastPoint?.fix.time == walk.fixes.last!.time)
}

@Test func fixesWithoutPositionAreRejected() {
    var tracker = WalkTracker(limits: WalkLimits())
    let broken = [
        Fix(time: t0, latitude: 47, longitude: 8, mode: 1),
        Fix(time: t0 + 1, latitude: .nan, longitude: 8),
        Fix(time: t0 + 2, latitude: 47, longitude: .infinity),
        Fix(time: t0 + 3, latitude: 91, longitude: 8),
        Fix(time: t0 + 4, latitude: 47, longitude: -180.5),
    ]
    for fix in broken {
        // (Compared by reason: a NaN fix is not equal to itself.)
        let events = tracker.ingest(fix)
        #expect(events.count == 1)
        guard case let .rejected(_, reason) = events.first else {
            Issue.record("accepted \(fix): \(events)")
            continue
        }
        #expect(reason == "no position")
    }
    #expect(tracker.lastPoint == nil)
}

@Test func bridgedGapOverSeveralMultiplesGivesOneMilestoneAndTheNextAtTheNextMultiple() throws {
    var tracker = WalkTracker(limits: WalkLimits())
    // 40 s on foot (56 m), then 100 s on a bus at 5 m/s without a fix (500 m), then on foot again.
    let onFoot = straightWalk(seconds: 40)
    _ = feed(&tracker, onFoot.fixes)
    #expect(tracker.milestoneCount == 1)
    let busStop = Geodesy.destination(onFoot.truth.last!.lat, onFoot.truth.last!.lon, bearing: 90, distance: 500)
    let afterBus = straightWalk(from: busStop, seconds: 80, startTime: onFoot.fixes.last!.time + 100, seed: 3)

    let arrival = tracker.ingest(afterBus.fixes[0])
    #expect(arrival.first?.segmentBreak != nil)
    let milestones = arrival.compactMap(\.milestone)
    #expect(milestones.count == 1)
    let jumped = try #require(milestones.first)
    #expect(jumped.index == 1)
    #expect(jumped.distance > 500 && jumped.distance < 600)

    let rest = feed(&tracker, afterBus.fixes[1...])
    let next = rest.compactMap(\.milestone)
    #expect(next.map(\.index) == [2])
    let second = try #require(next.first)
    #expect(second.distance >= 600 && second.distance < 610)
}

// MARK: - Recovery

/// A walk with everything recovery has to get right: noise, a tunnel gap, milestones.
private func recoveryWalk() -> [Fix] {
    let walk = straightWalk(bearing: 30, seconds: 600, seed: 11)
    // A 45 s tunnel: a segment break that bridges distance.
    return Array(walk.fixes[0...300]) + Array(walk.fixes[346...])
}

/// What a tracker's events look like after a trip through the journal (rounded as journaled).
func journaled(_ events: [WalkEvent], id: String = "test") -> WalkLog {
    var lines: [String] = [JournalCodec.encode(.walkStart(id: id, time: t0, every: 100))]
    for event in events {
        switch event {
        case let .segment(segment): lines.append(JournalCodec.encode(.segment(segment)))
        case let .point(point): lines.append(JournalCodec.encode(.point(point)))
        case let .milestone(milestone): lines.append(JournalCodec.encode(.milestone(milestone)))
        case .rejected: break
        }
    }
    return WalkLog.parse(id: id, contents: Array((lines.joined(separator: "\n") + "\n").utf8))
}

@Test(arguments: [1, 2, 71, 72, 73, 150, 300, 301, 302, 400, 554])
func restoredTrackerContinuesLikeAnUninterruptedOne(split: Int) {
    let fixes = recoveryWalk()
    var uninterrupted = WalkTracker(limits: WalkLimits())
    let all = feed(&uninterrupted, fixes)

    var first = WalkTracker(limits: WalkLimits())
    let before = feed(&first, fixes[..<split])
    let log = journaled(before)
    #expect(log.damagedLines.isEmpty)
    var restored = WalkTracker(limits: WalkLimits(), restoring: log.points, milestones: log.milestones)
    #expect(restored.milestoneCount == first.milestoneCount)
    #expect(abs(restored.distance - first.distance) <= 0.005)
    #expect(restored.segment == first.segment)
    let after = feed(&restored, fixes[split...])

    #expect(
        abs(restored.distance - uninterrupted.distance) < 0.1,
        "restored \(restored.distance) m, uninterrupted \(uninterrupted.distance) m")
    #expect(restored.segment == uninterrupted.segment)
    #expect(restored.milestoneCount == uninterrupted.milestoneCount)
    let resumedIndices = (before + after).compactMap(\.milestone).map(\.index)
    #expect(resumedIndices == all.compactMap(\.milestone).map(\.index))
    #expect(resumedIndices == Array(0..<resumedIndices.count))
    #expect(Set(resumedIndices).count == resumedIndices.count)
    let resumedPoints = (before + after).compactMap(\.point)
    let allPoints = all.compactMap(\.point)
    #expect(resumedPoints.count == allPoints.count)
    for (resumed, reference) in zip(resumedPoints, allPoints) where abs(resumed.distance - reference.distance) >= 0.1 {
        Issue.record(
            "at \(resumed.fix.time - t0) s: \(resumed.distance) m resumed, \(reference.distance) m uninterrupted")
        break
    }
}

@Test func restoringWithoutMilestoneZeroPlacesItNext() throws {
    // The crash came after the first point was journaled but before its milestone was.
    let walk = straightWalk(seconds: 20)
    var first = WalkTracker(limits: WalkLimits())
    let events = feed(&first, walk.fixes[0...0])
    let point = try #require(events.compactMap(\.point).first)
    var restored = WalkTracker(limits: WalkLimits(), restoring: [point], milestones: [])
    let next = restored.ingest(walk.fixes[1])
    #expect(next.compactMap(\.milestone).map(\.index) == [0])
    let rest = feed(&restored, walk.fixes[2...])
    #expect(rest.compactMap(\.milestone).isEmpty)
}

// MARK: - Epochs

@Test func epochCollapserKeepsTheLastFixOfEachEpoch() {
    var collapser = EpochCollapser()
    let a1 = Fix(time: t0, latitude: 47, longitude: 8)
    let a2 = Fix(time: t0, latitude: 47.0001, longitude: 8, horizontalError: 4)
    let a3 = Fix(time: t0, latitude: 47.0002, longitude: 8, horizontalError: 3)
    let b1 = Fix(time: t0 + 1, latitude: 47.0003, longitude: 8)
    let c1 = Fix(time: t0 + 2, latitude: 47.0004, longitude: 8)
    #expect(collapser.add(a1) == nil)
    #expect(collapser.add(a2) == nil)
    #expect(collapser.add(a3) == nil)
    #expect(collapser.add(b1) == a3)
    #expect(collapser.add(c1) == b1)
    #expect(collapser.flush() == c1)
    #expect(collapser.flush() == nil)
    // After a flush the next fix starts afresh, even in the same epoch as the flushed one.
    #expect(collapser.add(c1) == nil)
    #expect(collapser.flush() == c1)
}

// MARK: - Implausible GPS time (GPSTimeGuard)

/// A fix of `second` seconds into the walk, dated `time` (default: the truth).
private func timed(_ second: Int, time: Double? = nil) -> Fix {
    let spot = Geodesy.destination(47.0, 8.0, bearing: 90, distance: 1.4 * Double(second))
    return Fix(time: time ?? t0 + Double(second), latitude: spot.lat, longitude: spot.lon, horizontalError: 4)
}

/// Feeds fixes to a guard, fix `i` arriving at monotonic second `i * pace`; returns the GPS times accepted
/// and the episodes of dropped fixes.
private func guarded(
    _ fixes: [Fix], lastGoodTime: Double? = nil, pace: Double = 1
) -> (accepted: [Double], episodes: [GPSTimeGuard.Episode], jumps: [GPSTimeGuard.Jump]) {
    var guardian = GPSTimeGuard(lastGoodTime: lastGoodTime, idleGap: WalkLimits().idleGap)
    var result: (accepted: [Double], episodes: [GPSTimeGuard.Episode], jumps: [GPSTimeGuard.Jump]) = ([], [], [])
    for (index, fix) in fixes.enumerated() {
        let outcome = guardian.check(fix, monotonic: Double(index) * pace)
        result.accepted += outcome.accepted.map(\.time)
        result.episodes += outcome.episode.map { [$0] } ?? []
        result.jumps += outcome.jump.map { [$0] } ?? []
    }
    result.episodes += guardian.finish().map { [$0] } ?? []
    return result
}

private let year2100 = Timestamp.parse("2100-01-01T00:00:00Z")!
private let rollover = 1024.0 * 7 * 86_400

@Test func aFixInTwentyOneHundredIsHeldAndDroppedAndTheWalkGoesOn() {
    let fixes = (0..<30).map { timed($0) } + [timed(30, time: year2100)] + (30..<60).map { timed($0) }
    let result = guarded(fixes)
    #expect(result.accepted == (0..<60).map { t0 + Double($0) })
    #expect(result.episodes == [.init(dropped: 1, firstTime: year2100, suspicion: .ahead)])
    #expect(result.jumps.isEmpty)
    // The same at a replay's pace: GPS time 50 times faster than the monotonic clock.
    #expect(guarded(fixes, pace: 0.02).accepted.count == 60)
    // As the first fix, with nothing to compare with: the next fix does not follow it, and two that agree start.
    let first = guarded([timed(0, time: year2100)] + (0..<3).map { timed($0) })
    #expect(first.accepted == [t0, t0 + 1, t0 + 2])
    #expect(first.episodes == [.init(dropped: 1, firstTime: year2100, suspicion: .unconfirmed)])
}

@Test func fixesInTwentyOneHundredAreDroppedUnlessAMinuteOfThemAgree() {
    for count in [4, 5, 59, 60] {
        let fixes =
            (0..<28).map { timed($0) } + (0..<count).map { timed(28 + $0, time: year2100 + Double($0)) }
            + (28..<56).map { timed($0) }
        let result = guarded(fixes)
        if count < 60 {
            #expect(result.accepted == (0..<56).map { t0 + Double($0) }, "\(count) fixes in 2100")
            #expect(result.episodes == [.init(dropped: count, firstTime: year2100, suspicion: .ahead)])
        } else {
            // A minute of fixes agreeing is the receiver's time now: the 2026 fixes after it are the suspects.
            #expect(result.jumps == [.init(from: t0 + 27, to: year2100, fixes: 60)])
            #expect(result.accepted.count == 28 + 60)
            #expect(result.episodes.map(\.dropped) == [28])
        }
    }
}

@Test func aWeekRolloverImageIsNeverAcceptedHoweverManyAgree() {
    // After 2029 the image of a time is after 2010: only its offset gives it away.
    let future = Timestamp.parse("2035-03-01T12:00:00Z")!
    let fixes =
        (0..<10).map { timed($0, time: future + Double($0)) }
        + (10..<80).map { timed($0, time: future + Double($0) - rollover) }
        + (80..<90).map { timed($0, time: future + Double($0)) }
    let result = guarded(fixes)
    // Built in steps: Swift 6.2.3 (the cross build's) cannot type-check the sum of the two maps in time.
    let expected: [Double] = Array(0..<10).map { future + Double($0) } + Array(80..<90).map { future + Double($0) }
    #expect(result.accepted == expected)
    #expect(result.episodes == [.init(dropped: 70, firstTime: future + 10 - rollover, suspicion: .rollover)])
    // A walk that began on an image (no journal to compare with) takes the true time, 1024 weeks ahead, after a
    // minute of agreeing fixes.
    let fromImage = guarded(
        (0..<5).map { timed($0, time: future - rollover + Double($0)) }
            + (5..<70).map { timed($0, time: future + Double($0)) })
    #expect(fromImage.accepted.count == 70)
    #expect(fromImage.jumps == [.init(from: future - rollover + 4, to: future + 5, fixes: 60)])
    // And with the time 2026 has, the image is before 2010 anyway.
    let today = guarded([timed(0, time: t0 - rollover)] + (0..<5).map { timed($0) })
    #expect(today.episodes.first?.suspicion == .outOfRange)
}

@Test func aColdStartClockBeforeTheLastGoodTimeNeedsAMinuteOfAgreement() {
    let coldStart = Timestamp.parse("2019-04-07T00:00:00Z")!
    let lastGood = t0 - 600
    // 30 fixes on the receiver's firmware date, then the real time: 10 minutes after the last walk's end.
    let fixes = (0..<30).map { timed($0, time: coldStart + Double($0)) } + (30..<40).map { timed($0) }
    let result = guarded(fixes, lastGoodTime: lastGood)
    #expect(result.accepted == (30..<40).map { t0 + Double($0) })
    #expect(result.episodes == [.init(dropped: 30, firstTime: coldStart, suspicion: .before)])
    // A clock that really went back (it ran ahead before) is taken after 60 agreeing fixes.
    let back = guarded((0..<60).map { timed($0, time: lastGood - 7200 + Double($0)) }, lastGoodTime: lastGood)
    #expect(back.accepted.count == 60)
    #expect(back.jumps.count == 1)
}

@Test func timeRunningAheadOfTheMonotonicClockIsHeldUntilFiveFixesAgree() {
    // 2 minutes of GPS time in 1 s of the monotonic clock (a gap in a fast replay, or a jump): held, then taken.
    let fixes = (0..<10).map { timed($0) } + (130..<140).map { timed($0) }
    let fast = guarded(fixes)
    #expect(fast.accepted == fixes.map(\.time))
    #expect(fast.jumps == [.init(from: t0 + 9, to: t0 + 130, fixes: 5)])
    #expect(fast.episodes.isEmpty)
    // The same gap at the pace of a real walk (the monotonic clock measured the 2 minutes) is no jump.
    var guardian = GPSTimeGuard(lastGoodTime: nil, idleGap: WalkLimits().idleGap)
    let accepted = fixes.map { guardian.check($0, monotonic: $0.time - t0).accepted.count }.reduce(0, +)
    #expect(accepted == 20)
    // At the start of a session a fix continues the last walk at once when it is within the idle gap.
    #expect(guarded([timed(0)], lastGoodTime: t0 - 600).accepted == [t0])
    #expect(guarded([timed(0)], lastGoodTime: t0 - 3600).episodes.map(\.dropped) == [1])
}

// MARK: - Absurd values from gpsd

@Test func speedsNoReceiverReportsAreNotReportsAndNeverReachTheDistance() {
    let walk = straightWalk(seconds: 60, eph: 4)
    var control = WalkTracker(limits: WalkLimits())
    var tracker = WalkTracker(limits: WalkLimits())
    for (index, fix) in walk.fixes.enumerated() {
        var reported = fix
        reported.speed = 1.4
        reported.track = 90
        _ = control.ingest(reported)
        switch index {
        case 10..<13: reported.speed = 1e308
        case 20..<23: reported.speed = .infinity
        case 30..<33: reported.speed = .nan
        case 40..<43: reported.speed = -1
        case 50..<53: reported.track = .nan
        default: break
        }
        for event in tracker.ingest(reported) {
            if let point = event.point {
                #expect(point.fix.speed.map { $0.isFinite && $0 >= 0 && $0 <= Fix.maximumSpeed } ?? true)
                #expect(point.fix.track?.isFinite ?? true)
            }
        }
    }
    #expect(tracker.distance.isFinite)
    #expect(abs(tracker.distance - control.distance) < 6, "\(tracker.distance) m, \(control.distance) m without them")
}

@Test func aDopplerSpeedThePositionsContradictIsNotIntegrated() {
    // 1000 m/s (and 100 m/s, under every bound) for three fixes while the position moves 1.4 m a second.
    for glitch in [1000.0, 100.0] {
        let walk = straightWalk(seconds: 60, eph: 4)
        var control = WalkTracker(limits: WalkLimits())
        var tracker = WalkTracker(limits: WalkLimits())
        for (index, fix) in walk.fixes.enumerated() {
            var reported = fix
            (reported.speed, reported.track) = (1.4, 90)
            _ = control.ingest(reported)
            if (30..<33).contains(index) { reported.speed = glitch }
            _ = tracker.ingest(reported)
        }
        #expect(
            abs(tracker.distance - control.distance) < 3,
            "\(glitch) m/s: \(tracker.distance) m, \(control.distance) m without")
        #expect(tracker.milestoneCount == 1)
    }
}

@Test func aJournalWithAnAbsurdDistanceIsToldApart() throws {
    var tracker = WalkTracker(limits: WalkLimits())
    var log = WalkLog(id: "w")
    for fix in straightWalk(seconds: 100, eph: 4).fixes {
        for event in tracker.ingest(fix) {
            if let point = event.point { log.apply(.point(point)) }
        }
    }
    #expect(WalkTracker.implausibleDistance(of: log, limits: WalkLimits()) == nil)
    var absurd = WalkLog(id: "w")
    for (number, var point) in log.points.enumerated() {
        if number == log.points.count - 1 { point.distance = 1e11 }
        absurd.apply(.point(point))
    }
    let verdict = try #require(WalkTracker.implausibleDistance(of: absurd, limits: WalkLimits()))
    #expect(abs(verdict.recomputed - tracker.distance) < 0.01)
    #expect(verdict.reason == "a distance of 100000000000.0 m in 100 s")
}
