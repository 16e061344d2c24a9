#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import NIOConcurrencyHelpers

/// `status.json` in the state directory: what `fieldlog status` shows about the running recorder.
/// Replaced whole (temp file + rename) so a reader never sees half of it; not synced, since it only
/// describes the present. Replaced at once when the connection to gpsd, the walk or its milestones change,
/// otherwise at most every 30 s: `fieldlog status` takes distance and milestones from the journal and
/// corrects the age of the last fix by the journal's newer fixes, so a refresh only says the recorder is
/// alive. Each replacement creates an inode on the SD card; at 1 Hz, replacing it every second cost more CPU
/// than everything else the recorder does, and every 5 s still a seventh of it (bench/results/daemon.md).
public final class StatusFile: @unchecked Sendable {
    public enum GPSDState: String, Codable, Sendable {
        case connecting, connected, disconnected, stopped
    }

    public struct Contents: Codable, Sendable {
        public var pid: Int32
        public var gpsd: GPSDState
        public var gpsdAddress: String
        public var walk: String?
        public var distanceMetres: Double
        public var milestones: Int
        public var lastFixTime: String?
        /// System-clock time at which the last fix arrived, for its age.
        public var lastFixWall: Double?
        public var updatedWall: Double
        /// Set while journal records cannot be written and are held in memory.
        public var storage: Storage?

        public struct Storage: Codable, Sendable {
            public var since: Double
            public var reason: String
            public var heldRecords: Int
            public var droppedFixes: Int

            enum CodingKeys: String, CodingKey {
                case since, reason
                case heldRecords = "held_records"
                case droppedFixes = "dropped_fixes"
            }
        }

        enum CodingKeys: String, CodingKey {
            case pid, gpsd, walk, milestones, storage
            case gpsdAddress = "gpsd_address"
            case distanceMetres = "distance_m"
            case lastFixTime = "last_fix_time"
            case lastFixWall = "last_fix_wall"
            case updatedWall = "updated_wall"
        }
    }

    public static let fileName = "status.json"
    private let path: String
    private let lock = NIOLock()
    private var contents: Contents
    /// The last fix's GPS time, formatted into `contents` only when the file is written.
    private var lastFixTime: Double?
    private var lastWrite = 0.0
    private static let minimumInterval = 30.0

    public init(directory: String, gpsdAddress: String) {
        path = directory + "/" + Self.fileName
        contents = Contents(
            pid: getpid(), gpsd: .connecting, gpsdAddress: gpsdAddress, walk: nil, distanceMetres: 0,
            milestones: 0, lastFixTime: nil, lastFixWall: nil, updatedWall: Date().timeIntervalSince1970)
    }

    public static func read(directory: String) -> Contents? {
        guard let data = FileManager.default.contents(atPath: directory + "/" + fileName) else { return nil }
        return try? JSONDecoder().decode(Contents.self, from: data)
    }

    /// The connection to gpsd and the system-clock time the last fix arrived, as now (not as last written).
    public var gpsdState: (state: GPSDState, lastFixWall: Double?) {
        lock.withLock { (contents.gpsd, contents.lastFixWall) }
    }

    public func noteFix(summary: WalkRecorder.Summary) {
        lock.withLock {
            contents.lastFixWall = Date().timeIntervalSince1970
            let changed = contents.walk != summary.walkID || contents.milestones != summary.milestones
            let storageChanged = apply(summary)
            writeIfDue(force: changed || storageChanged)
        }
    }

    public func update(gpsd: GPSDState, summary: WalkRecorder.Summary) {
        lock.withLock {
            let changed = contents.gpsd != gpsd
            contents.gpsd = gpsd
            let storageChanged = apply(summary)
            writeIfDue(force: changed || storageChanged)
        }
    }

    private func apply(_ summary: WalkRecorder.Summary) -> Bool {
        let failing = summary.storage != nil
        let changed = failing != (contents.storage != nil)
        contents.storage = summary.storage.map {
            Contents.Storage(since: $0.since, reason: $0.reason, heldRecords: $0.heldRecords, droppedFixes: $0.droppedFixes)
        }
        contents.walk = summary.walkID
        contents.distanceMetres = (summary.distance * 10).rounded() / 10
        contents.milestones = summary.milestones
        lastFixTime = summary.lastFixTime
        return changed
    }

    private func writeIfDue(force: Bool) {
        let now = Date().timeIntervalSince1970
        guard force || now - lastWrite >= Self.minimumInterval else { return }
        contents.updatedWall = now
        contents.lastFixTime = lastFixTime.map(Timestamp.format)
        lastWrite = now
        guard let data = try? JSONEncoder().encode(contents) else { return }
        // Best effort and not synced: status is informational and must never stop the recorder or wear
        // the SD card. On a full disk the temporary file cannot be made; overwriting in place frees the old
        // contents' blocks first, so that `fieldlog status` can still say what is wrong.
        do {
            try FileIO.replace(path, with: data, durable: false)
        } catch {
            let descriptor = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
            guard descriptor >= 0 else { return }
            _ = FileIO.writeAll(data, to: descriptor)
            close(descriptor)
        }
    }
}
