import ArgumentParser
import FieldLog
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

struct Status: ParsableCommand, ConfiguredCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what the recorder is doing.",
        discussion: """
            The current walk, its distance and milestones, how long ago the last fix arrived, and \
            whether the recorder is running and connected to gpsd.
            """
    )

    static let configKeys: Set<String> = ["state-dir"]

    @OptionGroup var configOption: ConfigOption

    @OptionGroup var stateDirectory: StateDirectoryOption

    func run() throws {
        let store = JournalStore(directory: stateDirectory.path)
        let log: WalkLog?
        do {
            log = try store.walkIDs().last.map { try store.read($0) }
        } catch {
            throw CleanExit.failure("fieldlog: \(error)")
        }
        let status = StatusFile.read(directory: store.directory)
        let now = Date().timeIntervalSince1970
        if let log {
            let state = log.isOpen ? "open" : "ended"
            print("walk       \(log.id) (\(state))")
            print("distance   \(Int(log.distance.rounded())) m, \(log.milestones.count) milestones")
            if let last = log.points.last {
                var line = "last fix   \(Timestamp.format(last.fix.time))"
                if let wall = status?.lastFixWall, status?.walk == log.id {
                    // status.json is a few seconds behind the journal: fixes journaled since it was written
                    // arrived later by as much GPS time as they are newer.
                    let newer = status?.lastFixTime.flatMap(Timestamp.parse).map { last.fix.time - $0 } ?? 0
                    line += ", \(Int(max(0, now - wall - max(0, newer)).rounded())) s ago"
                }
                print(line)
            }
        } else {
            print("walk       none recorded in \(store.directory)")
        }
        guard let status, kill(status.pid, 0) == 0 || errno == EPERM, status.gpsd != .stopped else {
            print("recorder   not running")
            return
        }
        print("recorder   running (pid \(status.pid))")
        // The recorder refreshes status.json at least every 30 s; an older one means it cannot write it.
        let age = now - status.updatedWall
        if age > 90 {
            print("status     not refreshed for \(Int(age.rounded())) s: the state directory may be failing (see the log)")
        }
        print("gpsd       \(status.gpsd.rawValue) at \(status.gpsdAddress)")
        if let storage = status.storage {
            var line = "storage    failing for \(Int(max(0, now - storage.since).rounded())) s: \(storage.reason); "
                + "\(storage.heldRecords) records held in memory"
            if storage.droppedFixes > 0 { line += ", \(storage.droppedFixes) fixes dropped (memory full)" }
            print(line)
        } else {
            print("storage    ok")
        }
    }
}
