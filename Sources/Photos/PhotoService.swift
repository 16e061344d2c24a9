import FoundationEssentials
import Glibc
import NIOConcurrencyHelpers
import Logging
import ServiceLifecycle
import Recording
import SystemIO
import Thumbnailing
import WalkJournal
import WalkModel

/// Finds a photo for every milestone, off the walk's path: the recorder never waits for the network. The
/// walk being recorded comes first, in milestone order; milestones of older walks still waiting (after
/// outages, or a source that was missing) are served after it, newest walk first, one walk's journal read
/// at a time, so that neither start-up nor memory grows with the number of walks stored. A milestone that
/// cannot be served stays pending in the journal and is retried with backoff, also after a restart; when
/// the source is unusable (an invalid key) it stops asking and says so.
public struct PhotoService: Service {
    public struct Pending: Sendable, Equatable {
        public var walkID: String
        public var milestone: Milestone
    }

    /// Search radii in metres, widened step by step when nothing is near (Flickr's limit is below 32 km).
    public static let radii: [Double] = [100, 500, 2_000, 8_000, 31_000]

    private let source: any PhotoSource
    private let sourceName: String
    private let recorder: WalkRecorder
    private let store: JournalStore
    private let thumbnails: any ThumbnailStore
    private let thumbnailer: any ThumbnailMaker
    private let logger: Logger
    /// The newest walk if it is still open (being recorded, or about to be resumed): served first.
    private let latest: WalkLog?
    /// Older walks with milestones still waiting, newest first: served when nothing newer waits.
    private let olderWalks: [WalkSummary]
    private let milestones: AsyncStream<Pending>
    private let continuation: AsyncStream<Pending>.Continuation
    private let maxBackoff: Double
    /// What the service is doing now, for the live page.
    public let activity = PhotoActivity()

    /// Reads the newest journal, and the walk index for older walks still waiting for photos.
    public init(
        source: any PhotoSource, sourceName: String, recorder: WalkRecorder, store: JournalStore,
        thumbnails: any ThumbnailStore, thumbnailer: any ThumbnailMaker, logger: Logger, maxBackoff: Double = 300
    ) throws(JournalError) {
        self.source = source
        self.sourceName = sourceName
        self.recorder = recorder
        self.store = store
        self.thumbnails = thumbnails
        self.thumbnailer = thumbnailer
        self.logger = logger
        self.maxBackoff = maxBackoff
        var walks = try WalkIndex.summaries(in: store)
        // An open newest walk is the one being recorded, or about to be resumed.
        if let newest = walks.last, newest.ended == nil {
            latest = try store.read(newest.id)
            walks.removeLast()
        } else {
            latest = nil
        }
        olderWalks = walks.filter { $0.pendingPhotos > 0 }.reversed()
        (milestones, continuation) = AsyncStream.makeStream()
    }

    /// Ends the service once every queued milestone is served (a replay with `--once` is over).
    public func finishWhenIdle() {
        continuation.finish()
    }

    /// Queues a milestone that has just been journaled.
    public func enqueue(_ milestone: Milestone, walkID: String) {
        continuation.yield(Pending(walkID: walkID, milestone: milestone))
    }

    public func run() async throws {
        let waiting = (latest?.pendingMilestones.count ?? 0) + olderWalks.reduce(0) { $0 + $1.pendingPhotos }
        if waiting > 0 {
            logger.info(
                "\(waiting) milestones are waiting for a photo (\(olderWalks.count) older walks); the newest walk first")
        }
        // Shutdown cancels this task: in-flight requests are cancelled, pending milestones stay pending.
        await cancelWhenGracefulShutdown {
            await serve()
        }
    }

    /// Photos not to offer a walk again: used, rejected, or suspected of killing the recorder.
    private struct Avoid {
        var walks: [String: Set<String>] = [:]

        mutating func add(_ log: WalkLog) {
            walks[log.id, default: []].formUnion(log.usedPhotoIDs.union(log.suspectPhotoIDs))
        }
    }

    private func serve() async {
        var live: [Pending] = latest.map { log in log.pendingMilestones.map { Pending(walkID: log.id, milestone: $0) } } ?? []
        var older: [Pending] = []
        var olderWalks = self.olderWalks[...]
        var avoid = Avoid()
        if let latest { avoid.add(latest) }
        var attempted = Set<String>()
        // New milestones arrive on a stream; a task moves them into a box the loop can look at without waiting.
        let arrivals = Arrivals()
        let listener = Task { [milestones] in
            for await item in milestones { arrivals.put(item) }
            arrivals.finish()
        }
        defer { listener.cancel() }
        var backoff = 1.0
        var failing = false
        while !Task.isCancelled {
            live += arrivals.take()
            let item: Pending
            if let first = live.first {
                item = first
            } else if let first = older.first {
                item = first
            } else if let summary = olderWalks.popFirst() {
                // One older walk at a time: its journal is read now and let go when it is served.
                guard let log = try? store.read(summary.id) else { continue }
                avoid.add(log)
                older = log.pendingMilestones.map { Pending(walkID: log.id, milestone: $0) }
                continue
            } else if arrivals.isFinished {
                return
            } else {
                activity.set(.idle)
                await arrivals.wait()
                continue
            }
            do {
                var avoided = avoid.walks[item.walkID, default: []]
                defer { avoid.walks[item.walkID] = avoided }
                let record = try await photo(for: item, avoiding: &avoided, attempted: &attempted)
                recorder.attach(record, toWalk: item.walkID)
                if let id = record.photo?.id { avoided.insert(id) }
                if live.first == item { live.removeFirst() } else { older.removeFirst() }
                backoff = 1
                if failing {
                    logger.info("photo source \(sourceName) answers again")
                    failing = false
                }
            } catch let error as PhotoSourceError where error.kind == .fatal {
                activity.set(.unusable(reason: error.message))
                logger.error("photo source \(sourceName) unusable: \(error.message); milestones stay pending")
                recorder.note(.photoSourceUnavailable, message: error.message)
                // Keep draining the stream so nothing blocks; journaled milestones stay pending.
                while !arrivals.isFinished && !Task.isCancelled {
                    _ = arrivals.take()
                    await arrivals.wait()
                }
                return
            } catch {
                if !failing {
                    logger.warning("photo for milestone \(item.milestone.index) pending: \(error); retrying with backoff")
                    recorder.note(.error, message: "photo for milestone \(item.milestone.index) pending, retrying: \(error)", toWalk: item.walkID)
                    failing = true
                }
                // Full jitter, so many devices coming back online do not retry in step.
                let delay = Double.random(in: backoff / 2...backoff)
                activity.set(.backingOff(
                    milestone: item.milestone.index, reason: "\(error)", retry: Date().timeIntervalSince1970 + delay))
                try? await sleepOnEventLoop(for: .seconds(delay))
                backoff = min(backoff * 2, maxBackoff)
            }
        }
    }

    /// The nearest usable photo not yet used in the walk, widening the search until one is found. Each photo
    /// is journaled (synced) as attempted before its first decode in this process, so that one that takes
    /// the recorder down with it is skipped after two such attempts.
    /// Photos found unusable join `avoided`, so that a retry after a network error does not fetch them again.
    private func photo(for item: Pending, avoiding avoided: inout Set<String>, attempted: inout Set<String>)
        async throws -> MilestonePhoto
    {
        let milestone = item.milestone
        for radius in Self.radii {
            activity.set(.searching(milestone: milestone.index))
            let candidates = try await source.search(
                latitude: milestone.latitude, longitude: milestone.longitude, radius: radius)
                .filter { !avoided.contains($0.id) }
                .map { ($0, Geodesy.distance(milestone.latitude, milestone.longitude, $0.latitude, $0.longitude)) }
                .sorted { $0.1 < $1.1 }
            for (candidate, distance) in candidates where !avoided.contains(candidate.id) {
                do {
                    activity.set(.downloading(milestone: milestone.index))
                    let bytes = try await source.image(of: candidate, limit: PhotoWorker.largestImage)
                    if attempted.insert(candidate.id).inserted {
                        recorder.note(.photoAttempt, message: candidate.id, toWalk: item.walkID)
                    }
                    let thumbnail = try await thumbnailer.thumbnail(of: bytes)
                    let key = cacheKey(for: candidate)
                    try await thumbnails.store(key: key, bytes: thumbnail.jpeg)
                    logger.info("milestone \(milestone.index): photo \(candidate.id), \(Int(distance)) m away")
                    return MilestonePhoto(
                        milestone: milestone.index, source: sourceName,
                        outcome: .found(candidate, distance: distance, cacheKey: key))
                } catch let error as PhotoSourceError where error.kind == .permanent {
                    reject(candidate, because: error.message, into: &avoided, walkID: item.walkID)
                } catch let error as ThumbnailError {
                    reject(candidate, because: error.message, into: &avoided, walkID: item.walkID)
                }
            }
        }
        logger.info("milestone \(milestone.index): no photo within \(Int(Self.radii.last! / 1000)) km")
        return MilestonePhoto(
            milestone: milestone.index, source: sourceName, outcome: .noneNearby(radius: Self.radii.last!))
    }

    /// `source-id`, or `source-<hash of id>` when that would be longer than a valid key.
    private func cacheKey(for candidate: PhotoCandidate) -> String {
        let key = sourceName + "-" + candidate.id
        guard !PhotoCandidate.isValidID(key) else { return key }
        // FNV-1a: stable across runs, unlike Swift's seeded Hasher.
        let hash = candidate.id.utf8.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        return sourceName + "-" + String(hash, radix: 16)
    }

    /// A photo that cannot be used is journaled as an error and skipped; the next candidate is tried.
    private func reject(_ candidate: PhotoCandidate, because reason: String, into rejected: inout Set<String>, walkID: String) {
        rejected.insert(candidate.id)
        logger.warning("photo \(candidate.id) skipped: \(reason)")
        recorder.note(.error, message: "photo \(candidate.id) from \(sourceName) skipped: \(reason)", toWalk: walkID)
    }
}

/// Milestones handed over from the recorder, for a loop that must not wait on them while it has work.
private final class Arrivals: @unchecked Sendable {
    private let lock = NIOLock()
    private var items: [PhotoService.Pending] = []
    private var finished = false
    private var cancelled = false
    private var waiter: CheckedContinuation<Void, Never>?

    func put(_ item: PhotoService.Pending) {
        lock.withLock {
            items.append(item)
            return waiter.take()
        }?.resume()
    }

    func finish() {
        lock.withLock {
            finished = true
            return waiter.take()
        }?.resume()
    }

    var isFinished: Bool { lock.withLock { finished && items.isEmpty } }

    func take() -> [PhotoService.Pending] {
        lock.withLock {
            defer { items.removeAll() }
            return items
        }
    }

    /// Returns when an item arrives, the stream ends or the task is cancelled (at once if one already
    /// happened).
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready: Bool = lock.withLock {
                    if !items.isEmpty || finished || cancelled { return true }
                    waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            lock.withLock {
                cancelled = true
                return waiter.take()
            }?.resume()
        }
    }
}
