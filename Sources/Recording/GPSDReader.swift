package import CGPSShim
import Glibc
package import Logging
import NIOPosix
import Synchronization
package import WalkModel

/// What the gpsd connection reports to the walk.
package enum GPSEvent: Sendable, Equatable {
    case connected
    /// The connection failed or ended; the reader is backing off before it reconnects.
    case disconnected(reason: String)
    case fix(Fix)
    /// A position report without a fix fit for a walk (the receiver lost the sky): the last epoch is over.
    case noFix
    /// No data for a while: a chance to finish the last epoch and sync.
    case idle
}

/// Reads gpsd through libgps on a thread of its own (libgps blocks) and hands each event to its handler on
/// that thread: at 1 Hz, a hop into Swift concurrency per fix cost more CPU than recording the fix
/// (bench/results/daemon.md). gpsd going away, restarting, never coming, hanging or sending garbage is
/// normal: it reconnects forever with backoff capped at 2 s.
package final class GPSDReader: Sendable {
    package struct Configuration: Sendable {
        package var host: String
        package var port: String
        /// Stop after the first connection ends instead of reconnecting (replays and demos).
        package var once: Bool = false
        package var initialBackoff: Double = 0.5
        /// A refused connect costs microseconds, and gpsd must be found again within 3 s of its return.
        package var maxBackoff: Double = 2
        /// Without a gpsd message for this long, ask gpsd for its VERSION (a live gpsd answers even with no
        /// receiver attached); without one for `silenceLimit`, reconnect.
        package var silenceBeforeProbe: Duration = .seconds(6)
        package var silenceLimit: Duration = .seconds(10)

        package init(host: String, port: String) {
            self.host = host
            self.port = port
        }
    }

    private let configuration: Configuration
    private let logger: Logger
    private let stopped = LockedFlag()
    /// gpsd's own advice: waits shorter than about 2 s can misreport on some versions.
    private static let waitMicroseconds: Int32 = 2_000_000

    package init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Reads until `stop()`, or with `once` until gpsd closes, calling `handle` on the reader thread for every
    /// event; when `handle` throws, reading stops and the error is rethrown here.
    package func run(handle: @escaping @Sendable (GPSEvent) throws -> Void) async throws {
        // A thread of its own, from a pool of one: libgps blocks, and the thread must not be one that Swift
        // concurrency or the event loops need.
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        defer { thread.shutdownGracefully { _ in } }
        try await withTaskCancellationHandler {
            try await thread.runIfActive { [self] in
                cgps_name_reader_thread()
                try connectAndRead(emit: handle)
            }
        } onCancel: {
            stop()
        }
    }

    package func stop() {
        stopped.set()
    }

    private func connectAndRead(emit: (GPSEvent) throws -> Void) throws {
        var backoff = configuration.initialBackoff
        // The last loss reported: a gpsd that stays away, or keeps answering garbage, is reported once.
        var reported: String?
        func report(_ reason: String) throws {
            guard reason != reported else { return }
            logger.warning(
                "gpsd at \(address): \(reason); retrying every \(configuration.maxBackoff) s at most",
                metadata: ["gpsd": "\(address)"])
            try emit(.disconnected(reason: reason))
            reported = reason
        }
        while !stopped.isSet {
            var error: Int32 = 0
            guard let session = cgps_open(configuration.host, configuration.port, &error) else {
                try report("unavailable (\(String(cString: cgps_error_text(error))))")
                sleep(seconds: backoff)
                backoff = min(backoff * 2, configuration.maxBackoff)
                continue
            }
            let ending: ReadEnding
            do {
                ending = try read(session) { event in
                    if event == .connected {
                        logger.info("connected to gpsd at \(address)", metadata: ["gpsd": "\(address)"])
                        reported = nil
                    }
                    try emit(event)
                }
            } catch {
                cgps_close(session)
                throw error
            }
            cgps_close(session)
            if stopped.isSet { return }
            try report(ending.reason)
            if configuration.once && ending.answered { return }
            if ending.delivered { backoff = configuration.initialBackoff }
            sleep(seconds: backoff)
            backoff = min(backoff * 2, configuration.maxBackoff)
        }
    }

    private struct ReadEnding {
        var reason: String
        /// gpsd spoke its protocol at least once.
        var answered = false
        /// At least one fix arrived.
        var delivered = false
    }

    /// Reads until gpsd goes away, stops answering, or the reader is stopped. `.connected` is emitted on
    /// gpsd's VERSION, the first thing it sends, so that a server that accepts and says nothing (or only
    /// garbage, or something gpsd-like) never counts as gpsd.
    private func read(_ session: OpaquePointer, emit: (GPSEvent) throws -> Void) throws -> ReadEnding {
        var ending = ReadEnding(reason: "gpsd closed the connection")
        var raw = cgps_fix()
        // A receiver that is unplugged leaves gpsd silent too, so silence is probed with ?VERSION (which gpsd
        // always answers) before the connection is given up. Garbage does not count as an answer.
        let clock = ContinuousClock()
        var lastAnswer = clock.now
        var probed = false
        while !stopped.isSet {
            let silence = clock.now - lastAnswer
            if silence >= configuration.silenceLimit {
                ending.reason = ending.answered ? "gpsd stopped answering" : "no gpsd answer (not gpsd, or hung)"
                return ending
            }
            if silence >= configuration.silenceBeforeProbe && !probed {
                probed = true
                if cgps_probe(session) != 0 { return ending }
            }
            switch cgps_wait(session, Self.waitMicroseconds) {
            case 0:
                if ending.answered { try emit(.idle) }
                continue
            case 1:
                break
            default:
                return ending
            }
            let kind = cgps_read(session, &raw)
            switch kind {
            case Int32(CGPS_READ_GONE):
                return ending
            case Int32(CGPS_READ_VERSION):
                lastAnswer = clock.now
                probed = false
                if !ending.answered {
                    ending.answered = true
                    try emit(.connected)
                }
            case Int32(CGPS_READ_OTHER), Int32(CGPS_READ_FIX):
                guard ending.answered else { continue }
                lastAnswer = clock.now
                probed = false
                guard kind == Int32(CGPS_READ_FIX) else { continue }
                if let fix = Fix(raw) {
                    ending.delivered = true
                    try emit(.fix(fix))
                } else {
                    try emit(.noFix)
                }
            default:
                // Garbage, partial lines, and anything before gpsd's VERSION: skipped, and no sign of life.
                continue
            }
        }
        return ending
    }

    private var address: String { "\(configuration.host):\(configuration.port)" }

    /// Sleeps in short steps so that `stop()` is honoured quickly.
    private func sleep(seconds: Double) {
        var remaining = seconds
        while remaining > 0 && !stopped.isSet {
            usleep(UInt32(min(remaining, 0.1) * 1_000_000))
            remaining -= 0.1
        }
    }
}

extension Fix {
    /// A walk runs on GPS time: reports without time or without a 2D/3D position are of no use to it.
    package init?(_ raw: cgps_fix) {
        // A time beyond 2^40 s (year 36812) is no clock's, and beyond 2^53 not even a Double's.
        guard raw.has_time, raw.time_sec.magnitude < 1 << 40, raw.mode >= 2, raw.lat.isFinite, raw.lon.isFinite
        else { return nil }
        self.init(
            time: Double(raw.time_sec) + Double(raw.time_nsec) / 1e9,
            latitude: raw.lat, longitude: raw.lon,
            altitude: raw.alt.isFinite ? raw.alt : nil,
            horizontalError: raw.eph.isFinite ? raw.eph : nil,
            mode: Int(raw.mode),
            speed: raw.speed.isFinite && raw.speed >= 0 ? raw.speed : nil,
            track: raw.track.isFinite ? raw.track : nil)
        self = bounded
    }
}

/// A flag set once from any thread.
package final class LockedFlag: Sendable {
    private let value = Atomic(false)

    package var isSet: Bool { value.load(ordering: .acquiring) }

    package func set() { value.store(true, ordering: .releasing) }
}
