import FoundationEssentials
import Glibc
package import Logging
import NIOPosix
import ServiceLifecycle
import Synchronization
import SystemIO
package import Thumbnailing
package import WalkJournal
package import WalkModel

/// Finds a photo for every milestone, off the walk's path: the recorder never waits for the network. The
/// walk being recorded comes first, in milestone order, whatever happened before start-up; milestones of
/// other walks still waiting (after outages, or a source that was missing) follow, newest walk first, one
/// walk's journal read at a time. The walk index that lists them is built or repaired once recording has
/// begun, so that neither start-up nor memory grows with the number of walks stored. Each milestone is
/// served by the first source that finds a photo (`PhotoSourceChain`), the best of its candidates
/// (`PhotoPicker`). A milestone that cannot be served stays pending in the journal and is retried with
/// backoff, also after a restart; a source that is unusable (an invalid key) is passed over and reported.
package struct PhotoService: Service {
    package struct Pending: Sendable, Equatable {
        package var walkID: String
        package var milestone: Milestone
    }

    /// What reaches the serving loop: milestones from the recorder, and the walk index once built.
    private enum Arrival: Sendable {
        case milestone(Pending)
        case history([WalkSummary])
        /// No more milestones will come (`finishWhenIdle`).
        case end
    }

    /// Search radii in metres, widened step by step when nothing is near (Flickr's limit is below 32 km).
    package static let radii: [Double] = [100, 500, 2_000, 8_000, 31_000]
    /// Coarse or indoor photos are taken only once the search has widened this far without a better one.
    package static let fallbackReach = 2_000.0
    /// How long a replay (`--once`) still serves photos after gpsd has ended without a milestone served: without
    /// a network it would wait for ever. What is left stays pending in the journal for the next run.
    package static let defaultFinishWait: Duration = .seconds(30)

    private let sources: [PhotoSourceChain.Member]
    /// Where the photo outcomes and events go: the recorder, which journals them beside the fixes.
    private let journal: any JournalPort
    private let store: JournalStore
    private let thumbnails: any ThumbnailStore
    private let thumbnailer: any ThumbnailMaker
    private let logger: Logger
    private let arrivals = Mailbox<Arrival>()
    /// Gets an item when `finishWhenIdle` is called: serving then has `finishWait` left.
    private let finishing = Mailbox<Void>()
    /// Milestones given their outcome so far: a back-fill that keeps serving is not cut short.
    private let served = ServedCount()
    private let maxBackoff: Double
    private let finishWait: Duration
    /// What the service is doing now, for the live page.
    package let activity = PhotoActivity()

    /// One source. Reads nothing: the journals are read once the service runs.
    package init(
        source: any PhotoSource, sourceName: String, journal: any JournalPort, store: JournalStore,
        thumbnails: any ThumbnailStore, thumbnailer: any ThumbnailMaker, logger: Logger, maxBackoff: Double = 300,
        finishWait: Duration = defaultFinishWait
    ) throws(JournalError) {
        self.init(
            sources: [.init(name: sourceName, source: source)], journal: journal, store: store,
            thumbnails: thumbnails, thumbnailer: thumbnailer, logger: logger, maxBackoff: maxBackoff,
            finishWait: finishWait)
    }

    /// Sources in order of preference.
    package init(
        sources: [PhotoSourceChain.Member], journal: any JournalPort, store: JournalStore,
        thumbnails: any ThumbnailStore, thumbnailer: any ThumbnailMaker, logger: Logger, maxBackoff: Double = 300,
        finishWait: Duration = defaultFinishWait
    ) {
        self.sources = sources
        self.finishWait = finishWait
        self.journal = journal
        self.store = store
        self.thumbnails = thumbnails
        self.thumbnailer = thumbnailer
        self.logger = logger
        self.maxBackoff = maxBackoff
    }

    /// Ends the service once every queued milestone is served (a replay with `--once` is over), or once
    /// `finishWait` has passed without a milestone served, with the rest pending.
    package func finishWhenIdle() {
        arrivals.put(.end)
        finishing.put(())
    }

    /// Queues a milestone that has just been journaled.
    package func enqueue(_ milestone: Milestone, walkID: String) {
        arrivals.put(.milestone(Pending(walkID: walkID, milestone: milestone)))
    }

    package func run() async throws {
        // Shutdown cancels this task: in-flight requests are cancelled, pending milestones stay pending.
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await loadHistory() }
                await withTaskGroup(of: Void.self) { serving in
                    serving.addTask { await serve() }
                    serving.addTask { [finishing, served, finishWait] in
                        await finishing.wait()
                        // Ends after `finishWait` in which no milestone was served (offline, a source that fails).
                        var last = -1
                        while !Task.isCancelled, served.value != last {
                            last = served.value
                            try? await sleepOnEventLoop(for: finishWait)
                        }
                    }
                    await serving.next()
                    serving.cancelAll()
                }
                group.cancelAll()
            }
        }
    }

    /// The walk index, built or repaired off the cooperative pool while the walk is recorded and served.
    private func loadHistory() async {
        let summaries: [WalkSummary]
        do {
            summaries = try await NIOThreadPool.singleton.runIfActive { [store] in try WalkIndex.summaries(in: store) }
        } catch {
            logger.error("walk index: \(error); older walks' milestones wait for a later start")
            summaries = []
        }
        let waiting = summaries.filter { $0.pendingPhotos > 0 }
        if !waiting.isEmpty {
            logger.info(
                "\(waiting.reduce(0) { $0 + $1.pendingPhotos }) milestones of \(waiting.count) walks are waiting for a photo; the walk being recorded first"
            )
        }
        arrivals.put(.history(summaries))
    }

    private func serve() async {
        var queue = ServeQueue()
        var usable = sources
        var attempted = Set<String>()
        var backoff = 1.0
        var failing = false
        var ended = false
        defer {
            // Cut short by `finishWait` (not by a shutdown): say what the next run has to back-fill.
            if Task.isCancelled {
                for arrival in arrivals.take() {
                    switch arrival {
                    case let .milestone(item): queue.arrived(item.milestone, walkID: item.walkID)
                    case .end: ended = true
                    case .history: break
                    }
                }
                if ended {
                    let waiting = queue.waitingCount
                    logger.notice("\(waiting) milestones still wait for a photo; pending for the next run")
                }
            }
        }
        while !Task.isCancelled {
            for arrival in arrivals.take() {
                switch arrival {
                case let .milestone(item): queue.arrived(item.milestone, walkID: item.walkID)
                case let .history(summaries): queue.history(summaries)
                case .end: ended = true
                }
            }
            let current = journal.currentWalkID
            let item: Pending
            switch queue.next(current: current) {
            case let .read(walkID):
                queue.read(walkID, log: try? store.read(walkID))
                continue
            case .idle:
                if ended && queue.isEmpty { return }
                activity.set(.idle)
                await arrivals.wait()
                continue
            case let .serve(walkID, milestone):
                item = Pending(walkID: walkID, milestone: milestone)
            }
            let start = Attempt(
                picks: queue.walks[item.walkID]?.picks ?? WalkPicks(), sources: usable, attempted: attempted)
            guard
                let outcome = item.walkID == current
                    ? await attempt(item, start) : await attemptInBackground(item, start)
            else { continue }  // the walk being recorded has a new milestone: it goes first
            usable = outcome.sources
            attempted = outcome.attempted
            for id in outcome.picks.avoided { queue.avoid(id, walkID: item.walkID) }
            switch outcome.result {
            case let .success(record):
                journal.attach(record, toWalk: item.walkID)
                served.add()
                queue.served(item.milestone.index, walkID: item.walkID, photo: record.photo)
                backoff = 1
                if failing {
                    logger.info("photo sources answer again")
                    failing = false
                }
            case let .failure(error as PhotoSourceError) where error.kind == .fatal:
                // Every source is unusable: journaled milestones stay pending until a person fixes it.
                activity.set(.unusable(reason: error.message))
                while !ended && !Task.isCancelled {
                    await arrivals.wait()
                    ended = arrivals.take().contains { if case .end = $0 { true } else { false } }
                }
                return
            case let .failure(error):
                if !failing {
                    logger.warning(
                        "photo for milestone \(item.milestone.index) pending: \(error); retrying with backoff",
                        metadata: ["walk": "\(item.walkID)", "milestone": "\(item.milestone.index)"])
                    journal.note(
                        .error, message: "photo for milestone \(item.milestone.index) pending, retrying: \(error)",
                        toWalk: item.walkID)
                    failing = true
                }
                // Full jitter, so many devices coming back online do not retry in step.
                let delay = Double.random(in: backoff / 2...backoff)
                activity.set(
                    .backingOff(
                        milestone: item.milestone.index, reason: "\(error)", retry: Date().timeIntervalSince1970 + delay
                    ))
                await pause(seconds: delay, unlessNewerThan: item.walkID == current ? nil : item.walkID)
                backoff = min(backoff * 2, maxBackoff)
            }
        }
    }

    /// What serving one milestone started from, and what it learned (photos rejected, sources found
    /// unusable), whatever its result.
    private struct Attempt: Sendable {
        var picks: WalkPicks
        var sources: [PhotoSourceChain.Member]
        var attempted: Set<String>
        var result: Result<MilestonePhoto, any Error> = .failure(CancellationError())
    }

    private func attempt(_ item: Pending, _ start: Attempt) async -> Attempt {
        var attempt = start
        do {
            attempt.result = .success(
                try await photo(
                    for: item, picks: &attempt.picks, sources: &attempt.sources, attempted: &attempt.attempted))
        } catch {
            attempt.result = .failure(error)
        }
        return attempt
    }

    /// Whether an arrival is a milestone of another walk than `walkID`: the walk being recorded, since only
    /// the recorder hands milestones over.
    private static func isNewer(than walkID: String) -> @Sendable (Arrival) -> Bool {
        { arrival in
            if case let .milestone(newer) = arrival { return newer.walkID != walkID }
            return false
        }
    }

    /// Waits `seconds`, or less when `walkID` is set and another walk has a new milestone meanwhile.
    private func pause(seconds: Double, unlessNewerThan walkID: String?) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await sleepOnEventLoop(for: .seconds(seconds)) }
            if let walkID {
                group.addTask { [arrivals] in await arrivals.wait(for: Self.isNewer(than: walkID)) }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// A milestone of a walk not being recorded: served on what the budgets leave over, and given up (nil:
    /// the milestone stays pending) as soon as the walk being recorded has a new milestone.
    private func attemptInBackground(_ item: Pending, _ start: Attempt) async -> Attempt? {
        let isNewer = Self.isNewer(than: item.walkID)
        return await withTaskGroup(of: Attempt?.self) { group in
            group.addTask {
                await RequestBudget.$isBackground.withValue(true) { await attempt(item, start) }
            }
            group.addTask { [arrivals] in
                // Returns when a newer milestone comes, or when the attempt is done (cancelled).
                await arrivals.wait(for: isNewer)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// A photo from the first source that has one near the milestone, or "none nearby" when none has. A
    /// source that turns out unusable is dropped from `sources`, with one log line and a journal event;
    /// when none is left, the last one's error is thrown.
    private func photo(
        for item: Pending, picks: inout WalkPicks, sources: inout [PhotoSourceChain.Member],
        attempted: inout Set<String>
    ) async throws -> MilestonePhoto {
        var searched: [String] = []
        var position = 0
        while position < sources.count {
            let member = sources[position]
            do {
                if let found = try await photo(for: item, from: member, picks: &picks, attempted: &attempted) {
                    return found
                }
                searched.append("none within \(Self.describe(member.maxRadius)) on \(member.name)")
                position += 1
            } catch let error as PhotoSourceError where error.kind == .fatal {
                logger.error(
                    "photo source \(member.name) unusable: \(error.message)", metadata: ["source": "\(member.name)"])
                journal.note(.photoSourceUnavailable, message: "\(member.name): \(error.message)", toWalk: item.walkID)
                sources.remove(at: position)
                if sources.isEmpty { throw error }
            }
        }
        let last = sources.last
        logger.info(
            "milestone \(item.milestone.index): \(searched.joined(separator: "; "))",
            metadata: ["walk": "\(item.walkID)", "milestone": "\(item.milestone.index)"])
        var record = MilestonePhoto(
            milestone: item.milestone.index, source: last?.name ?? "none",
            outcome: .noneNearby(radius: last?.maxRadius ?? Self.radii.last!))
        record.why = searched.joined(separator: "; ")
        return record
    }

    /// The best usable photo `member` has near the milestone, widening the search until one is found; nil
    /// when it has none within its widest radius. Each photo is journaled (synced) as attempted before its
    /// first decode in this process, so that one that takes the recorder down with it is skipped after two
    /// such attempts. Photos found unusable join `picks.avoided`, so that a retry after a network error
    /// does not fetch them again.
    private func photo(
        for item: Pending, from member: PhotoSourceChain.Member, picks: inout WalkPicks, attempted: inout Set<String>
    ) async throws -> MilestonePhoto? {
        let milestone = item.milestone
        for radius in member.radii {
            activity.set(.searching(milestone: milestone.index))
            let found = try await member.source.search(
                latitude: milestone.latitude, longitude: milestone.longitude, radius: radius)
            for candidate in found where !picks.avoided.contains(candidate.id) {
                if let reason = candidate.skipReason {
                    reject(candidate, because: reason, from: member.name, into: &picks.avoided, walkID: item.walkID)
                }
            }
            let choices = PhotoPicker.rank(
                found, latitude: milestone.latitude, longitude: milestone.longitude, radius: radius, picks: picks)
            let widened = radius >= Self.fallbackReach || radius == member.radii.last
            for choice in choices where (!choice.isFallback || widened) && !picks.avoided.contains(choice.candidate.id)
            {
                let candidate = choice.candidate
                do {
                    activity.set(.downloading(milestone: milestone.index))
                    let bytes = try await member.source.image(of: candidate, limit: PhotoWorker.largestImage)
                    if attempted.insert(candidate.id).inserted {
                        journal.note(.photoAttempt, message: candidate.id, toWalk: item.walkID)
                    }
                    let thumbnail = try await thumbnailer.thumbnail(of: bytes)
                    let key = cacheKey(for: candidate, source: member.name)
                    try await thumbnails.store(key: key, bytes: thumbnail.jpeg)
                    logger.info(
                        "milestone \(milestone.index): photo \(candidate.id) from \(member.name), \(Int(choice.distance)) m away: \(choice.why)",
                        metadata: [
                            "walk": "\(item.walkID)", "milestone": "\(milestone.index)", "source": "\(member.name)",
                            "photo": "\(candidate.id)",
                        ])
                    var record = MilestonePhoto(
                        milestone: milestone.index, source: member.name,
                        outcome: .found(candidate, distance: choice.distance, cacheKey: key))
                    record.why = choice.why + " within \(Self.describe(radius))"
                    return record
                } catch let error as PhotoSourceError where error.kind == .permanent {
                    reject(
                        candidate, because: error.message, from: member.name, into: &picks.avoided, walkID: item.walkID)
                } catch let error as ThumbnailError {
                    reject(
                        candidate, because: error.message, from: member.name, into: &picks.avoided, walkID: item.walkID)
                }
            }
        }
        return nil
    }

    /// "500 m", "31 km".
    private static func describe(_ metres: Double) -> String {
        metres < 1_000 ? "\(Int(metres)) m" : "\(Int(metres / 1_000)) km"
    }

    /// `source-id`, or `source-<hash of id>` when that would be longer than a valid key.
    private func cacheKey(for candidate: PhotoCandidate, source: String) -> String {
        let key = source + "-" + candidate.id
        guard !PhotoCandidate.isValidID(key) else { return key }
        // FNV-1a: stable across runs, unlike Swift's seeded Hasher.
        let hash = candidate.id.utf8.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        return source + "-" + String(hash, radix: 16)
    }

    /// A photo that cannot be used is journaled as an error and skipped; the next candidate is tried.
    private func reject(
        _ candidate: PhotoCandidate, because reason: String, from source: String, into rejected: inout Set<String>,
        walkID: String
    ) {
        rejected.insert(candidate.id)
        logger.warning(
            "photo \(candidate.id) skipped: \(reason)",
            metadata: ["walk": "\(walkID)", "source": "\(source)", "photo": "\(candidate.id)"])
        journal.note(.error, message: "photo \(candidate.id) from \(source) skipped: \(reason)", toWalk: walkID)
    }
}

/// How many milestones the photo service has served, read by its finishing task.
private final class ServedCount: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}
