import Exports
import FoundationEssentials
import Recording
import Synchronization
import SystemIO
import WalkJournal
import WalkModel

/// The live page's server-sent events: every milestone, photo outcome and star as it is journaled, and the
/// recorder's status, to at most `maxSubscribers` pages at once. Beyond that, a page from an address holding
/// fewer streams than the address holding the most takes the place of that address's oldest stream (whose
/// page reconnects later); one from the address holding the most is refused. Streams held open from one
/// address therefore never lock out a page from another.
///
/// One task follows the walk's journal every `interval` while anyone subscribes, and none runs otherwise:
/// nobody watching costs the recorder nothing. A subscriber too slow to take its events (more than
/// `bufferLimit` waiting) is cut off rather than held in memory; its browser reconnects with the last event
/// id it saw and is sent what it missed.
///
/// Events (`data` is one line of JSON):
/// - `milestone`, `photo`, `star`: `{"walk", "milestone", "seq", "html"}`, `html` the milestone's card as
///   the page shows it now; `id` is `WALK/SEQ`.
/// - `status`: `{"line", "gpsd", "photos", "distance_m", "milestones", "last_fix_age_s", "summary"}`
///   (`summary` the page's summary list), at once when something other than the distance or the fix's age
///   changes, else every `statusInterval`.
/// - `walk`: `{"walk"}`, another walk began (or the journal was rewritten), or a reconnecting page missed
///   more cards than it is sensible to resend: reload the page.
package final class LiveEvents: Sendable {
    private struct Subscriber {
        let continuation: AsyncStream<String>.Continuation
        let client: String
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 0
        var poller: Task<Void, Never>?
        var closed = false
        var lastStatus: LiveStatus?
        var lastStatusSent = ContinuousClock.now
    }

    private let walk: LiveWalk
    private let status: @Sendable () -> LiveStatus
    private let isCached: @Sendable (String) -> Bool
    package let maxSubscribers: Int
    private let interval: Duration
    private let statusInterval: Duration
    private let bufferLimit = 256
    private let state = Mutex(State())

    package init(
        walk: LiveWalk, status: @escaping @Sendable () -> LiveStatus, isCached: @escaping @Sendable (String) -> Bool,
        maxSubscribers: Int, interval: Duration = .seconds(1), statusInterval: Duration = .seconds(5)
    ) {
        self.walk = walk
        self.status = status
        self.isCached = isCached
        self.maxSubscribers = maxSubscribers
        self.interval = interval
        self.statusInterval = statusInterval
    }

    package var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// A stream of events for one page at address `client`, starting with the status and what it missed
    /// since `since` (`WALK/SEQ`, from the page or the browser's `Last-Event-ID`); nil when all places are
    /// taken and none is `client`'s to take, or the server is shutting down.
    package func subscribe(since: String?, client: String = "") -> AsyncStream<String>? {
        let (stream, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingOldest(bufferLimit))
        let (id, evicted): (Int?, AsyncStream<String>.Continuation?) = state.withLock { state in
            guard !state.closed else { return (nil, nil) }
            var evicted: AsyncStream<String>.Continuation?
            if state.subscribers.count >= maxSubscribers {
                guard let oldest = Self.replaceable(in: state.subscribers, by: client) else { return (nil, nil) }
                evicted = state.subscribers.removeValue(forKey: oldest)?.continuation
            }
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = Subscriber(continuation: continuation, client: client)
            // Under the lock, so that the poller cannot send newer changes before this catch-up.
            continuation.yield("retry: 2000\n\n")
            for message in greeting(since: since) { continuation.yield(message) }
            if state.poller == nil {
                state.poller = Task { [weak self] in await self?.poll() }
            }
            return (id, evicted)
        }
        // Outside the lock: finishing runs the stream's termination handler, which takes it.
        evicted?.finish()
        guard let id else {
            continuation.finish()
            return nil
        }
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        return stream
    }

    /// The oldest stream of the address holding the most, if `client` holds fewer.
    private static func replaceable(in subscribers: [Int: Subscriber], by client: String) -> Int? {
        guard let shares = AddressShares(subscribers.values.map(\.client)), shares.holdsFewer(client) else {
            return nil
        }
        return subscribers.filter { $0.value.client == shares.heaviest }.keys.min()
    }

    /// Ends every stream and takes no more (graceful shutdown).
    package func close() {
        let ending = state.withLock { state in
            state.closed = true
            return state.subscribers.values.map(\.continuation)
        }
        for continuation in ending { continuation.finish() }
    }

    private func remove(_ id: Int) {
        let poller: Task<Void, Never>? = state.withLock { state in
            state.subscribers[id] = nil
            guard state.subscribers.isEmpty, let poller = state.poller else { return nil }
            state.poller = nil
            return poller
        }
        if let poller {
            poller.cancel()
            walk.release()
        }
    }

    private func poll() async {
        while !Task.isCancelled {
            try? await sleepOnEventLoop(for: interval)
            guard !Task.isCancelled else { return }
            tick()
        }
    }

    /// One look at the journal and the status; what changed goes to every subscriber.
    package func tick() {
        let current = status()
        let statusDue = state.withLock { state in
            current.significant != state.lastStatus?.significant || .now - state.lastStatusSent >= statusInterval
        }
        var (messages, summary) = walk.takeChanges { update, view -> ([String], String?) in
            if update.replaced { return ([walkEvent(update.walkID)], nil) }
            guard let view else { return ([], nil) }
            return (
                update.changes.map { cardEvent($0.kind, milestone: $0.milestone, seq: $0.seq, view: view) },
                statusDue ? HTMLExport.summary(view.log) : nil
            )
        }
        let slow = state.withLock { state in
            if statusDue {
                state.lastStatus = current
                state.lastStatusSent = .now
                messages.append(statusEvent(current, summary: summary))
            }
            var slow: [AsyncStream<String>.Continuation] = []
            for (id, subscriber) in state.subscribers {
                for message in messages {
                    if case .dropped = subscriber.continuation.yield(message) {
                        slow.append(subscriber.continuation)
                        state.subscribers[id] = nil
                        break
                    }
                }
            }
            return slow
        }
        // Outside the lock: finishing runs the stream's termination handler, which takes it.
        for continuation in slow { continuation.finish() }
    }

    /// The status, then the cards changed since `since`, or a `walk` event if that was another walk.
    private func greeting(since: String?) -> [String] {
        let current = status()
        return walk.look { view in
            var messages = [statusEvent(current, summary: view.map { HTMLExport.summary($0.log) })]
            guard let since, let slash = since.lastIndex(of: "/"), let seq = Int(since[since.index(after: slash)...])
            else { return messages }
            guard let view, view.log.id == since[..<slash] else { return messages + [walkEvent(view?.log.id)] }
            let missed = view.changes(after: seq)
            // More than half the stream's buffer would leave no room for what comes next (the rest was once
            // dropped without a word): the page reloads instead, which shows every card.
            guard missed.count <= bufferLimit / 2 else { return messages + [walkEvent(view.log.id)] }
            messages += missed.map { cardEvent($0.kind, milestone: $0.milestone, seq: $0.seq, view: view) }
            return messages
        }
    }

    private func cardEvent(_ kind: LiveWalk.ChangeKind, milestone index: Int, seq: Int, view: LiveWalkView) -> String {
        guard let milestone = view.log.milestones.last(where: { $0.index == index }) else { return "" }
        var out = ByteWriter(capacity: 2048)
        out.append("event: ")
        out.append(kind.rawValue)
        out.append("\nid: ")
        out.append(view.log.id)
        out.append("/")
        out.append(seq)
        out.append("\ndata: {\"walk\":")
        out.appendJSONString(view.log.id)
        out.append(",\"milestone\":")
        out.append(index)
        out.append(",\"seq\":")
        out.append(seq)
        out.append(",\"html\":")
        out.appendJSONString(
            String(decoding: HTMLExport.card(milestone, log: view.log, isCached: isCached), as: UTF8.self))
        out.append("}\n\n")
        return String(decoding: out.bytes, as: UTF8.self)
    }

    private func walkEvent(_ id: String?) -> String {
        var out = ByteWriter(capacity: 64)
        out.append("event: walk\ndata: {\"walk\":")
        if let id { out.appendJSONString(id) } else { out.append("null") }
        out.append("}\n\n")
        return String(decoding: out.bytes, as: UTF8.self)
    }

    private func statusEvent(_ status: LiveStatus, summary: String?) -> String {
        let now = Date().timeIntervalSince1970
        var out = ByteWriter(capacity: 256)
        out.append("event: status\ndata: {\"line\":")
        out.appendJSONString(status.line(now: now))
        out.append(",\"gpsd\":\"")
        out.append(status.gpsd.rawValue)
        out.append("\",\"photos\":\"")
        out.append(status.photoState)
        out.append("\",\"distance_m\":")
        out.appendDecimal(status.recording.distance, digits: 1)
        out.append(",\"milestones\":")
        out.append(status.recording.milestones)
        out.appendOptionalField("last_fix_age_s", status.lastFixWall.map { max(0, now - $0) }, digits: 1)
        if let summary {
            out.append(",\"summary\":")
            out.appendJSONString(summary)
        }
        out.append("}\n\n")
        return String(decoding: out.bytes, as: UTF8.self)
    }
}
