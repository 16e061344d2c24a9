import CSandbox
import FoundationEssentials
import Glibc
package import LivePage
package import Logging
package import Recording
import ServiceLifecycle
import Sharing
import Synchronization
import SystemIO
import WalkJournal
import WalkModel

/// `fieldlog live-page`: the live page in a process of its own, beside the recorder. It reads the walk from its
/// journal and the recorder's state from status.json and share-status.json, and writes nothing but
/// live-status.json: a client that exhausts it costs the page, never the recording.
package struct LivePageProcess {
    private let group: ServiceGroup
    private let logger: Logger

    package init(settings: DaemonSettings, http: HostAndPort, logger: Logger) {
        self.logger = logger
        let store = JournalStore(directory: settings.stateDir)
        let recorder = RecorderState(directory: store.directory)
        let web = WebService(
            configuration: .init(host: http.host, port: http.portNumber), store: store,
            cacheDirectory: settings.photos.cacheDir,
            currentWalk: { recorder.current?.recording.walkID },
            status: { recorder.liveStatus() },
            logger: logger)
        LivePageStatusFile.write(address: http.description, directory: store.directory)
        group = ServiceGroup(
            configuration: .init(
                services: [
                    .init(service: web, successTerminationBehavior: .gracefullyShutdownGroup),
                    .init(service: ResidentPagesService(logger: logger), successTerminationBehavior: .ignore),
                ], logger: logger))
    }

    package func runUntilSignalled() async throws {
        try await group.runUntilSignalled(logger: logger)
    }
}

/// `fieldlog live-share`: sharing in a process of its own, beside the recorder. It reads the journal as its
/// queue and writes its cursors and share-status.json; of the journal it only appends its two rare events
/// (a destination rejecting the credentials, or unreachable for a minute), as `fieldlog star` does.
package struct ShareProcess {
    private let group: ServiceGroup
    private let logger: Logger

    /// `recorder`: the pid of the recorder that started this process, if one did.
    /// A destination that cannot be set up (a bad URL, a password file that cannot be used) is reported and left
    /// out: this process keeps running, and says so in share-status.json.
    package init(settings: DaemonSettings, logger: Logger, environment: [String: String], recorder: Int32?) {
        self.logger = logger
        let store = JournalStore(directory: settings.stateDir)
        var shareSettings = settings.sharing.serviceSettings(
            cacheDirectory: settings.photos.cacheDir, environment: environment)
        shareSettings.recorderPid = recorder ?? RecorderState(directory: store.directory).current?.pid
        let events = ShareEvents(store: store, logger: logger)
        let service = ShareService(settings: shareSettings, store: store, logger: logger) { kind, message in
            events.note(kind, message: message)
        }
        group = ServiceGroup(
            configuration: .init(
                services: [
                    .init(service: service, successTerminationBehavior: .gracefullyShutdownGroup),
                    .init(service: events, successTerminationBehavior: .ignore),
                    .init(service: ResidentPagesService(logger: logger), successTerminationBehavior: .ignore),
                ],
                logger: logger))
    }

    package func runUntilSignalled() async throws {
        try await group.runUntilSignalled(logger: logger)
    }
}

/// Sharing's events journaled into the walk being recorded, as the recorder journals its own: held while
/// there is no walk yet (a broker refusing the password before the first fix), and written once there is.
final class ShareEvents: Service, Sendable {
    private let store: JournalStore
    private let recorder: RecorderState
    private let logger: Logger
    private let pending = Mutex<[JournalEvent]>([])

    init(store: JournalStore, logger: Logger) {
        self.store = store
        recorder = RecorderState(directory: store.directory)
        self.logger = logger
    }

    func note(_ kind: JournalEvent.Kind, message: String) {
        let time = recorder.current?.recording.lastFixTime
        pending.withLock {
            $0.append(JournalEvent(kind: kind, time: time, wall: Date().timeIntervalSince1970, message: message))
        }
        flush()
    }

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await sleepOnEventLoop(for: .seconds(2))
            flush()
        }
    }

    private func flush() {
        pending.withLock { events in
            guard !events.isEmpty else { return }
            // A running recorder's walk once it has one; with no recorder, the newest walk.
            let running = recorder.current
            guard let walk = running != nil ? running?.recording.walkID : (try? store.walkIDs())?.last else { return }
            while let event = events.first {
                do {
                    try store.append(.event(event), toWalk: walk)
                } catch {
                    logger.error("sharing: cannot journal \(event.kind.rawValue): \(error)")
                    return
                }
                events.removeFirst()
            }
        }
    }
}

/// `live-status.json` in the state directory: the live page's process, for `fieldlog status`.
package enum LivePageStatusFile {
    package static let fileName = "live-status.json"

    package struct Contents: Codable, Sendable {
        package var pid: Int32
        package var address: String
    }

    package static func read(directory: String) -> Contents? {
        guard let bytes = try? FileIO.readRegular(fileName, in: directory, maxBytes: 4 << 10) else { return nil }
        return try? JSONDecoder().decode(Contents.self, from: Data(bytes))
    }

    static func write(address: String, directory: String) {
        guard var bytes = try? Array(JSONEncoder().encode(Contents(pid: getpid(), address: address))) else { return }
        bytes.append(UInt8(ascii: "\n"))
        // Best effort: status never stops the page.
        try? FileIO.replace(directory + "/" + fileName, with: bytes, durable: false)
    }
}

/// Bounds a process beside the recorder by design: its data (heap, buffers, thread stacks) may not pass
/// `dataBytes`, so whatever a client or a broker makes it allocate fails in it, or ends it, and never takes
/// memory the recorder shares a limit with (children mode under one cgroup). It offers itself to the kernel's
/// OOM killer before the recorder, and yields the CPU to it (nice 10): a crowd of clients slows the page, not
/// the recording.
package func boundHelperProcess(dataBytes: Int) throws(DaemonError) {
    guard limitDataMemory(to: dataBytes) else { throw DaemonError("cannot limit its memory to \(dataBytes >> 20) MiB") }
    // Raising one's own niceness needs no privilege; under systemd, Nice= in the unit says the same.
    _ = setpriority(
        __priority_which_t(PRIO_PROCESS.rawValue), 0, max(10, getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0))
    )
    let descriptor = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return }
    _ = FileIO.writeAll(Array("500\n".utf8), to: descriptor)
    close(descriptor)
}

/// What each process beside the recorder may hold; the systemd units' MemoryMax= (deploy/) leaves room above it
/// (code, page cache), so that an allocation past it fails in the process before the kernel has to kill it.
package enum HelperMemory {
    package static let livePage = 128 << 20
    package static let liveShare = ShareProcessMemory.limitBytes
}

/// A process started by `fieldlog run --helpers children` ends with it: `supervisor` is the pid it was given.
package func endWithSupervisor(_ supervisor: Int32) throws(DaemonError) {
    let rc = csandbox_end_with_parent(supervisor)
    guard rc == 0 else {
        throw DaemonError(rc == -ESRCH ? "the recorder (pid \(supervisor)) has ended" : String(cString: strerror(-rc)))
    }
}

/// The recorder as status.json describes it, read again at most twice a second: the page asks for it on every
/// look at the walk.
package final class RecorderState: Sendable {
    private let directory: String
    private let cached = Mutex<(at: Double, contents: StatusFile.Contents?)>((-1, nil))

    package init(directory: String) {
        self.directory = directory
    }

    /// The last status written, by a recorder running now or one that has ended.
    private var latest: StatusFile.Contents? {
        let now = monotonicSeconds()
        if let hit = cached.withLock({ $0.at >= 0 && now - $0.at < 0.5 ? $0 : nil }) { return hit.contents }
        let contents = StatusFile.read(directory: directory)
        cached.withLock { $0 = (now, contents) }
        return contents
    }

    /// The status of a recorder that is running now, else nil.
    package var current: StatusFile.Contents? {
        latest.flatMap { $0.isCurrent ? $0 : nil }
    }

    /// The live page's status line, from status.json and share-status.json. With no recorder running, the walk
    /// as the last one left it, and gpsd stopped.
    package func liveStatus() -> LiveStatus {
        guard let status = latest else {
            return LiveStatus(recording: RecordingStatus(), gpsd: .stopped, lastFixWall: nil, photos: nil)
        }
        guard status.isCurrent else {
            // The walk as the recorder left it: what it dropped or held was that session's.
            let walk = RecordingStatus(
                walkID: status.recording.walkID, distance: status.recording.distance,
                milestones: status.recording.milestones, lastFixTime: status.recording.lastFixTime)
            return LiveStatus(recording: walk, gpsd: .stopped, lastFixWall: status.lastFixWall, photos: nil)
        }
        let shares = ShareStatusFile.read(directory: directory).flatMap { contents in
            processExists(contents.pid)
                ? contents.destinations.enumerated().map { $1.pageLine(label: "destination \($0 + 1)") } : nil
        }
        return LiveStatus(
            recording: status.recording, gpsd: status.gpsd, lastFixWall: status.lastFixWall,
            photos: status.photos.flatMap(PhotoActivityState.init(statusRecord:)), shares: shares)
    }
}

extension ServiceGroup {
    /// `run()`, and SIGTERM or SIGINT shut the services down gracefully. The signals are taken over for the
    /// rest of the process.
    func runUntilSignalled(logger: Logger) async throws {
        // Signals are waited for here, not by the group (see ShutdownSignals).
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { [logger] in
                guard let signal = try await ShutdownSignals.first(of: [SIGTERM, SIGINT]) else { return }
                logger.info("signal \(signal): shutting down")
                await self.triggerGracefulShutdown()
            }
            try await self.run()
            tasks.cancelAll()
        }
    }
}
