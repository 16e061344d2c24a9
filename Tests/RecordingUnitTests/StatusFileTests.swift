import FieldLogTestSupport
import Foundation
import Recording
import Testing
import WalkJournal

/// status.json is rewritten in place: whole after a shorter write, never shrinking, always the same file.
struct StatusFileTests {
    let directory = Harness.temporaryDirectory()
    var path: String { directory + "/" + StatusFile.fileName }

    func inodeAndSize() throws -> (inode: UInt64, size: Int) {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (
            (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0,
            (attributes[.size] as? NSNumber)?.intValue ?? -1
        )
    }

    func recording(distance: Double, storage: StorageTrouble?) -> RecordingStatus {
        RecordingStatus(
            walkID: "20260518-080000", distance: distance, milestones: 1, lastFixTime: 1_779_091_200, storage: storage)
    }

    @Test func aShorterStatusReadsWholeAfterALongerOne() throws {
        // Left by an earlier run, and longer than anything this one writes: cut at the first write.
        try String(repeating: "x", count: 5000).write(toFile: path, atomically: false, encoding: .utf8)
        let status = StatusFile(directory: directory, gpsdAddress: "127.0.0.1:2947")
        let reason = "cannot write \(directory)/walk-20260518-080000.jsonl: No space left on device"
        let trouble = StorageTrouble(since: 1_779_091_000, reason: reason, heldRecords: 3, droppedFixes: 0)
        status.update(gpsd: .connected, recording: recording(distance: 10, storage: trouble))
        let failing = try #require(StatusFile.read(directory: directory))
        #expect(failing.recording.storage?.reason == reason && failing.recording.storage?.heldRecords == 3)
        let long = try inodeAndSize()
        #expect(long.size < 5000, "the earlier run's file was cut")

        status.update(gpsd: .disconnected, recording: recording(distance: 12, storage: nil))
        let recovered = try #require(StatusFile.read(directory: directory))
        #expect(
            recovered.recording.storage == nil && recovered.gpsd == .disconnected && recovered.recording.distance == 12)
        let short = try inodeAndSize()
        #expect(short.size == long.size, "padded to the longer write, not cut")
        #expect(short.inode == long.inode, "written in place, not replaced")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.hasSuffix(" "), "the padding is blanks after the JSON")
    }

    /// Removed behind the recorder's back (the state directory cleaned up): the next write makes it again.
    @Test func aRemovedStatusIsWrittenAgain() throws {
        let status = StatusFile(directory: directory, gpsdAddress: "127.0.0.1:2947")
        status.update(gpsd: .connected, recording: recording(distance: 10, storage: nil))
        try FileManager.default.removeItem(atPath: path)
        #expect(StatusFile.read(directory: directory) == nil)
        status.update(gpsd: .disconnected, recording: recording(distance: 10, storage: nil))
        #expect(StatusFile.read(directory: directory)?.gpsd == .disconnected)
    }

    /// "Last fix N s ago" is the last fix journaled: fixes held or dropped (a stretch dated 2100) arrive but
    /// are none, and the age said "0 s ago" while every fix was dropped.
    @Test func theLastFixAgesWhileFixesAreDropped() throws {
        let status = StatusFile(directory: directory, gpsdAddress: "127.0.0.1:2947")
        var recording = RecordingStatus()
        status.update(gpsd: .connected, recording: recording)
        status.noteFix(recording)
        #expect(status.gpsdState.lastFixWall == nil, "a fix held is no fix journaled")
        recording.walkID = "20260518T080000Z"
        recording.lastFixTime = 1_779_091_200
        status.noteFix(recording)
        let journaled = try #require(status.gpsdState.lastFixWall)
        usleep(20_000)
        recording.suspectFixes = 1
        status.noteFix(recording)
        #expect(status.gpsdState.lastFixWall == journaled, "a fix dropped leaves the age alone")
        #expect(
            StatusFile.read(directory: directory)?.recording.suspectFixes == 1, "written at once when fixes are dropped"
        )
        recording.lastFixTime = 1_779_091_201
        status.noteFix(recording)
        #expect(try #require(status.gpsdState.lastFixWall) > journaled)
    }
}
