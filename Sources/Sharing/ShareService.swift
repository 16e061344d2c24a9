import FoundationEssentials
package import Logging
import ServiceLifecycle
import Synchronization
import SystemIO
package import WalkJournal
package import WalkModel

/// Publishes the walks of a state directory, live, to OwnTracks servers (`--share`): one engine per destination,
/// each independent. The journal is the queue: a destination's position is kept durably and everything after it
/// is sent, oldest first, at a bounded rate. Nothing here can stop or slow the recorder: the engines only read the
/// journals, and their network work runs on libmosquitto's thread or AsyncHTTPClient's event loop.
package final class ShareService: Service, Sendable {
    package struct Settings: Sendable {
        /// Each `--share` destination, ready with its own password or unusable.
        package var targets: [ShareTarget]
        package var caFile: String?
        package var tid: String
        /// Seconds of GPS time between shared fixes at most (`--share-every`).
        package var every: Double
        /// Messages a second at most per destination, also after an outage (`--share-rate`).
        package var rate: Double
        package var cacheDirectory: String?
        package var keepalive = 60
        package var backoffMax = 120.0
        package var unavailableAfter = 60.0
        /// The first wait before asking a destination that refused the credentials again (`ShareRetry`).
        package var rejectedRetry = ShareRetry.rejectedDefault
        /// The recorder this process shares beside (see `ShareEngine.Settings.recorderPid`).
        package var recorderPid: Int32?

        package init(
            targets: [ShareTarget], caFile: String?, tid: String, every: Double, rate: Double, cacheDirectory: String?
        ) {
            self.targets = targets
            self.caFile = caFile
            self.tid = tid
            self.every = every
            self.rate = rate
            self.cacheDirectory = cacheDirectory
        }
    }

    private let settings: Settings
    private let store: JournalStore
    private let logger: Logger
    private let onEvent: @Sendable (JournalEvent.Kind, String) -> Void
    private let current = Mutex<[ShareStatus]>([])

    /// `onEvent` journals what the destinations' owners should hear of (through the recorder, which owns the journal).
    package init(
        settings: Settings, store: JournalStore, logger: Logger,
        onEvent: @escaping @Sendable (JournalEvent.Kind, String) -> Void
    ) {
        self.settings = settings
        self.store = store
        self.logger = logger
        self.onEvent = onEvent
        current.withLock { statuses in
            statuses = settings.targets.map {
                ShareStatus(
                    destination: $0.url, connection: .connecting, waiting: 0, lastTst: nil, lastWall: nil, error: nil)
            }
        }
    }

    /// Each destination as of now, for the live page.
    package var statuses: [ShareStatus] {
        current.withLock { $0 }
    }

    package func run() async throws {
        let (engines, unusable) = makeEngines()
        // Shutdown ends the loop (and its sleep) at once; then what was journaled is given `drainSeconds` to be
        // acknowledged, and what is not stays in the journal for the next run.
        await serve(engines, unusable: unusable)
        await drain(engines, unusable: unusable)
    }

    /// Seconds a stopping sharing process waits for what was journaled to be acknowledged (`run --once` and
    /// SIGTERM alike): within the 10 s its supervisor, or its unit, gives it to stop.
    package static let drainSeconds = 5.0

    /// An engine for each destination that can be set up, and the status of each that cannot: it is reported
    /// (log, status, page) and left out, and the others go on.
    private func makeEngines() -> (engines: [ShareEngine], unusable: [Unusable]) {
        var engines: [ShareEngine] = []
        var unusable: [Unusable] = []
        func leaveOut(_ url: String, _ reason: String) {
            logger.error(
                "sharing \(url): not set up: \(reason); the walk is recorded all the same",
                metadata: ["destination": "\(url)"])
            unusable.append(
                Unusable(
                    position: engines.count + unusable.count,
                    status: ShareStatus(
                        destination: url, connection: .unusable, waiting: 0, lastTst: nil, lastWall: nil, error: reason)
                ))
        }
        for target in settings.targets {
            switch target {
            case let .unusable(url, reason):
                leaveOut(url, reason)
            case let .ready(destination, password, warning):
                let transport: any ShareTransport
                do {
                    transport = try Self.transport(for: destination, password: password, settings: settings)
                } catch {
                    leaveOut(destination.url, error.message)
                    continue
                }
                let engine = ShareEngine(
                    destination: destination, transport: transport, store: store,
                    settings: .init(
                        every: settings.every, rate: settings.rate, tid: settings.tid,
                        cacheDirectory: settings.cacheDirectory, unavailableAfter: settings.unavailableAfter,
                        rejectedRetry: settings.rejectedRetry, recorderPid: settings.recorderPid),
                    logger: logger, onEvent: onEvent)
                if let warning {
                    logger.warning(
                        "sharing \(destination.url): \(warning)", metadata: ["destination": "\(destination.url)"])
                    engine.addNotice(warning)
                }
                engines.append(engine)
                logger.info(
                    "sharing the walk with \(destination.url) (topic \(destination.topic))",
                    metadata: ["destination": "\(destination.url)"])
            }
        }
        return (engines, unusable)
    }

    /// A destination left out, and its place among the `--share` destinations.
    private struct Unusable {
        var position: Int
        var status: ShareStatus
    }

    /// The engines' statuses with the unusable ones in their places: in the order of `--share`, which the live
    /// page numbers them by.
    private func statuses(_ engines: [ShareEngine], _ unusable: [Unusable]) -> [ShareStatus] {
        var statuses = engines.map(\.currentStatus)
        for left in unusable { statuses.insert(left.status, at: left.position) }
        return statuses
    }

    package static func transport(
        for destination: ShareDestination, password: String?, settings: Settings
    ) throws(ShareError)
        -> any ShareTransport
    {
        switch destination.kind {
        case .mqtt:
            return try MQTTTransport(
                .init(
                    destination: destination, password: password, caFile: settings.caFile, tid: settings.tid,
                    keepalive: settings.keepalive, backoffMax: settings.backoffMax,
                    rejectedRetry: settings.rejectedRetry))
        case .http:
            return try HTTPTransport(
                .init(
                    destination: destination, password: password, caFile: settings.caFile,
                    backoffMax: settings.backoffMax,
                    rejectedRetry: settings.rejectedRetry))
        }
    }

    private func serve(_ engines: [ShareEngine], unusable: [Unusable]) async {
        var written: [ShareStatus]?
        var lastWrite = 0.0
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            var busy = false
            for engine in engines {
                busy = engine.turn() || busy
            }
            let statuses = statuses(engines, unusable)
            current.withLock { $0 = statuses }
            let now = ShareEngine.monotonic()
            // At once when a connection changes, else at most every 2 s while messages come and go.
            let changed =
                written.map { old in
                    old.count != statuses.count || zip(old, statuses).contains { $0.connection != $1.connection }
                } ?? true
            if changed || (written != statuses && now - lastWrite >= 2) {
                ShareStatusFile.write(statuses, directory: store.directory)
                written = statuses
                lastWrite = now
            }
            let pause = Duration.nanoseconds(Int64(pause(engines, busy: busy, now: now) * 1e9))
            await cancelWhenGracefulShutdown { try? await sleepOnEventLoop(for: pause) }
        }
    }

    /// Until the next turn: quick while messages come and go, until the next rate token when a message waits for
    /// one, else a quarter of --share-every, 2.5 s at most (a shared fix comes every --share-every seconds at
    /// most), so that an idle or dead destination costs next to nothing.
    private func pause(_ engines: [ShareEngine], busy: Bool, now: Double) -> Double {
        guard !busy else { return 0.02 }
        var pause = min(2.5, settings.every / 4)
        if engines.contains(where: { $0.isWaitingForAcknowledgement(now: now) }) { pause = min(pause, 0.05) }
        if let due = engines.compactMap({ $0.secondsUntilNextSend(now: now) }).min() {
            pause = min(pause, max(due, 0.005))
        }
        return pause
    }

    /// Turns the engines of connected destinations until everything journaled is acknowledged or `drainSeconds`
    /// have passed, then stops them and says what waits for the next run.
    private func drain(_ engines: [ShareEngine], unusable: [Unusable]) async {
        let deadline = ShareEngine.monotonic() + Self.drainSeconds
        // A turn first, whatever the last one found: the recorder's last records (its session end, which
        // releases the walk's last fix) were written after it.
        var busy = false
        for engine in engines { busy = engine.turn() || busy }
        while !Task.isCancelled, ShareEngine.monotonic() < deadline,
            engines.contains(where: { !$0.isDrained && $0.currentStatus.connection == .connected })
        {
            try? await sleepOnEventLoop(
                for: .nanoseconds(UInt64(pause(engines, busy: busy, now: ShareEngine.monotonic()) * 1e9)))
            busy = false
            for engine in engines { busy = engine.turn() || busy }
        }
        for engine in engines {
            await engine.stop()
            if engine.isDrained {
                logger.info(
                    "sharing \(engine.destination.url): stopped; everything journaled is acknowledged",
                    metadata: ["destination": "\(engine.destination.url)"])
            } else {
                let unread = engine.readToEnd ? "" : ", and the journal was not read to its end"
                logger.notice(
                    "sharing \(engine.destination.url): stopped with \(engine.unacknowledged) messages unacknowledged\(unread); they go out on the next run",
                    metadata: ["destination": "\(engine.destination.url)"])
            }
        }
        // The last word of a sharing process that stops: nothing is connected any more.
        var statuses = statuses(engines, unusable)
        for index in statuses.indices where statuses[index].connection != .unusable {
            statuses[index].connection = .disconnected
        }
        current.withLock { $0 = statuses }
        ShareStatusFile.write(statuses, directory: store.directory)
    }
}

/// `fieldlog share --walk ID`: a stored walk sent once to a destination, for a trip recorded offline.
package enum ShareOnce {
    package struct Outcome: Sendable {
        package var sent: Int
        package var acknowledged: Int
        package var status: ShareStatus
    }

    /// Sends every message of walk `id` and waits for their acknowledgements, at most `timeout` seconds without progress.
    package static func send(
        walk id: String, to destination: ShareDestination, password: String?, settings: ShareService.Settings,
        store: JournalStore, logger: Logger, timeout: Double = 60
    ) async throws(ShareError) -> Outcome {
        let transport = try ShareService.transport(for: destination, password: password, settings: settings)
        let engine = ShareEngine(
            destination: destination, transport: transport, store: store,
            settings: .init(
                every: settings.every, rate: settings.rate, tid: settings.tid, cacheDirectory: settings.cacheDirectory),
            logger: logger, onlyWalk: id, onEvent: { _, _ in })
        var lastProgress = ShareEngine.monotonic()
        var acknowledged = 0
        while !Task.isCancelled {
            if engine.turn() { lastProgress = ShareEngine.monotonic() }
            acknowledged = engine.acknowledgedCount
            if engine.finished && engine.isIdle { break }
            if engine.currentStatus.connection == .rejected { break }
            if ShareEngine.monotonic() - lastProgress > timeout { break }
            try? await sleepOnEventLoop(for: .nanoseconds(20_000_000))
        }
        let status = engine.currentStatus
        await engine.stop()
        return Outcome(sent: engine.producedCount, acknowledged: acknowledged, status: status)
    }
}
