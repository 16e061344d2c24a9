import CGPSShim
import Foundation
import Logging

/// What the gpsd connection reports to the walk.
public enum GPSEvent: Sendable, Equatable {
    case connected
    /// The connection failed or ended; the reader is backing off before it reconnects.
    case disconnected(reason: String)
    case fix(Fix)
    /// No data for a while: a chance to finish the last epoch and sync.
    case idle
}

/// Reads gpsd through libgps on a thread of its own (libgps blocks) and hands each event to its handler on
/// that thread: at 1 Hz, a hop into Swift concurrency per fix cost more CPU than recording the fix
/// (bench/results/daemon.md). gpsd going away, restarting or never coming is normal: it reconnects forever
/// with capped backoff.
public final class GPSDReader: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        public var port: String
        /// Stop after the first connection ends instead of reconnecting (replays and demos).
        public var once: Bool = false
        public var initialBackoff: Double = 0.5
        public var maxBackoff: Double = 30

        public init(host: String, port: String) {
            self.host = host
            self.port = port
        }
    }

    private let configuration: Configuration
    private let logger: Logger
    private let stopped = LockedFlag()
    /// gpsd's own advice: waits shorter than about 2 s can misreport on some versions.
    private static let waitMicroseconds: Int32 = 2_000_000

    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Reads until `stop()`, or with `once` until gpsd closes, calling `handle` on the reader thread for every
    /// event; when `handle` throws, reading stops and the error is rethrown here.
    public func run(handle: @escaping @Sendable (GPSEvent) throws -> Void) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
                let thread = Thread { [self] in
                    // Set from inside: Foundation on Linux names the kernel's thread (`top -H`, perf) only for
                    // the current one.
                    Thread.current.name = "gpsd-reader"
                    do {
                        try connectAndRead(emit: handle)
                        done.resume()
                    } catch {
                        done.resume(throwing: error)
                    }
                }
                thread.start()
            }
        } onCancel: {
            stop()
        }
    }

    public func stop() {
        stopped.set()
    }

    private func connectAndRead(emit: (GPSEvent) throws -> Void) throws {
        var backoff = configuration.initialBackoff
        var lastFailure: String?
        while !stopped.isSet {
            var error: Int32 = 0
            guard let session = cgps_open(configuration.host, configuration.port, &error) else {
                let reason = String(cString: cgps_error_text(error))
                if reason != lastFailure {
                    logger.warning("gpsd at \(address) unavailable (\(reason)); retrying with backoff up to \(Int(configuration.maxBackoff)) s")
                    try emit(.disconnected(reason: reason))
                    lastFailure = reason
                }
                sleep(seconds: backoff)
                backoff = min(backoff * 2, configuration.maxBackoff)
                continue
            }
            logger.info("connected to gpsd at \(address)")
            let delivered: Bool
            do {
                try emit(.connected)
                lastFailure = nil
                delivered = try read(session, emit: emit)
            } catch {
                cgps_close(session)
                throw error
            }
            cgps_close(session)
            if stopped.isSet { return }
            let reason = "gpsd closed the connection"
            logger.warning("\(reason) at \(address)")
            try emit(.disconnected(reason: reason))
            lastFailure = reason
            if configuration.once { return }
            if delivered { backoff = configuration.initialBackoff }
            sleep(seconds: backoff)
            backoff = min(backoff * 2, configuration.maxBackoff)
        }
    }

    /// Reads until gpsd goes away or the reader is stopped. Returns whether any fix arrived.
    private func read(_ session: OpaquePointer, emit: (GPSEvent) throws -> Void) throws -> Bool {
        var delivered = false
        var raw = cgps_fix()
        while !stopped.isSet {
            switch cgps_wait(session, Self.waitMicroseconds) {
            case 0:
                try emit(.idle)
                continue
            case 1:
                break
            default:
                return delivered
            }
            switch cgps_read(session, &raw) {
            case Int32(CGPS_READ_GONE):
                return delivered
            case Int32(CGPS_READ_FIX):
                if let fix = Fix(raw) {
                    delivered = true
                    try emit(.fix(fix))
                }
            default:
                continue
            }
        }
        return delivered
    }

    private var address: String { "\(configuration.host):\(configuration.port)" }

    /// Sleeps in short steps so that `stop()` is honoured quickly.
    private func sleep(seconds: Double) {
        var remaining = seconds
        while remaining > 0 && !stopped.isSet {
            Thread.sleep(forTimeInterval: min(remaining, 0.1))
            remaining -= 0.1
        }
    }
}

extension Fix {
    /// A walk runs on GPS time: reports without time or without a 2D/3D position are of no use to it.
    init?(_ raw: cgps_fix) {
        guard raw.has_time, raw.mode >= 2, raw.lat.isFinite, raw.lon.isFinite else { return nil }
        self.init(
            time: Double(raw.time_sec) + Double(raw.time_nsec) / 1e9,
            latitude: raw.lat, longitude: raw.lon,
            altitude: raw.alt.isFinite ? raw.alt : nil,
            horizontalError: raw.eph.isFinite ? raw.eph : nil,
            mode: Int(raw.mode))
    }
}

/// A flag set once from any thread.
final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    var isSet: Bool { lock.withLock { value } }

    func set() { lock.withLock { value = true } }
}
