import Logging
import ServiceLifecycle

/// Where thumbnails go: the bounded on-device cache.
public protocol ThumbnailStore: Sendable {
    func store(key: String, bytes: [UInt8]) async throws
}

extension ThumbnailCache: ThumbnailStore {}

/// Finds a photo for every milestone, in milestone order, off the walk's path: the recorder never waits
/// for the network. A milestone that cannot be served stays pending in the journal and is retried with
/// backoff, also after a restart; when the source is unusable (an invalid key) it stops asking and says so.
public struct PhotoService: Service {
    public struct Pending: Sendable, Equatable {
        public var walkID: String
        public var milestone: Milestone
    }

    /// Search radii in metres, widened step by step when nothing is near (Flickr's limit is below 32 km).
    public static let radii: [Double] = [100, 500, 2_000, 8_000, 31_000]
    /// Largest image accepted from a source.
    static let imageLimit = 20 << 20

    private let source: any PhotoSource
    private let sourceName: String
    private let recorder: WalkRecorder
    private let thumbnails: any ThumbnailStore
    private let thumbnailer: Thumbnailer
    private let logger: Logger
    private let backlog: [Pending]
    private let usedAtStart: [String: Set<String>]
    private let milestones: AsyncStream<Pending>
    private let continuation: AsyncStream<Pending>.Continuation
    private let maxBackoff: Double

    /// Reads the journals for milestones still waiting for a photo, and photos already used per walk.
    public init(
        source: any PhotoSource, sourceName: String, recorder: WalkRecorder, store: JournalStore,
        thumbnails: any ThumbnailStore, thumbnailer: Thumbnailer, logger: Logger, maxBackoff: Double = 300
    ) throws(JournalError) {
        self.source = source
        self.sourceName = sourceName
        self.recorder = recorder
        self.thumbnails = thumbnails
        self.thumbnailer = thumbnailer
        self.logger = logger
        self.maxBackoff = maxBackoff
        var backlog: [Pending] = []
        var used: [String: Set<String>] = [:]
        for id in try store.walkIDs() {
            let log = try store.read(id)
            backlog += log.pendingMilestones.map { Pending(walkID: id, milestone: $0) }
            used[id] = log.usedPhotoIDs
        }
        self.backlog = backlog
        usedAtStart = used
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
        if !backlog.isEmpty {
            logger.info("\(backlog.count) milestones are waiting for a photo; serving them in order")
        }
        // Shutdown cancels this task: in-flight requests are cancelled, pending milestones stay pending.
        await cancelWhenGracefulShutdown {
            await serve()
        }
    }

    private func serve() async {
        var queue = backlog
        var used = usedAtStart
        var incoming = milestones.makeAsyncIterator()
        var backoff = 1.0
        var failing = false
        while !Task.isCancelled {
            if queue.isEmpty {
                guard let next = await incoming.next() else { return }
                queue.append(next)
                continue
            }
            let item = queue[0]
            do {
                let record = try await photo(for: item, excluding: used[item.walkID, default: []])
                try recorder.attach(record, toWalk: item.walkID)
                if let id = record.photo?.id { used[item.walkID, default: []].insert(id) }
                queue.removeFirst()
                backoff = 1
                if failing {
                    logger.info("photo source \(sourceName) answers again")
                    failing = false
                }
            } catch let error as PhotoSourceError where error.kind == .fatal {
                logger.error("photo source \(sourceName) unusable: \(error.message); milestones stay pending")
                try? recorder.note(.photoSourceUnavailable, message: error.message)
                // Keep draining the stream so nothing blocks; journaled milestones stay pending.
                while await incoming.next() != nil {}
                return
            } catch {
                if !failing {
                    logger.warning("photo for milestone \(item.milestone.index) pending: \(error); retrying with backoff")
                    try? recorder.note(.error, message: "photo for milestone \(item.milestone.index) pending, retrying: \(error)")
                    failing = true
                }
                // Full jitter, so many devices coming back online do not retry in step.
                try? await Task.sleep(for: .seconds(Double.random(in: backoff / 2...backoff)))
                backoff = min(backoff * 2, maxBackoff)
            }
        }
    }

    /// The nearest usable photo not yet used in the walk, widening the search until one is found.
    private func photo(for item: Pending, excluding used: Set<String>) async throws -> MilestonePhoto {
        let milestone = item.milestone
        var rejected = Set<String>()
        for radius in Self.radii {
            let candidates = try await source.search(
                latitude: milestone.latitude, longitude: milestone.longitude, radius: radius)
                .filter { !used.contains($0.id) }
                .map { ($0, Geodesy.distance(milestone.latitude, milestone.longitude, $0.latitude, $0.longitude)) }
                .sorted { $0.1 < $1.1 }
            for (candidate, distance) in candidates where !rejected.contains(candidate.id) {
                do {
                    let bytes = try await source.image(of: candidate, limit: Self.imageLimit)
                    let thumbnail = try thumbnailer.thumbnail(of: bytes)
                    let key = cacheKey(for: candidate)
                    try await thumbnails.store(key: key, bytes: thumbnail.jpeg)
                    logger.info("milestone \(milestone.index): photo \(candidate.id), \(Int(distance)) m away")
                    return MilestonePhoto(
                        milestone: milestone.index, source: sourceName,
                        outcome: .found(candidate, distance: distance, cacheKey: key))
                } catch let error as PhotoSourceError where error.kind == .permanent {
                    try await reject(candidate, because: error.message, into: &rejected)
                } catch let error as ThumbnailError {
                    try await reject(candidate, because: error.message, into: &rejected)
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
    private func reject(_ candidate: PhotoCandidate, because reason: String, into rejected: inout Set<String>)
        async throws
    {
        rejected.insert(candidate.id)
        logger.warning("photo \(candidate.id) skipped: \(reason)")
        try recorder.note(.error, message: "photo \(candidate.id) from \(sourceName) skipped: \(reason)")
    }
}
