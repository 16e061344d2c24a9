import Glibc
package import Logging
import WalkModel

/// Appends the recorder's journal lines and never loses one to a failing disk: when a write, a sync or
/// opening a file fails (full, I/O error, read-only, the directory removed), the lines are held in memory,
/// in order, and written as soon as the storage works again. Retries back off from 1 s to 30 s. The held
/// lines are bounded by `maxHeldBytes` (16 MiB: about 30 hours of fixes at 1 Hz); beyond it further fixes
/// are dropped and counted, milestones, photos and walk boundaries are always kept.
///
/// Lines written but not yet synced are kept too: after a failed fsync Linux may have dropped them from
/// its cache, so they are cut off the file and written again. Not thread-safe: the recorder's lock guards it.
package final class JournalWriter {
    private struct Line {
        var walk: String
        var bytes: [UInt8]
        var isFix: Bool
    }

    private struct OpenFile {
        var file: JournalFile
        /// Lines written since the last successful fsync.
        var unsynced: [Line] = []
    }

    private struct Failing {
        var trouble: StorageTrouble
        var heldBytes = 0
        var backoff: Duration = .seconds(1)
        var nextAttempt: ContinuousClock.Instant
        /// Whether `onStorageFull` was called in this episode.
        var relieved = false
    }

    package static let defaultMaxHeldBytes = 16 << 20
    package static let maxBackoff: Duration = .seconds(30)

    private let store: JournalStore
    private let logger: Logger
    private let maxHeldBytes: Int
    private let clock = ContinuousClock()
    private let wallClock: @Sendable () -> Double
    private var files: [String: OpenFile] = [:]
    private var held: [Line] = []
    private var failing: Failing?
    /// Called once each time the storage fills up, to free what may be freed (the thumbnail cache).
    package var onStorageFull: (@Sendable () -> Void)?
    /// The walk being recorded: its file stays open; others are closed once synced.
    package var current: String?

    package init(
        store: JournalStore, logger: Logger, maxHeldBytes: Int = JournalWriter.defaultMaxHeldBytes,
        wallClock: @escaping @Sendable () -> Double
    ) {
        self.store = store
        self.logger = logger
        self.maxHeldBytes = maxHeldBytes
        self.wallClock = wallClock
    }

    package var trouble: StorageTrouble? { failing?.trouble }

    /// Appends `line` to the journal of `walk`, or holds it while the storage fails.
    package func append(_ line: String, to walk: String, isFix: Bool = false) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(line.utf8.count + 1)
        bytes.append(contentsOf: line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        let line = Line(walk: walk, bytes: bytes, isFix: isFix)
        guard failing == nil else {
            hold(line)
            retryIfDue()
            return
        }
        do {
            try write(line)
        } catch {
            fail(error, walk: walk)
            hold(line)
        }
    }

    /// Makes everything appended so far durable, or retries the held lines if their time has come (or at
    /// once with `now`, before the process ends). Returns whether everything is on the storage device.
    @discardableResult
    package func sync(now: Bool = false) -> Bool {
        if failing != nil {
            if now { failing?.nextAttempt = clock.now }
            retryIfDue()
            return failing == nil
        }
        return syncFiles()
    }

    // MARK: - Writing

    private func write(_ line: Line) throws(JournalError) {
        let file = try file(for: line.walk).file
        try file.cutToLength()
        try file.append(line: line.bytes)
        // In place: a copy of the entry would copy its unsynced lines on every fix.
        files[line.walk]?.unsynced.append(line)
    }

    private func file(for walk: String) throws(JournalError) -> OpenFile {
        if let open = files[walk] { return open }
        let path = store.path(for: walk)
        // A crash may have torn the last line of any walk, not only the newest: late photos go to old walks.
        if access(path, F_OK) == 0 {
            let removed = try JournalFile.repairTornTail(path: path)
            if removed > 0 {
                logger.warning(
                    "repaired walk \(walk): removed a torn last line of \(removed) bytes", metadata: ["walk": "\(walk)"]
                )
            }
        } else {
            // The state directory may have been removed while fieldlog ran.
            try store.prepare()
        }
        let open = OpenFile(file: try JournalFile(path: path))
        files[walk] = open
        return open
    }

    private func syncFiles() -> Bool {
        for walk in files.keys.sorted() {
            guard var open = files[walk] else { continue }
            do {
                if open.file.isUnlinked {
                    // Removed behind our back: its bytes are still in the open file; put them back.
                    try store.prepare()
                    try open.file.relink()
                    logger.warning(
                        "walk \(walk)'s journal was removed while recording; written anew from memory",
                        metadata: ["walk": "\(walk)"])
                }
                if !open.unsynced.isEmpty {
                    try open.file.sync()
                    open.unsynced.removeAll()
                }
                files[walk] = walk == current ? open : nil
            } catch {
                // Whatever was not synced is written again later, in order, ahead of everything held; so are
                // lines another process appended meanwhile (a star), which cutting the file back removes.
                let others = open.file.dropUnsynced(own: open.unsynced.map(\.bytes))
                held.insert(contentsOf: open.unsynced + others.map { Line(walk: walk, bytes: $0, isFix: false) }, at: 0)
                open.unsynced.removeAll()
                files[walk] = open
                fail(error, walk: walk)
            }
        }
        return failing == nil
    }

    // MARK: - Failing and recovering

    private func fail(_ error: JournalError, walk: String) {
        let reason = error.description
        if var failing {
            failing.trouble.reason = reason
            failing.heldBytes = held.reduce(0) { $0 + $1.bytes.count }
            self.failing = failing
        } else {
            var metadata: Logger.Metadata = ["walk": "\(walk)", "path": "\(error.path)"]
            if let number = error.errno { metadata["errno"] = "\(number)" }
            logger.error(
                "storage failing: \(reason); the journal is held in memory (up to \(maxHeldBytes >> 20) MiB) and written when the storage works again",
                metadata: metadata)
            let since = wallClock()
            failing = Failing(
                trouble: StorageTrouble(since: since, reason: reason, heldRecords: 0, droppedFixes: 0),
                heldBytes: held.reduce(0) { $0 + $1.bytes.count }, nextAttempt: clock.now + .seconds(1))
            hold(eventLine(.storageFailed, message: reason, wall: since, walk: walk))
        }
        if error.errno == ENOSPC, failing?.relieved == false {
            failing?.relieved = true
            onStorageFull?()
        }
        failing?.trouble.heldRecords = held.count
    }

    private func hold(_ line: Line) {
        guard var failing else { return }
        if line.isFix && failing.heldBytes + line.bytes.count > maxHeldBytes {
            failing.trouble.droppedFixes += 1
        } else {
            held.append(line)
            failing.heldBytes += line.bytes.count
            failing.trouble.heldRecords = held.count
        }
        self.failing = failing
    }

    private func retryIfDue() {
        guard let due = failing?.nextAttempt, clock.now >= due else { return }
        var written = 0
        var lastError: (JournalError, String)?
        for line in held {
            do {
                try write(line)
                written += 1
            } catch {
                lastError = (error, line.walk)
                break
            }
        }
        held.removeFirst(written)
        if let (error, walk) = lastError {
            fail(error, walk: walk)
        } else {
            _ = syncFiles()
        }
        guard var failing else { return }
        if held.isEmpty {
            recover(failing.trouble)
            return
        }
        failing.heldBytes = held.reduce(0) { $0 + $1.bytes.count }
        failing.trouble.heldRecords = held.count
        failing.nextAttempt = clock.now + failing.backoff
        failing.backoff = min(failing.backoff * 2, Self.maxBackoff)
        self.failing = failing
    }

    private func recover(_ trouble: StorageTrouble) {
        failing = nil
        let seconds = Int((wallClock() - trouble.since).rounded())
        var message = "after \(seconds) s; every held record written"
        if trouble.droppedFixes > 0 {
            message =
                "after \(seconds) s; \(trouble.droppedFixes) fixes dropped (memory for held records full), every other record written"
        }
        logger.notice("storage works again \(message)")
        guard let walk = current ?? files.keys.sorted().last else { return }
        let line = eventLine(.storageRecovered, message: message, wall: wallClock(), walk: walk)
        do {
            try write(line)
        } catch {
            fail(error, walk: walk)
            hold(line)
            return
        }
        _ = syncFiles()
    }

    private func eventLine(_ kind: JournalEvent.Kind, message: String, wall: Double, walk: String) -> Line {
        let event = JournalEvent(kind: kind, wall: wall, message: message)
        var bytes = Array(JournalCodec.encode(.event(event)).utf8)
        bytes.append(UInt8(ascii: "\n"))
        return Line(walk: walk, bytes: bytes, isFix: false)
    }
}
