import FoundationEssentials
import Glibc
package import Logging
import Synchronization
package import WalkJournal
package import WalkModel

/// Turns a stream of fixes into walk journals: starts, resumes and ends walks, and decides what must be on
/// disk when. One lock makes it safe from any thread: the gpsd reader thread records each fix itself, the
/// photo service attaches photos from its task. Storage faults never reach its callers: the journal
/// writer holds records in memory while the disk fails and writes them, in order, when it works again.
package final class WalkRecorder: JournalPort {
    package let store: JournalStore
    package let limits: WalkLimits
    private let core: Mutex<Core>

    /// What the lock guards: all the recorder changes, and the little its work needs besides.
    fileprivate struct Core {
        let store: JournalStore
        let limits: WalkLimits
        let logger: Logger
        /// Fixes are synced at least this often (monotonic time); milestones and walk boundaries at once.
        /// Every 2 s was a fifth of the recorder's CPU at 1 Hz and a flash write every 2 s; 5 s keeps what a power
        /// cut loses to about 6 s of track.
        let syncInterval: Duration
        let clock: ContinuousClock
        let writer: JournalWriter
        var collapser = EpochCollapser()
        var walk: OpenWalk?
        /// An interrupted walk found at start-up, resumed or closed by the first fix.
        var interrupted: (log: WalkLog, restoration: WalkTracker.Restoration)?
        var lastSync: ContinuousClock.Instant
        /// The monotonic clock's origin for the time guard.
        let started: ContinuousClock.Instant
        /// Holds fixes whose GPS time cannot be believed (see GPSTimeGuard).
        var timeGuard: GPSTimeGuard
        /// Fixes dropped this session for an implausible GPS time, and the GPS time of the last such episode's first.
        var suspectFixes = 0
        var lastSuspectTime: Double?
        /// Fixes dropped this session for anything else (accuracy, no position, a jump, time not advancing).
        var rejectedFixes = 0
        var unsynced = false
        /// Events that happened before a walk file existed, journaled into the walk when it starts.
        var earlyEvents: [JournalEvent] = []
        /// Called with each milestone once it is on disk, under the lock: it must not call back into the recorder.
        var onMilestone: (@Sendable (Milestone, _ walkID: String) -> Void)?

        init(
            store: JournalStore, limits: WalkLimits, logger: Logger, syncInterval: Duration, clock: ContinuousClock,
            writer: JournalWriter, started: ContinuousClock.Instant, timeGuard: GPSTimeGuard,
            interrupted: (log: WalkLog, restoration: WalkTracker.Restoration)?
        ) {
            self.store = store
            self.limits = limits
            self.logger = logger
            self.syncInterval = syncInterval
            self.clock = clock
            self.writer = writer
            self.lastSync = started
            self.started = started
            self.timeGuard = timeGuard
            self.interrupted = interrupted
        }
    }

    fileprivate struct OpenWalk {
        var id: String
        var tracker: WalkTracker
    }

    /// Opens the state directory and repairs the newest walk if a crash cut it short. Fails only when the
    /// state directory cannot be created, written or read at all.
    package init(
        store: JournalStore, limits: WalkLimits, logger: Logger, syncInterval: Duration = .seconds(5),
        maxHeldBytes: Int = 16 << 20
    ) throws(JournalError) {
        self.store = store
        self.limits = limits
        let writer = JournalWriter(store: store, logger: logger, maxHeldBytes: maxHeldBytes) {
            Date().timeIntervalSince1970
        }
        let clock = ContinuousClock()
        let started = clock.now
        var timeGuard = GPSTimeGuard(lastGoodTime: nil, idleGap: limits.idleGap)
        var interrupted: (log: WalkLog, restoration: WalkTracker.Restoration)?
        try store.prepare()
        store.removeLeftovers()
        if let latest = try store.walkIDs().last {
            let removed = try JournalFile.repairTornTail(path: store.path(for: latest))
            if removed > 0 {
                logger.warning(
                    "repaired walk \(latest): removed a torn last line of \(removed) bytes",
                    metadata: ["walk": "\(latest)"])
            }
            var restoration = WalkTracker.Restoration()
            let log = try store.read(latest) { restoration.add($0) }
            // The receiver's last good time: a fix before it, or far after it, is held until others confirm it.
            timeGuard = GPSTimeGuard(lastGoodTime: log.lastTime, idleGap: limits.idleGap)
            if !log.damagedLines.isEmpty {
                let more =
                    log.damagedLineCount > log.damagedLines.count
                    ? " and \(log.damagedLineCount - log.damagedLines.count) more" : ""
                logger.warning(
                    "walk \(latest): skipped damaged lines \(log.damagedLines)\(more)", metadata: ["walk": "\(latest)"])
            }
            if log.isOpen, log.lastPoint != nil {
                interrupted = (log, restoration)
                logger.info(
                    "walk \(latest) was interrupted at \(wholeMetres(log.distance)) m; it resumes if fixes continue within \(Int(limits.idleGap)) s",
                    metadata: ["walk": "\(latest)"])
            }
        }
        core = Mutex(
            Core(
                store: store, limits: limits, logger: logger, syncInterval: syncInterval, clock: clock, writer: writer,
                started: started, timeGuard: timeGuard, interrupted: interrupted))
    }

    /// Registers who acts on milestones (photo lookup); it is called once the milestone is synced, or held
    /// in memory while the storage fails (photos are still looked up meanwhile).
    package func setMilestoneHandler(_ handler: @escaping @Sendable (Milestone, _ walkID: String) -> Void) {
        core.withLock { $0.onMilestone = handler }
    }

    /// Registers what frees space when the storage is full (the thumbnail cache); called once per episode.
    package func setStorageFullHandler(_ handler: @escaping @Sendable () -> Void) {
        core.withLock { $0.writer.onStorageFull = handler }
    }

    package var status: RecordingStatus {
        core.withLock { $0.currentStatus }
    }

    /// Feeds one fix from gpsd. Fixes without GPS time are useless to a walk on GPS time and are dropped
    /// before they get here.
    package func record(_ fix: Fix) {
        core.withLock { core in
            if let finished = core.collapser.add(fix) {
                core.process(finished)
            }
        }
    }

    /// Journals a recorder event (gpsd state, errors) with the system clock as its wall time.
    package func note(_ kind: JournalEvent.Kind, message: String? = nil) {
        core.withLock { $0.journal(kind, message: message) }
    }

    package var currentWalkID: String? { status.walkID }

    /// Journals an event into walk `id`, which may have ended since, and syncs it.
    package func note(_ kind: JournalEvent.Kind, message: String? = nil, toWalk id: String) {
        core.withLock { core in
            let event = JournalEvent(kind: kind, wall: Date().timeIntervalSince1970, message: message)
            core.writer.append(JournalCodec.encode(.event(event)), to: id)
            core.sync()
        }
    }

    /// Called when gpsd's stream pauses or ends, or reports without a fix: the last epoch is complete, and
    /// unsynced fixes are synced if due.
    package func flush() {
        core.withLock { core in
            if let finished = core.collapser.flush() {
                core.process(finished)
            }
            core.syncIfDue()
        }
    }

    /// Ends this session (not the walk: a later session may resume it) with everything on disk if the
    /// storage allows. Returns false when records could not be written: they are lost with the process.
    @discardableResult
    package func finishSession(reason: String) -> Bool {
        core.withLock { core in
            if let finished = core.collapser.flush() {
                core.process(finished)
            }
            if let episode = core.timeGuard.finish() {
                core.noteSuspect(episode)
            }
            core.journal(.sessionEnd, message: reason)
            if core.writer.sync(now: true) { return true }
            if let trouble = core.writer.trouble {
                core.logger.critical(
                    "storage still failing at exit (\(trouble.reason)): \(trouble.heldRecords) journal records held in memory are lost"
                )
            }
            return false
        }
    }

    /// Journals a milestone's photo outcome into its walk, which may have ended since, and syncs it: a
    /// photo recorded is a photo not fetched again.
    package func attach(_ photo: MilestonePhoto, toWalk id: String) {
        core.withLock { core in
            core.writer.append(JournalCodec.encode(.photo(photo)), to: id)
            core.sync()
        }
    }
}

extension WalkRecorder.Core {
    var currentStatus: RecordingStatus {
        var status: RecordingStatus
        if let walk {
            status = RecordingStatus(
                walkID: walk.id, distance: walk.tracker.distance, milestones: walk.tracker.milestoneCount,
                lastFixTime: walk.tracker.lastPoint?.fix.time)
        } else {
            status = RecordingStatus(
                walkID: interrupted?.log.id, distance: interrupted?.log.distance ?? 0,
                milestones: interrupted?.log.milestones.count ?? 0, lastFixTime: interrupted?.log.lastPoint?.fix.time)
        }
        status.storage = writer.trouble
        status.suspectFixes = suspectFixes
        status.lastSuspectTime = lastSuspectTime
        status.rejectedFixes = rejectedFixes
        return status
    }

    mutating func journal(_ kind: JournalEvent.Kind, message: String?) {
        let event = JournalEvent(
            kind: kind, time: walk?.tracker.lastPoint?.fix.time, wall: Date().timeIntervalSince1970,
            message: message)
        guard let walk else {
            earlyEvents.append(event)
            return
        }
        writer.append(JournalCodec.encode(.event(event)), to: walk.id)
        unsynced = true
    }

    mutating func syncIfDue() {
        if unsynced && clock.now - lastSync >= syncInterval {
            sync()
        }
    }

    mutating func sync() {
        writer.sync()
        unsynced = false
        lastSync = clock.now
    }

    mutating func process(_ reported: Fix) {
        let fix = reported.bounded
        if let flaw = WalkTracker.flaw(of: fix, limits: limits) {
            rejectedFixes += 1
            logger.debug("fix dropped: \(flaw)")
            return
        }
        let elapsed = clock.now - started
        let monotonic = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let outcome = timeGuard.check(fix, monotonic: monotonic)
        if let episode = outcome.episode {
            noteSuspect(episode)
        }
        if let jump = outcome.jump {
            let message =
                "GPS time moved from \(Timestamp.format(jump.from)) to \(Timestamp.format(jump.to)), "
                + "confirmed by \(jump.fixes) fixes in a row"
            logger.info("\(message)")
            journal(.timeJump, message: message)
        }
        for accepted in outcome.accepted {
            walkOn(accepted)
        }
    }

    /// One suspect episode: counted, logged as a warning and journaled once.
    mutating func noteSuspect(_ episode: GPSTimeGuard.Episode) {
        suspectFixes += episode.dropped
        // Any number may come as a time; one too large for a date (or NaN) is shown as the number.
        let formattable = abs(episode.firstTime) < 1e12
        lastSuspectTime = formattable ? episode.firstTime : nil
        let noun = episode.dropped == 1 ? "fix" : "fixes"
        let first = formattable ? Timestamp.format(episode.firstTime) : String(episode.firstTime)
        let message =
            "\(episode.dropped) \(noun) dropped for an implausible GPS time, from \(first) "
            + "(\(episode.suspicion.rawValue))"
        logger.warning("\(message)")
        journal(.timeSuspect, message: message)
    }

    /// Feeds a fix whose time is believed to the walk.
    mutating func walkOn(_ fix: Fix) {
        if walk == nil {
            open(for: fix)
        } else if let last = walk?.tracker.lastPoint?.fix.time, fix.time - last > limits.idleGap || fix.time <= last {
            // A long pause, or the receiver's time confirmed to have moved back: the walk so far is over.
            endWalk()
            open(for: fix)
        }
        guard let id = walk?.id else { return }
        // In place: a copy of the walk would copy the tracker's recent fixes on every fix.
        let events = walk!.tracker.ingest(fix)
        for event in events {
            switch event {
            case let .segment(segment):
                writer.append(JournalCodec.encode(.segment(segment)), to: id)
            case let .point(point):
                writer.append(JournalCodec.encode(.point(point)), to: id, isFix: true)
            case let .milestone(milestone):
                writer.append(JournalCodec.encode(.milestone(milestone)), to: id)
                sync()
                logger.info(
                    "milestone \(milestone.index) at \(Int(milestone.distance)) m",
                    metadata: ["walk": "\(id)", "milestone": "\(milestone.index)"])
                onMilestone?(milestone, id)
                continue
            case let .rejected(_, reason):
                rejectedFixes += 1
                logger.debug("fix dropped: \(reason)")
                continue
            }
            unsynced = true
        }
        syncIfDue()
    }

    /// Opens the walk `fix` belongs to: the interrupted one if it continues in time, else a new one.
    mutating func open(for fix: Fix) {
        if let (log, restoration) = interrupted, let last = log.lastTime {
            interrupted = nil
            let pause = fix.time - last
            // A journal whose distance no walk could have (a speed of 1e308 once reached it) is not resumed as
            // truth: it is closed at the distance its own fixes give under today's rules.
            if let implausible = WalkTracker.implausibleDistance(of: log, limits: limits) {
                let message =
                    "not resumed: \(implausible.reason); closed at the \(Int(implausible.recomputed)) m its fixes give"
                logger.warning("walk \(log.id) \(message)", metadata: ["walk": "\(log.id)"])
                let event = JournalEvent(kind: .error, time: last, wall: Date().timeIntervalSince1970, message: message)
                writer.append(JournalCodec.encode(.event(event)), to: log.id)
                writer.append(JournalCodec.encode(.walkEnd(time: last, distance: implausible.recomputed)), to: log.id)
                sync()
            } else if pause > 0 && pause <= limits.idleGap {
                let tracker = WalkTracker(limits: limits, restoring: restoration, milestones: log.milestones)
                walk = WalkRecorder.OpenWalk(id: log.id, tracker: tracker)
                writer.current = log.id
                logger.info(
                    "resuming walk \(log.id) after \(Int(pause)) s at \(wholeMetres(log.distance)) m",
                    metadata: ["walk": "\(log.id)"])
                journal(.resumed, message: "after \(Int(pause)) s")
                writeEarlyEvents()
                return
            } else {
                writer.append(JournalCodec.encode(.walkEnd(time: last, distance: log.distance)), to: log.id)
                sync()
                logger.info(
                    "closed interrupted walk \(log.id) at \(wholeMetres(log.distance)) m",
                    metadata: ["walk": "\(log.id)"])
            }
        }
        let id = store.newWalkID(startingAt: fix.time)
        writer.current = id
        writer.append(JournalCodec.encode(.walkStart(id: id, time: fix.time, every: limits.milestoneEvery)), to: id)
        walk = WalkRecorder.OpenWalk(id: id, tracker: WalkTracker(limits: limits))
        logger.info("walk \(id) started", metadata: ["walk": "\(id)"])
        writeEarlyEvents()
        sync()
    }

    mutating func writeEarlyEvents() {
        guard let walk else { return }
        for event in earlyEvents {
            writer.append(JournalCodec.encode(.event(event)), to: walk.id)
        }
        earlyEvents.removeAll()
    }

    mutating func endWalk() {
        guard let current = walk, let last = current.tracker.lastPoint else { return }
        writer.append(
            JournalCodec.encode(.walkEnd(time: last.fix.time, distance: current.tracker.distance)), to: current.id)
        sync()
        logger.info(
            "walk \(current.id) ended at \(Int(current.tracker.distance)) m", metadata: ["walk": "\(current.id)"])
        walk = nil
        writer.current = nil
    }
}

/// Metres as a whole number for the log; a journal may hold any number, which `Int` cannot always take.
private func wholeMetres(_ value: Double) -> String {
    abs(value) < 1e15 ? String(Int(value)) : String(value)
}
