import FieldLogTestSupport
import Foundation
import Logging
import Recording
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

// WalkRecorder on a real state directory: what reaches the journal, and how a walk survives a crash.

private let t0 = Timestamp.parse("2026-05-18T08:00:00Z")!

/// A state directory of its own, removed when the test ends.
private final class StateDirectory {
    let path = NSTemporaryDirectory() + "fieldlog-recorder-test-" + UUID().uuidString + "/state"
    var store: JournalStore { JournalStore(directory: path) }

    func recorder(limits: WalkLimits = WalkLimits()) throws -> WalkRecorder {
        try WalkRecorder(store: store, limits: limits, logger: quietLogger)
    }

    func walks() throws -> [WalkLog] {
        try store.walkIDs().map { try store.read($0) }
    }

    /// Every record of a walk in file order, including repeats that WalkLog would drop.
    func records(_ id: String) throws -> [JournalRecord] {
        let data = try #require(FileManager.default.contents(atPath: store.path(for: id)))
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map {
            JournalCodec.decode($0) ?? .event(JournalEvent(kind: .error, wall: 0, message: "UNREADABLE \($0)"))
        }
    }

    deinit {
        try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
    }
}

/// Fixes once a second walking east at 1.4 m/s with up to 1 m of noise, and the true path length.
private func walk(
    from start: (lat: Double, lon: Double) = (47.0, 8.0), seconds: Int, startTime: Double = t0,
    eph: Double? = 4, seed: UInt64 = 1
) -> (fixes: [Fix], end: (lat: Double, lon: Double)) {
    var random = SplitMix(seed: seed)
    var fixes: [Fix] = []
    var spot = start
    for second in 0...seconds {
        spot = Geodesy.destination(start.lat, start.lon, bearing: 90, distance: 1.4 * Double(second))
        let noisy = Geodesy.destination(
            spot.lat, spot.lon, bearing: random.next(in: 0..<360), distance: random.next(in: 0..<1))
        fixes.append(
            Fix(
                time: startTime + Double(second), latitude: noisy.lat, longitude: noisy.lon, altitude: 420,
                horizontalError: eph))
    }
    return (fixes, spot)
}

private func record(_ fixes: some Sequence<Fix>, into recorder: WalkRecorder) throws {
    for fix in fixes {
        recorder.record(fix)
    }
}

private func milestoneIndices(_ records: [JournalRecord]) -> [Int] {
    records.compactMap {
        if case let .milestone(milestone) = $0 { return milestone.index }
        return nil
    }
}

/// What each line of a walk's journal is: its `type`, or for events the event's name.
private func kinds(_ state: StateDirectory, _ id: String) throws -> [String] {
    let data = try #require(FileManager.default.contents(atPath: state.store.path(for: id)))
    return try String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        return (object?["event"] as? String) ?? (object?["type"] as? String) ?? "?"
    }
}

private func appendBytes(_ text: String, to path: String) throws {
    let handle = try #require(FileHandle(forWritingAtPath: path))
    defer { try? handle.close() }
    try handle.seekToEnd()
    try handle.write(contentsOf: Data(text.utf8))
}

// MARK: - Recording

@Test func recordingAWalkJournalsStartFixesAndMilestones() throws {
    let state = StateDirectory()
    let recorder = try state.recorder()
    // 320 s at 1.4 m/s: about 450 m, milestones 0...4.
    let fixes = walk(seconds: 320).fixes
    try record(fixes, into: recorder)
    recorder.finishSession(reason: "test over")

    let ids = try state.store.walkIDs()
    #expect(ids == ["20260518T080000Z"])
    let id = try #require(ids.first)
    let records = try state.records(id)
    #expect(records.first == .walkStart(id: id, time: t0, every: 100))
    let lineKinds = try kinds(state, id)
    #expect(lineKinds.last == "session_end")
    #expect(!lineKinds.contains("walk_end"), "a session end is not a walk end")

    let log = try state.store.read(id)
    #expect(log.damagedLines.isEmpty)
    #expect(log.isOpen)
    // Every epoch reached the journal, the last one through finishSession's flush.
    #expect(log.points.map(\.fix.time) == fixes.map(\.time))
    #expect(abs(log.distance - 1.4 * 320) < 9, "\(log.distance) m")
    #expect(milestoneIndices(records) == [0, 1, 2, 3, 4])
    for milestone in log.milestones {
        #expect(milestone.distance >= Double(milestone.index) * 100)
        #expect(log.points.contains { $0.fix.time == milestone.time && $0.distance == milestone.distance })
    }
    // Each milestone line follows the fix line that reached it.
    for (index, record) in records.enumerated() {
        guard case let .milestone(milestone) = record else { continue }
        guard case let .point(point) = records[index - 1] else {
            Issue.record("milestone \(milestone.index) does not follow its fix")
            continue
        }
        #expect(point.fix.time == milestone.time)
    }
    let summary = recorder.status
    #expect(summary.walkID == id)
    #expect(summary.milestones == 5)
    #expect(abs(summary.distance - log.distance) < 0.01)
    #expect(summary.lastFixTime == fixes.last!.time)
}

@Test func onlyTheLastReportOfAnEpochIsRecorded() throws {
    let state = StateDirectory()
    let recorder = try state.recorder()
    let first = Fix(time: t0, latitude: 47, longitude: 8, horizontalError: 9)
    let better = Fix(time: t0, latitude: 47.00001, longitude: 8, horizontalError: 3)
    let next = Fix(time: t0 + 1, latitude: 47.00002, longitude: 8, horizontalError: 3)
    recorder.record(first)
    #expect(try state.store.walkIDs().isEmpty, "nothing is processed before the epoch is complete")
    recorder.record(better)
    recorder.record(next)
    recorder.flush()
    let log = try #require(try state.walks().first)
    #expect(log.points.map(\.fix.time) == [t0, t0 + 1])
    #expect(log.points.first?.fix.latitude == 47.00001)
    #expect(log.points.first?.fix.horizontalError == 3)
}

@Test func milestoneHandlerHearsEachMilestoneOnce() throws {
    final class Heard: @unchecked Sendable {
        let lock = NSLock()
        var milestones: [(Int, String)] = []
        func add(_ milestone: Milestone, _ id: String) {
            lock.withLock { milestones.append((milestone.index, id)) }
        }
    }
    let state = StateDirectory()
    let recorder = try state.recorder()
    let heard = Heard()
    recorder.setMilestoneHandler { heard.add($0, $1) }
    try record(walk(seconds: 160).fixes, into: recorder)
    recorder.finishSession(reason: "test over")
    let id = try #require(try state.store.walkIDs().first)
    #expect(heard.lock.withLock { heard.milestones.map(\.0) } == [0, 1, 2])
    #expect(heard.lock.withLock { heard.milestones.allSatisfy { $0.1 == id } })
}

@Test func eventsBeforeTheFirstFixLandInTheWalk() throws {
    let state = StateDirectory()
    let recorder = try state.recorder()
    recorder.note(.sessionStart)
    recorder.note(.gpsdConnected, message: "gpsd at localhost:2947")
    #expect(try state.store.walkIDs().isEmpty)
    try record(walk(seconds: 5).fixes, into: recorder)
    recorder.finishSession(reason: "done")
    let id = try #require(try state.store.walkIDs().first)
    #expect(Array(try kinds(state, id).prefix(3)) == ["walk_start", "session_start", "gpsd_connected"])
}

@Test func fixesTooImpreciseNeverCreateAWalk() throws {
    let state = StateDirectory()
    let recorder = try state.recorder()
    let limits = WalkLimits()
    try record(walk(seconds: 120, eph: limits.maxHorizontalError + 30).fixes, into: recorder)
    recorder.flush()
    try record(
        [
            Fix(time: t0 + 500, latitude: 47, longitude: 8, mode: 1),
            Fix(time: t0 + 501, latitude: 47, longitude: 8, mode: 1),
        ],
        into: recorder)
    recorder.finishSession(reason: "done")
    #expect(try state.store.walkIDs().isEmpty)
    #expect(recorder.status.walkID == nil)

    // The first good fix starts the walk there, not at the first bad one.
    try record(walk(seconds: 10, startTime: t0 + 600).fixes, into: recorder)
    recorder.finishSession(reason: "done")
    let log = try #require(try state.walks().first)
    #expect(try state.store.walkIDs().count == 1)
    #expect(log.started == t0 + 600)
    #expect(log.points.first?.fix.time == t0 + 600)
}

/// Times no clock has (NaN, infinities, 1e300): each is dropped and counted, the recorder goes on, and the
/// session's one episode is journaled once in the walk that follows.
@Test func fixesWithTimesNoClockHasAreCountedAndNeverStopTheRecorder() throws {
    let state = StateDirectory()
    let recorder = try state.recorder()
    try record([.nan, .infinity, -.infinity, 1e300].map { Fix(time: $0, latitude: 47, longitude: 8) }, into: recorder)
    try record(walk(seconds: 9).fixes, into: recorder)
    recorder.finishSession(reason: "done")
    let log = try #require(try state.walks().first)
    #expect(log.points.count == 10)
    #expect(
        log.events.filter { $0.kind == .timeSuspect }.map(\.message) == [
            "4 fixes dropped for an implausible GPS time, from nan (before 2010 or after 9999)"
        ])
    #expect(recorder.status.suspectFixes == 4)
    #expect(recorder.status.lastSuspectTime == nil)
}

@Test func timeJumpBeyondIdleGapWhileRunningEndsTheWalkAndStartsAnother() throws {
    let state = StateDirectory()
    let recorder = try state.recorder()
    let limits = WalkLimits()
    let before = walk(seconds: 100)
    let jump = limits.idleGap + 60
    let after = walk(from: before.end, seconds: 100, startTime: before.fixes.last!.time + jump, seed: 2)
    try record(before.fixes + after.fixes, into: recorder)
    recorder.finishSession(reason: "done")

    let ids = try state.store.walkIDs()
    #expect(ids.count == 2)
    let logs = try state.walks()
    guard logs.count == 2 else { return }
    let (first, second) = (logs[0], logs[1])
    #expect(first.ended == before.fixes.last!.time)
    #expect(first.points.map(\.fix.time) == before.fixes.map(\.time))
    let lastOfFirst = try #require(first.points.last)
    #expect(abs(first.distance - lastOfFirst.distance) < 0.01)
    #expect(try kinds(state, first.id).last == "walk_end")
    #expect(second.id == ids[1])
    #expect(second.started == after.fixes[0].time)
    #expect(second.points.map(\.fix.time) == after.fixes.map(\.time))
    #expect(second.milestones.map(\.index) == [0, 1])
    #expect(second.isOpen)
    // The new walk counts from zero.
    #expect(second.points.first?.distance == 0)
    // A jump within the idle gap stays in the same walk.
    #expect(second.segments.isEmpty)
}

@Test func pauseWithinIdleGapWhileRunningKeepsTheWalk() throws {
    let state = StateDirectory()
    let recorder = try state.recorder()
    let before = walk(seconds: 100)
    // Ten minutes waiting at the same spot without a fix: a new segment, the same walk.
    let after = walk(from: before.end, seconds: 100, startTime: before.fixes.last!.time + 600, seed: 2)
    try record(before.fixes + after.fixes, into: recorder)
    recorder.finishSession(reason: "done")
    let logs = try state.walks()
    #expect(logs.count == 1)
    #expect(logs.first?.segments.map(\.index) == [1])
    #expect(logs.first.map { abs($0.distance - 280) < 12 } == true, "\(String(describing: logs.first?.distance))")
}

// MARK: - Crash and resume

/// A walk that a crash interrupted after `crashAfter` fixes (without finishSession, the epoch in flight
/// lost), optionally leaving half a line at the end of its journal.
private func crashedWalk(
    _ state: StateDirectory, fixes: [Fix], crashAfter: Int, tornLine: String? = nil
) throws -> String {
    do {
        let recorder = try state.recorder()
        try record(fixes[..<crashAfter], into: recorder)
    }
    let id = try #require(try state.store.walkIDs().last)
    if let tornLine {
        try appendBytes(tornLine, to: state.store.path(for: id))
    }
    return id
}

@Test(arguments: [nil, #"{"dist":117.3,"lat":47.00"#])
func crashedWalkResumesWhenFixesContinueWithinIdleGap(tornLine: String?) throws {
    let state = StateDirectory()
    // 330 s walking: ~460 m. The crash comes at 200 s; the restart takes 20 s during which walking goes on.
    let fixes = walk(seconds: 330).fixes
    let id = try crashedWalk(state, fixes: fixes, crashAfter: 200, tornLine: tornLine)
    let beforeCrash = try state.records(id)
    let journaled = try state.store.read(id)
    #expect(journaled.points.count == 199, "the fix in flight is lost with the crash")
    #expect(journaled.damagedLines == (tornLine == nil ? [] : [beforeCrash.count]))
    let milestonesBefore = milestoneIndices(beforeCrash)
    #expect(milestonesBefore == [0, 1, 2])

    let recorder = try state.recorder()
    // Start-up repaired the journal and found the walk interrupted.
    let repaired = try state.store.read(id)
    #expect(repaired.damagedLines.isEmpty)
    #expect(recorder.status.walkID == id)
    #expect(abs(recorder.status.distance - journaled.distance) < 0.01)

    try record(fixes[220...], into: recorder)
    recorder.finishSession(reason: "done")

    #expect(try state.store.walkIDs() == [id])
    let log = try state.store.read(id)
    let records = try state.records(id)
    #expect(log.damagedLines.isEmpty)
    #expect(
        !records.contains {
            if case let .event(event) = $0 { event.message?.hasPrefix("UNREADABLE") == true } else { false }
        })
    #expect(log.isOpen)
    // The walk carries on in the same file: what was there, then `resumed`, then the new fixes.
    let validBefore = tornLine == nil ? beforeCrash : Array(beforeCrash.dropLast())
    #expect(Array(records.prefix(validBefore.count)) == validBefore)
    let resumedAt = validBefore.count
    let lineKinds = try kinds(state, id)
    #expect(lineKinds.dropFirst(resumedAt).first == "resumed")
    #expect(lineKinds.filter { $0 == "resumed" }.count == 1)
    #expect(lineKinds.filter { $0 == "walk_start" }.count == 1)
    // Distance continues from where it stopped and never goes back.
    let distances = log.points.map(\.distance)
    #expect(zip(distances, distances.dropFirst()).allSatisfy { $0 <= $1 })
    #expect(log.points.map(\.fix.time) == fixes[..<199].map(\.time) + fixes[220...].map(\.time))
    #expect(abs(log.distance - 1.4 * 330) < 1.4 * 330 * 0.02, "\(log.distance) m")
    // No milestone twice, none skipped.
    let indices = milestoneIndices(records)
    #expect(indices == [0, 1, 2, 3, 4])
    for milestone in log.milestones {
        #expect(milestone.distance >= Double(milestone.index) * 100)
    }

    // The same fixes without the crash give the same walk, give or take what the lost epochs change.
    let reference = StateDirectory()
    let uninterrupted = try reference.recorder()
    try record(fixes[..<199] + fixes[220...], into: uninterrupted)
    uninterrupted.finishSession(reason: "done")
    let referenceLog = try #require(try reference.walks().first)
    #expect(abs(referenceLog.distance - log.distance) < 0.1)
    #expect(referenceLog.milestones.map(\.index) == log.milestones.map(\.index))
}

@Test func crashedWalkResumesAfterALongPauseAsANewSegment() throws {
    let state = StateDirectory()
    let first = walk(seconds: 150)
    let id = try crashedWalk(state, fixes: first.fixes, crashAfter: 151)
    let journaled = try state.store.read(id)
    // Twenty minutes later (within the 30 minute idle gap) the walker goes on from where they stopped.
    let resumeTime = journaled.points.last!.fix.time + 20 * 60
    let second = walk(from: first.end, seconds: 100, startTime: resumeTime, seed: 9)
    let recorder = try state.recorder()
    try record(second.fixes, into: recorder)
    recorder.finishSession(reason: "done")

    #expect(try state.store.walkIDs() == [id])
    let log = try state.store.read(id)
    #expect(log.events.map(\.kind).contains(.resumed))
    #expect(log.segments.map(\.index) == [1])
    #expect(log.segments.first?.time == resumeTime)
    #expect(milestoneIndices(try state.records(id)) == [0, 1, 2, 3])
    #expect(abs(log.distance - 1.4 * 250) < 12, "\(log.distance) m")
}

@Test func crashedWalkIsEndedWhenFixesComeBackAfterIdleGap() throws {
    let state = StateDirectory()
    let limits = WalkLimits()
    let first = walk(seconds: 150)
    let oldID = try crashedWalk(state, fixes: first.fixes, crashAfter: 120, tornLine: #"{"type":"mile"#)
    let lastJournaled = try #require(try state.store.read(oldID).points.last)

    let recorder = try state.recorder()
    let later = walk(from: first.end, seconds: 30, startTime: lastJournaled.fix.time + limits.idleGap + 1, seed: 4)
    try record(later.fixes, into: recorder)
    recorder.finishSession(reason: "done")

    let ids = try state.store.walkIDs()
    #expect(ids.count == 2)
    #expect(ids.first == oldID)
    let old = try state.store.read(oldID)
    #expect(old.damagedLines.isEmpty)
    #expect(!old.isOpen)
    #expect(old.ended == lastJournaled.fix.time)
    #expect(old.distance == lastJournaled.distance)
    #expect(try kinds(state, oldID).last == "walk_end")
    #expect(!old.events.map(\.kind).contains(.resumed))

    let newID = try #require(ids.last)
    #expect(newID != oldID)
    let new = try state.store.read(newID)
    #expect(new.started == later.fixes[0].time)
    #expect(new.points.map(\.fix.time) == later.fixes.map(\.time))
    #expect(new.points.first?.distance == 0)
    #expect(new.milestones.map(\.index) == [0])
    #expect(!new.events.map(\.kind).contains(.resumed))
    #expect(try kinds(state, newID).first == "walk_start")

    // A third session finds the old walk closed and the new one interrupted (it was never ended).
    let third = try state.recorder()
    #expect(third.status.walkID == newID)
}

@Test func closedWalkIsNeverResumed() throws {
    let state = StateDirectory()
    let limits = WalkLimits()
    let first = walk(seconds: 60)
    let recorder = try state.recorder()
    // Walk, then a jump past the idle gap closes it and opens a second walk; that one crashes.
    try record(first.fixes, into: recorder)
    try record(
        walk(from: first.end, seconds: 10, startTime: first.fixes.last!.time + limits.idleGap + 5).fixes, into: recorder
    )
    let ids = try state.store.walkIDs()
    #expect(ids.count == 2)
    let closed = try state.store.read(ids[0])
    #expect(!closed.isOpen)

    // After the crash, fixes continue soon after the second walk: the second one resumes, the first stays closed.
    let restarted = try state.recorder()
    #expect(restarted.status.walkID == ids[1])
}

// MARK: - Late photos

/// A power cut while a late photo was being appended to an older walk (not the newest, which start-up
/// repairs) leaves a torn line there; the next photo for that walk must not be glued onto it. Found by
/// reliability/powercut (the older-walk trials).
@Test func aLatePhotoRepairsATornLineInAnOlderWalkFirst() throws {
    let state = StateDirectory()
    let first = walk(seconds: 150)
    let second = walk(from: first.end, seconds: 30, startTime: first.fixes.last!.time + WalkLimits().idleGap + 60)
    do {
        let recorder = try state.recorder()
        try record(first.fixes + second.fixes, into: recorder)
        recorder.finishSession(reason: "done")
    }
    let ids = try state.store.walkIDs()
    try #require(ids.count == 2)
    let older = ids[0]
    try appendBytes(#"{"index":0,"source":"local","status":"none_nea"#, to: state.store.path(for: older))

    let recorder = try state.recorder()
    recorder.attach(
        MilestonePhoto(milestone: 1, source: "local", outcome: .noneNearby(radius: 31_000)), toWalk: older)

    let log = try state.store.read(older)
    #expect(log.damagedLines.isEmpty)
    #expect(log.photos[1] != nil)
    #expect(try kinds(state, older).suffix(2) == ["walk_end", "photo"])
}

@Test func starringWhileRecordingLosesNothing() throws {
    let state = StateDirectory()
    let recorder = try state.recorder()
    let fixes = walk(seconds: 300).fixes
    try record(fixes[..<150], into: recorder)
    let id = try #require(try state.store.walkIDs().last)
    #expect(try state.store.setStarred(true, milestone: 1, walk: id, wall: 1_779_443_306))
    #expect(try !state.store.setStarred(true, milestone: 1, walk: id, wall: 1_779_443_307), "already starred")
    #expect(throws: JournalError.self) { try state.store.setStarred(true, milestone: 9, walk: id, wall: 0) }
    try record(fixes[150...], into: recorder)
    recorder.finishSession(reason: "done")
    let log = try state.store.read(id)
    #expect(log.damagedLines.isEmpty)
    #expect(log.starred == [1])
    #expect(log.points.count == fixes.count)
}
