import FieldLogDaemon
import FoundationEssentials
import Glibc
import Recording
import Sharing
import SystemIO
import WalkJournal
import WalkModel

/// `fieldlog status`: the newest walk from the walk index, and the recorder, its helpers and sharing from their
/// status files.
package enum StatusReport {
    package static func text(stateDirectory: String) throws(CommandError) -> String {
        let store = JournalStore(directory: stateDirectory)
        let log: WalkSummary?
        do {
            // The index, read on from where it stopped: a long walk's journal is not read again each time.
            log = try WalkIndex.summaries(in: store).last
        } catch {
            throw CommandError("\(error)")
        }
        let status = StatusFile.read(directory: store.directory)
        return lines(log: log, status: status, directory: store.directory).joined()
    }

    /// What `status` prints, each line with its newline.
    private static func lines(log: WalkSummary?, status: StatusFile.Contents?, directory: String) -> [String] {
        var lines: [String] = []
        func add(_ line: String) { lines.append(line + "\n") }
        let now = Date().timeIntervalSince1970
        if let log {
            let state = log.ended == nil ? "open" : "ended"
            add("walk       \(log.id) (\(state))")
            add("distance   \(log.distance.wholeText) m, \(log.milestones) milestones")
            if let lastFixTime = log.lastFixTime {
                var line = "last fix   \(Timestamp.format(lastFixTime))"
                if let wall = status?.lastFixWall, status?.recording.walkID == log.id {
                    // status.json is a few seconds behind the journal: fixes journaled since it was written
                    // arrived later by as much GPS time as they are newer.
                    let newer = status?.recording.lastFixTime.map { lastFixTime - $0 } ?? 0
                    line += ", \(max(0, now - wall - max(0, newer)).wholeText) s ago"
                }
                add(line)
            }
        } else {
            add("walk       none recorded in \(directory)")
        }
        guard let status, status.isCurrent else {
            add("recorder   not running")
            return lines
        }
        add("recorder   running (pid \(status.pid))")
        // The recorder refreshes status.json at least every 30 s; an older one means it cannot write it.
        let age = now - status.updatedWall
        if age > 90 {
            add("status     not refreshed for \(age.wholeText) s: the state directory may be failing (see the log)")
        }
        add("gpsd       \(status.gpsd.rawValue) at \(status.gpsdAddress)")
        let suspect = status.recording.suspectFixes
        var dropped = "dropped    \(suspect) \(suspect == 1 ? "fix" : "fixes") for an implausible GPS time"
        if let first = status.recording.lastSuspectTime { dropped += " (the latest from \(Timestamp.format(first)))" }
        add(dropped + ", \(status.recording.rejectedFixes) for accuracy, position or a jump")
        if let storage = status.recording.storage {
            var line =
                "storage    failing for \(max(0, now - storage.since).wholeText) s: \(storage.reason); "
                + "\(storage.heldRecords) records held in memory"
            if storage.droppedFixes > 0 { line += ", \(storage.droppedFixes) fixes dropped (memory full)" }
            add(line)
        } else {
            add("storage    ok")
        }
        if let photos = status.photos.flatMap(PhotoActivityState.init(statusRecord:)) {
            add("photos     \(photos.description(now: now))")
        }
        for helper in status.helpers ?? [] {
            var line = helper.name + String(repeating: " ", count: max(1, 11 - helper.name.count))
            line += helper.running ? "running (pid \(helper.pid ?? 0))" : "not running, starting again"
            if helper.restarts > 0 {
                line += ", restarted \(helper.restarts) \(helper.restarts == 1 ? "time" : "times")"
            }
            if let exit = helper.lastExit { line += " (last ended: \(exit))" }
            add(line)
        }
        if status.helpers == nil, let page = LivePageStatusFile.read(directory: directory), processExists(page.pid) {
            add("live-page  running (pid \(page.pid)) on \(page.address)")
        }
        lines += ShareStatusFile.lines(directory: directory)
        return lines
    }
}
