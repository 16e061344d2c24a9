import FoundationEssentials
import Glibc
import Synchronization
import SystemIO
package import WalkJournal
import WalkModel

/// `status.json` in the state directory: what `fieldlog status` shows about the running recorder.
/// Not synced, since it only describes the present. Written at once when the connection to gpsd, the walk
/// or its milestones change, otherwise at most every 30 s: `fieldlog status` takes distance and milestones
/// from the journal and corrects the age of the last fix by the journal's newer fixes, so a refresh only
/// says the recorder is alive.
///
/// Rewritten in place by one `pwrite` at offset 0, padded with spaces to the file's length so that it never
/// shrinks (JSON allows trailing whitespace). Replacing it whole (temp file + rename) made ext4 write the new
/// file out at once (`auto_da_alloc`): a sixth of the recorder's CPU at 1 Hz (docs/benchmark-studies.md section 1). In
/// place it needs no new inode or block, so it also works on a full disk. A reader may catch a write half
/// done, or a power cut may leave one: `read` tries again, and the recorder writes the file anew at start.
package final class StatusFile: Sendable {
    package enum GPSDState: String, Codable, Sendable {
        case connecting, connected, disconnected, stopped
    }

    /// The recorder's status and the facts of its process: status.json, one flat JSON object.
    package struct Contents: Sendable {
        package var pid: Int32
        package var gpsd: GPSDState
        package var gpsdAddress: String
        package var recording: RecordingStatus
        /// System-clock time at which the last fix was journaled, for its age.
        package var lastFixWall: Double?
        package var updatedWall: Double
        /// What the photo service is doing; nil when this session has no photo source.
        package var photos: PhotoStatus?
        /// The live page's and sharing's processes, when this recorder starts them (`--helpers children`).
        package var helpers: [Helper]?

        /// A process the recorder started beside itself, as its supervisor last saw it.
        package struct Helper: Codable, Sendable, Equatable {
            /// `live-page` or `live-share`.
            package var name: String
            package var pid: Int32?
            package var running: Bool
            /// Times it was started again after it ended.
            package var restarts: Int
            /// How it last ended ("exit status 1", "killed by signal 9"), nil while it never did.
            package var lastExit: String?

            package init(name: String, pid: Int32?, running: Bool, restarts: Int, lastExit: String?) {
                self.name = name
                self.pid = pid
                self.running = running
                self.restarts = restarts
                self.lastExit = lastExit
            }

            package enum CodingKeys: String, CodingKey {
                case name, pid, running, restarts
                case lastExit = "last_exit"
            }
        }

        /// Whether it describes a recorder running now (its process exists and it has not stopped).
        package var isCurrent: Bool {
            processExists(pid) && gpsd != .stopped
        }

        enum CodingKeys: String, CodingKey {
            case pid, gpsd, photos, helpers
            case gpsdAddress = "gpsd_address"
            case lastFixWall = "last_fix_wall"
            case updatedWall = "updated_wall"
        }
    }

    package static let fileName = "status.json"
    private let path: String
    private let state: Mutex<State>
    private static let minimumInterval = 30.0
    /// A status is well under a kilobyte.
    package static let maxBytes = 64 << 10

    private struct State {
        var contents: Contents
        /// Whether the last fix's time has been taken from the recorder: from then on, a new one is a fix just
        /// journaled.
        var knowsLastFix = false
        var lastWrite = 0.0
        /// The file's length after this process's last whole write; nil before the first.
        var length: Int?
    }

    package init(directory: String, gpsdAddress: String) {
        path = directory + "/" + Self.fileName
        let contents = Contents(
            pid: getpid(), gpsd: .connecting, gpsdAddress: gpsdAddress, recording: RecordingStatus(), lastFixWall: nil,
            updatedWall: Date().timeIntervalSince1970)
        state = Mutex(State(contents: contents))
    }

    /// The status, or nil when there is none or it cannot be read (read twice: a write may be under way).
    package static func read(directory: String) -> Contents? {
        for attempt in 0..<2 {
            if attempt > 0 { usleep(20_000) }
            // Only a regular file of a status's size: a FIFO put there would block `fieldlog status` for ever.
            let bytes: [UInt8]
            do {
                bytes = try FileIO.readRegular(fileName, in: directory, maxBytes: maxBytes)
            } catch {
                RefusedFiles.report(error)
                return nil
            }
            if let contents = try? JSONDecoder().decode(Contents.self, from: Data(bytes)) { return contents }
        }
        return nil
    }

    /// The connection to gpsd and the system-clock time the last fix was journaled, as now (not as last written).
    package var gpsdState: (state: GPSDState, lastFixWall: Double?) {
        state.withLock { state in (state.contents.gpsd, state.contents.lastFixWall) }
    }

    package func noteFix(_ recording: RecordingStatus) {
        state.withLock { state in
            let changed =
                state.contents.recording.walkID != recording.walkID
                || state.contents.recording.milestones != recording.milestones
                || state.contents.recording.suspectFixes != recording.suspectFixes
            let storageChanged = Self.apply(recording, to: &state)
            writeIfDue(force: changed || storageChanged, state: &state)
        }
    }

    package func update(gpsd: GPSDState, recording: RecordingStatus) {
        state.withLock { state in
            let changed = state.contents.gpsd != gpsd
            state.contents.gpsd = gpsd
            let storageChanged = Self.apply(recording, to: &state)
            writeIfDue(force: changed || storageChanged, state: &state)
        }
    }

    /// The photo service's activity changed: written at once, the live page's status line shows it.
    package func note(photos: PhotoStatus) {
        state.withLock { state in
            guard state.contents.photos != photos else { return }
            state.contents.photos = photos
            writeIfDue(force: true, state: &state)
        }
    }

    /// The processes beside the recorder changed (started, ended, restarted): written at once.
    package func note(helpers: [Contents.Helper]) {
        state.withLock { state in
            guard state.contents.helpers != helpers else { return }
            state.contents.helpers = helpers
            writeIfDue(force: true, state: &state)
        }
    }

    private static func apply(_ recording: RecordingStatus, to state: inout State) -> Bool {
        // The age of the last fix is that of the last fix journaled: a fix held or dropped is none.
        if state.knowsLastFix && recording.lastFixTime != state.contents.recording.lastFixTime {
            state.contents.lastFixWall = Date().timeIntervalSince1970
        }
        state.knowsLastFix = true
        let changed = (recording.storage != nil) != (state.contents.recording.storage != nil)
        state.contents.recording = recording
        return changed
    }

    private func writeIfDue(force: Bool, state: inout State) {
        let now = Date().timeIntervalSince1970
        guard force || now - state.lastWrite >= Self.minimumInterval else { return }
        state.contents.updatedWall = now
        state.lastWrite = now
        guard var bytes = try? Array(JSONEncoder().encode(state.contents)) else { return }
        bytes.append(UInt8(ascii: "\n"))
        // Best effort: status is informational and must never stop the recorder. A file left by an earlier
        // run is cut to nothing first; after that, padding covers what a longer write left.
        // Never through a link, nor into a FIFO or a device (opening a FIFO would block the recorder).
        let descriptor = open(
            path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (state.length == nil ? O_TRUNC : 0), 0o644)
        guard descriptor >= 0 else {
            if errno == ELOOP || errno == ENXIO {
                RefusedFiles.report(FileIOError(.write, path: path, reason: "not a regular file", number: errno))
            }
            return
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            RefusedFiles.report(FileIOError(.write, path: path, reason: "not a regular file", number: EINVAL))
            return
        }
        if let length = state.length, bytes.count < length {
            bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: length - bytes.count))
        }
        let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress!, $0.count, 0) }
        if written > 0 { state.length = max(state.length ?? 0, written) }
    }
}

/// status.json: the recording's keys beside the process's, in one object.
extension StatusFile.Contents: Codable {
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        pid = try container.decode(Int32.self, forKey: .pid)
        gpsd = try container.decode(StatusFile.GPSDState.self, forKey: .gpsd)
        gpsdAddress = try container.decode(String.self, forKey: .gpsdAddress)
        recording = try RecordingStatus(from: decoder)
        lastFixWall = try container.decodeIfPresent(Double.self, forKey: .lastFixWall)
        updatedWall = try container.decode(Double.self, forKey: .updatedWall)
        photos = try container.decodeIfPresent(PhotoStatus.self, forKey: .photos)
        helpers = try container.decodeIfPresent([Helper].self, forKey: .helpers)
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(pid, forKey: .pid)
        try container.encode(gpsd, forKey: .gpsd)
        try container.encode(gpsdAddress, forKey: .gpsdAddress)
        try recording.encode(to: encoder)
        try container.encodeIfPresent(lastFixWall, forKey: .lastFixWall)
        try container.encode(updatedWall, forKey: .updatedWall)
        try container.encodeIfPresent(photos, forKey: .photos)
        try container.encodeIfPresent(helpers, forKey: .helpers)
    }
}
