import FoundationEssentials
import Glibc
package import Logging
import SystemIO
import Thumbnailing
package import WalkJournal
package import WalkModel

/// Shares the walks of one state directory with one destination: reads the journals from the destination's
/// durable position (`ShareCursor`), chooses what to send (`ShareSelector`), hands it to the transport oldest
/// first at a bounded rate, and moves the position on as acknowledgements come. Reads the journals only: it
/// never writes to them (events go through `onEvent`, to the recorder).
package final class ShareEngine {
    package struct Settings: Sendable {
        package var every: Double
        /// Messages a second at most, and the burst after a pause: a backlog goes out at this pace.
        package var rate: Double
        package var tid: String
        package var cacheDirectory: String?
        /// A destination unreachable this long is an episode worth a journal event.
        package var unavailableAfter: Double = 60
        /// The first wait before asking a destination that refused the credentials again (`ShareRetry`).
        package var rejectedRetry: Double = ShareRetry.rejectedDefault
        /// The running recorder's pid, when sharing starts beside it: a destination set up now counts as set up
        /// when that recorder started, since what it journaled before this process was ready is to be sent.
        package var recorderPid: Int32? = nil
    }

    package struct Message {
        package var walk: String
        /// 1-based number in the walk's sequence of messages.
        package var number: Int
        package var content: ShareSelector.Content
        package var token: Int
        package var acknowledged = false
    }

    /// Messages read ahead of the transport at most: a backlog of days stays in the journal, not in memory.
    package static let readAhead = 2000
    /// The largest cached thumbnail a shared rendition is made from (`SharedPhoto`).
    package static let maxThumbnailBytes = 192 << 10

    package let destination: ShareDestination
    private let transport: any ShareTransport
    private let store: JournalStore
    private let settings: Settings
    private let logger: Logger
    private let onEvent: @Sendable (JournalEvent.Kind, String) -> Void
    private let thumbnails: ThumbnailFiles?

    private var cursor: ShareCursor
    private var walk: String?
    private var offset: off_t = 0
    private var partial: [UInt8] = []
    private var buffer = [UInt8](repeating: 0, count: 64 << 10)
    private var chunkWasFull = false
    /// The last read found nothing more in the journal.
    package private(set) var readToEnd = false
    private var selector: ShareSelector
    private var produced = 0
    /// Messages of `walk` already acknowledged when it was opened: produced again, not sent again.
    private var skip = 0
    private var pending: [Message] = []
    private var pendingHead = 0
    private var inflight: [Message] = []
    private var nextToken = 1
    private var tokens: Double
    private var lastRefill: Double
    private var lastWalkListing = 0.0
    /// When a message last went out or was acknowledged (monotonic).
    private var lastProgress = 0.0
    private var status: ShareStatus
    private var disconnectedSince: Double?
    private var toldUnavailable = false
    private var toldRejected = false
    /// Stop after this walk (`fieldlog share --walk`).
    private let onlyWalk: String?
    package private(set) var finished = false

    package init(
        destination: ShareDestination, transport: any ShareTransport, store: JournalStore, settings: Settings,
        logger: Logger, onlyWalk: String? = nil, onEvent: @escaping @Sendable (JournalEvent.Kind, String) -> Void
    ) {
        self.destination = destination
        self.transport = transport
        self.store = store
        self.settings = settings
        var logger = logger
        // Every line of this engine names its destination, for journalctl's DESTINATION= (never a password:
        // the URL has none).
        logger[metadataKey: "destination"] = "\(destination.url)"
        self.logger = logger
        self.onEvent = onEvent
        self.onlyWalk = onlyWalk
        thumbnails = settings.cacheDirectory.map { ThumbnailFiles(directory: $0) }
        selector = ShareSelector(every: settings.every)
        tokens = Double(transport.window)
        lastRefill = Self.monotonic()
        // A position that cannot be trusted gives way to a safe one, said once (in the log, and in the status
        // while this process runs) and saved at once, so that the next start does not say it again.
        var notice: String?
        if let onlyWalk {
            cursor = ShareCursor(url: destination.url, device: destination.device, walk: onlyWalk, acknowledged: 0)
        } else {
            var problem: String?
            let saved = ShareCursor.read(destination, directory: store.directory)
            switch saved {
            case let .position(position):
                cursor = position
                problem = Self.outsideTheJournals(position, store: store, every: settings.every)
                    .map { "its position points outside the journals (\($0))" }
            case .missing:
                // Set up now: what the journals hold already is not sent (`fieldlog share --walk` sends it).
                let latest = (try? store.walkIDs())?.last
                cursor = ShareCursor(
                    url: destination.url, device: destination.device, walk: latest,
                    acknowledged: latest.map {
                        Self.messageCount(
                            walk: $0, store: store, every: settings.every, untilSessionOf: settings.recorderPid)
                    } ?? 0)
            case let .unusable(reason):
                cursor = ShareCursor(url: destination.url, device: destination.device, acknowledged: 0)
                problem = "its position file \(destination.stateFileName) is unusable (\(reason))"
            }
            if let problem {
                // The start of the latest walk: what is being recorded goes out whole; older walks are not sent
                // again (`fieldlog share --walk` does that).
                let latest = (try? store.walkIDs())?.last
                cursor = ShareCursor(url: destination.url, device: destination.device, walk: latest, acknowledged: 0)
                let told = problem + "; sending from the start of " + (latest.map { "walk \($0)" } ?? "the next walk")
                logger.warning("sharing \(destination.url): \(told)")
                notice = told
            }
            if problem != nil || saved == .missing {
                do {
                    try cursor.write(destination, directory: store.directory)
                } catch {
                    logger.warning("sharing \(destination.url): cannot save its position: \(error)")
                }
            }
        }
        status = ShareStatus(
            destination: destination.url, connection: .connecting, waiting: 0, lastTst: cursor.lastTst,
            lastWall: cursor.lastWall, error: nil, notice: notice)
        walk = cursor.walk
        skip = cursor.acknowledged
    }

    package var currentStatus: ShareStatus { status }

    /// Something to fix that does not stop this destination, shown with its status while this process runs.
    package func addNotice(_ text: String) {
        status.notice = status.notice.map { $0 + "; " + text } ?? text
    }

    /// How many messages a walk's journal gives so far (without what its end would still release).
    /// The messages walk `walk` holds, or, with `pid`, those it held when the recorder of that pid started its session.
    package static func messageCount(
        walk: String, store: JournalStore, every: Double, untilSessionOf pid: Int32? = nil
    ) -> Int {
        count(walk: walk, store: store, every: every, untilSessionOf: pid, withEnd: false) ?? 0
    }

    /// Why `cursor` points outside the journals, or nil when it points into them. A walk since deleted is in:
    /// reading goes on with the next one. A journal that cannot be read is taken on trust.
    package static func outsideTheJournals(_ cursor: ShareCursor, store: JournalStore, every: Double) -> String? {
        guard let walk = cursor.walk else { return nil }
        let ids = (try? store.walkIDs()) ?? []
        guard ids.contains(walk) else {
            return ids.last.map { walk < $0 } ?? false ? nil : "walk \(walk) is after every journal"
        }
        // Its end may release a message more (the last fix of a segment) than its lines so far.
        guard let most = count(walk: walk, store: store, every: every, untilSessionOf: nil, withEnd: true),
            cursor.acknowledged > most
        else { return nil }
        return "\(cursor.acknowledged) messages of walk \(walk) acknowledged, which has \(most)"
    }

    private static func count(
        walk: String, store: JournalStore, every: Double, untilSessionOf pid: Int32?, withEnd: Bool
    ) -> Int? {
        var selector = ShareSelector(every: every)
        var count = 0
        var reached = false
        let marker = pid.map { "pid \($0)" }
        do {
            try JournalReader(path: store.path(for: walk)).forEachRecord(lastLineToo: true) { record, _ in
                guard let record else { return }
                if case let .event(event) = record, event.kind == .sessionStart, marker != nil, event.message == marker
                {
                    reached = true
                }
                if !reached { count += selector.feed(record).count }
            }
        } catch {
            return nil
        }
        if withEnd && !selector.ended { count += selector.finish().count }
        return count
    }

    /// One turn: read, send, take acknowledgements. Returns whether anything happened (the caller polls faster).
    package func turn() -> Bool {
        let now = Self.monotonic()
        let queued = pending.count - pendingHead
        chunkWasFull = false
        // Reading counts as work when it found messages, or a full chunk (more is waiting): a fix that is not
        // shared is no reason to come back sooner.
        let read = readMore(now: now) && (pending.count - pendingHead != queued || chunkWasFull)
        let sent = send(now: now)
        let acknowledged = acknowledge()
        if sent || acknowledged { lastProgress = now }
        return read || sent || acknowledged
    }

    package var isIdle: Bool { pendingHead == pending.count && inflight.isEmpty }

    /// Messages are out and the last went out or was acknowledged within a second: an answer is due any moment.
    /// A destination that does not answer is then polled once a second, like an idle one.
    package func isWaitingForAcknowledgement(now: Double) -> Bool {
        !inflight.isEmpty && now - lastProgress < 1
    }

    /// Seconds until the next message may go out (its rate token is due), when one waits and the transport has
    /// room for it; nil otherwise. The sender sleeps this long, not a polling period: a backlog goes out at
    /// `--share-rate`.
    package func secondsUntilNextSend(now: Double) -> Double? {
        guard pendingHead < pending.count, inflight.count < transport.window else { return nil }
        let available = min(Double(transport.window), tokens + (now - lastRefill) * settings.rate)
        return available >= 1 ? 0 : (1 - available) / settings.rate
    }

    /// Everything journaled so far is read and acknowledged.
    package var isDrained: Bool { isIdle && readToEnd }

    /// Messages read and not yet acknowledged (queued or in flight).
    package var unacknowledged: Int { pending.count - pendingHead + inflight.count }

    /// Messages of the current walk produced so far, and acknowledged (its position), for `fieldlog share --walk`.
    package var producedCount: Int { produced }
    package var acknowledgedCount: Int { cursor.walk == walk ? cursor.acknowledged : 0 }

    package func stop() async {
        await transport.stop()
    }

    // MARK: Reading

    private func readMore(now: Double) -> Bool {
        guard pending.count - pendingHead < Self.readAhead, !finished else { return false }
        if walk == nil {
            guard now - lastWalkListing >= 1 else { return false }
            lastWalkListing = now
            guard let first = (try? store.walkIDs())?.first else {
                readToEnd = true
                return false
            }
            open(first, skipping: 0)
        }
        guard let walk else { return false }
        let lines = readLines(of: walk)
        // A chunk short of full reached the end of what is written (a torn last line is not the end).
        readToEnd = !chunkWasFull && partial.isEmpty
        var produced = false
        for line in lines {
            produced = true
            guard let record = line.withUnsafeBufferPointer({ JournalCodec.decode($0) }) else { continue }
            enqueue(selector.feed(record), walk: walk)
        }
        if !lines.isEmpty { return true }
        // At the end of what is written: the walk goes on, or it is over (ended, or a later walk began).
        if onlyWalk != nil {
            if !selector.ended { enqueue(selector.finish(), walk: walk) }
            finished = true
            return true
        }
        // A later walk is looked for every 5 s at most: a directory listing is the dearest part of a turn.
        guard now - lastWalkListing >= 5 else { return produced }
        lastWalkListing = now
        let ids = (try? store.walkIDs()) ?? []
        guard let next = ids.first(where: { $0 > walk }) else { return produced }
        // Read what the recorder appended since, then close this walk as its end would.
        for line in readLines(of: walk) {
            if let record = line.withUnsafeBufferPointer({ JournalCodec.decode($0) }) {
                enqueue(selector.feed(record), walk: walk)
            }
        }
        if !selector.ended { enqueue(selector.finish(), walk: walk) }
        open(next, skipping: 0)
        return true
    }

    private func open(_ id: String, skipping: Int) {
        walk = id
        offset = 0
        partial = []
        selector = ShareSelector(every: settings.every)
        produced = 0
        skip = skipping
    }

    private func enqueue(_ contents: [ShareSelector.Content], walk: String) {
        for content in contents {
            produced += 1
            guard produced > skip else { continue }
            pending.append(Message(walk: walk, number: produced, content: content, token: nextToken))
            nextToken += 1
        }
    }

    /// Complete lines appended since the last read, a bounded chunk at a time.
    private func readLines(of walk: String) -> [[UInt8]] {
        let fd: Int32
        do {
            fd = try FileIO.openRegular(
                JournalStore.prefix + walk + JournalStore.suffix, in: store.directory, maxBytes: .max
            )
            .descriptor
        } catch {
            return []
        }
        defer { close(fd) }
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, offset) }
        chunkWasFull = count == buffer.count
        guard count > 0 else { return [] }
        offset += off_t(count)
        var bytes = partial
        bytes += buffer[0..<count]
        guard let lastNewline = bytes.lastIndex(of: UInt8(ascii: "\n")) else {
            partial = bytes
            return []
        }
        partial = Array(bytes[(lastNewline + 1)...])
        return bytes[..<lastNewline].split(separator: UInt8(ascii: "\n")).map(Array.init)
    }

    // MARK: Sending

    private func send(now: Double) -> Bool {
        tokens = min(Double(transport.window), tokens + (now - lastRefill) * settings.rate)
        lastRefill = now
        var sent = false
        while inflight.count < transport.window, pendingHead < pending.count, tokens >= 1 {
            let message = pending[pendingHead]
            let payload = encode(message)
            switch transport.submit(payload, token: message.token) {
            case .accepted:
                inflight.append(message)
            case .refused:
                logger.warning(
                    "sharing \(destination.url): message \(message.number) of walk \(message.walk) is too large for it; skipped",
                    metadata: ["walk": "\(message.walk)"])
                var skipped = message
                skipped.acknowledged = true
                inflight.append(skipped)
            case .later:
                return sent
            }
            pendingHead += 1
            tokens -= 1
            sent = true
        }
        if pendingHead > 4096 {
            pending.removeFirst(pendingHead)
            pendingHead = 0
        }
        return sent
    }

    private func encode(_ message: Message) -> [UInt8] {
        var thumbnail: [UInt8]?
        if case let .photo(milestone, _, key) = message.content {
            let why: String
            if let bytes = thumbnails?.read(key), bytes.count <= Self.maxThumbnailBytes {
                switch SharedPhoto.make(from: bytes) {
                case let .image(rendition):
                    thumbnail = rendition
                    why = ""
                case let .tooLarge(size):
                    why = "its \(SharedPhoto.size) px rendition is \(size) bytes, over \(SharedPhoto.maxBytes)"
                case let .unreadable(reason):
                    why = "its thumbnail cannot be read (\(reason))"
                }
            } else {
                why = "no thumbnail of it in the cache"
            }
            if thumbnail == nil {
                logger.notice(
                    "sharing \(destination.url): the photo of milestone \(milestone.index) goes without its image: \(why)"
                )
            }
        }
        let options = OwnTracksMessage.Options(
            tid: settings.tid, topic: destination.kind == .http ? destination.topic : nil, walk: message.walk)
        return OwnTracksMessage.encode(message.content, options: options, thumbnail: thumbnail)
    }

    // MARK: Acknowledgements

    private func acknowledge() -> Bool {
        let poll = transport.poll()
        let acknowledged = Set(poll.acknowledged)
        if !acknowledged.isEmpty {
            for index in inflight.indices where acknowledged.contains(inflight[index].token) {
                inflight[index].acknowledged = true
            }
        }
        // The position moves over what is acknowledged without a gap (QoS 1 acknowledgements may overtake).
        var last: Message?
        while let first = inflight.first, first.acknowledged {
            last = inflight.removeFirst()
        }
        if let last {
            cursor.walk = last.walk
            cursor.acknowledged = last.number
            cursor.lastTst = Int(last.content.time.rounded(.down))
            cursor.lastWall = Date().timeIntervalSince1970
            if onlyWalk == nil {
                do {
                    try cursor.write(destination, directory: store.directory)
                } catch {
                    logger.warning("sharing \(destination.url): cannot save its position: \(error)")
                }
            }
        }
        noteConnection(poll)
        status.waiting = pending.count - pendingHead + inflight.count
        status.unread = !readToEnd
        status.lastTst = cursor.lastTst
        status.lastWall = cursor.lastWall
        return last != nil
    }

    private func noteConnection(_ poll: ShareTransportPoll) {
        let now = Self.monotonic()
        let previous = status.connection
        status.connection = poll.connection
        status.error = poll.error
        switch poll.connection {
        case .connected:
            if toldRejected {
                logger.notice("sharing \(destination.url): the credentials are accepted again")
            } else if toldUnavailable {
                logger.notice(
                    "sharing \(destination.url): reachable again; \(pending.count - pendingHead + inflight.count) messages waiting"
                )
            } else if previous != .connected {
                logger.info("sharing \(destination.url): connected")
            }
            disconnectedSince = nil
            toldUnavailable = false
            toldRejected = false
        case .rejected:
            // Said once an episode: the transport asks again on its slow schedule until the credentials pass.
            guard !toldRejected else { return }
            toldRejected = true
            let reason = poll.error ?? "credentials refused"
            logger.error(
                "sharing \(destination.url): \(reason); asking again in \(ShareRetry.describe(settings.rejectedRetry)), then less and less often, up to every \(ShareRetry.describe(ShareRetry.rejectedMax)) (check its password)"
            )
            onEvent(.shareRejected, "\(destination.url): \(reason)")
        case .unusable:
            break
        case .connecting, .disconnected:
            // Between two refusals the transport reconnects: that is no outage.
            if toldRejected { return }
            if previous == .connected {
                logger.info(
                    "sharing \(destination.url): disconnected (\(poll.error ?? "connection lost")); the journal keeps what is waiting"
                )
            }
            let since = disconnectedSince ?? now
            disconnectedSince = since
            if !toldUnavailable, now - since >= settings.unavailableAfter {
                toldUnavailable = true
                let reason = poll.error ?? "no connection"
                logger.warning("sharing \(destination.url): unreachable for \(Int(now - since)) s: \(reason); retrying")
                onEvent(.shareUnavailable, "\(destination.url): \(reason)")
            }
        }
    }

    package static func monotonic() -> Double {
        monotonicSeconds()
    }
}
