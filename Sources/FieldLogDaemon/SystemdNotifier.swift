import FoundationEssentials
import Glibc
package import Logging
import Synchronization
import WalkModel

/// systemd's notify protocol (sd_notify(3)) without libsystemd: one datagram per message to the AF_UNIX
/// socket named by `$NOTIFY_SOCKET` (a path, or with a leading '@' a name in the abstract namespace).
/// Without `$NOTIFY_SOCKET` (not started by systemd, or not `Type=notify`) every call does nothing.
/// Failures are never fatal: the first one is logged, later ones are dropped silently.
package final class SystemdNotifier: Sendable {
    /// The socket address as given in `$NOTIFY_SOCKET`, or nil when notifications are off.
    package let socketPath: String?
    /// Half of `$WATCHDOG_USEC`, when systemd expects this process to pet the watchdog.
    package let watchdogInterval: Duration?

    private let logger: Logger
    /// Whether a failure has been logged.
    private let reportedFailure = Mutex(false)

    package init(environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger) {
        self.logger = logger
        let socket = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = socket
        watchdogInterval = socket == nil ? nil : Self.watchdogInterval(environment: environment, pid: Int(getpid()))
    }

    /// `$WATCHDOG_USEC / 2`, if the variable is a positive number and `$WATCHDOG_PID` is unset or names `pid`.
    package static func watchdogInterval(environment: [String: String], pid: Int) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let owner = environment["WATCHDOG_PID"], !owner.isEmpty, Int(owner) != pid { return nil }
        return .microseconds(Int64(clamping: usec / 2))
    }

    package var isEnabled: Bool { socketPath != nil }

    /// `READY=1`: state is recovered and the service runs.
    package func ready(status: String? = nil) {
        send(["READY=1"] + (status.map { ["STATUS=" + $0] } ?? []))
    }

    /// `STATUS=...`: a one-line status shown by `systemctl status`.
    package func status(_ text: String) { send(["STATUS=" + text]) }

    /// `WATCHDOG=1`: still alive.
    package func watchdog() { send(["WATCHDOG=1"]) }

    /// `STOPPING=1`: a graceful shutdown has begun.
    package func stopping(status: String? = nil) {
        send(["STOPPING=1"] + (status.map { ["STATUS=" + $0] } ?? []))
    }

    /// Sends the assignments as one datagram, newline-separated. Returns whether it was sent.
    @discardableResult
    package func send(_ assignments: [String]) -> Bool {
        guard let socketPath else { return false }
        // A newline inside a value would start a new assignment.
        let message = assignments.map { $0.replacingScalars("\n", with: " ") }.joined(separator: "\n")
        if let failure = Self.sendDatagram(Array(message.utf8), to: socketPath) {
            let first = reportedFailure.withLock { reported in
                let first = !reported
                reported = true
                return first
            }
            if first {
                logger.warning("cannot notify systemd at \(socketPath): \(failure) (further failures are not logged)")
            }
            return false
        }
        return true
    }

    /// The only syscalls of the protocol: socket, sendto, close. Returns the error text on failure.
    package static func sendDatagram(_ bytes: [UInt8], to socketPath: String) -> String? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var name = Array(socketPath.utf8)
        let abstract = name.first == UInt8(ascii: "@")
        if abstract {
            name[0] = 0  // the abstract namespace: a leading NUL, and the length says where the name ends
        } else if name.first != UInt8(ascii: "/") {
            return "NOTIFY_SOCKET is neither an absolute path nor an abstract name"
        }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard name.count + (abstract ? 0 : 1) <= capacity else { return "socket name too long" }
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path.copyBytes(from: name)
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + name.count + (abstract ? 0 : 1))

        let kind = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let flags = Int32(MSG_NOSIGNAL)
        let descriptor = socket(AF_UNIX, kind, 0)
        guard descriptor >= 0 else { return "socket: " + String(cString: strerror(errno)) }
        defer { close(descriptor) }
        var sent: Int
        repeat {
            sent = bytes.withUnsafeBytes { buffer in
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(descriptor, buffer.baseAddress, buffer.count, flags, $0, length)
                    }
                }
            }
        } while sent < 0 && errno == EINTR
        if sent < 0 { return "sendto: " + String(cString: strerror(errno)) }
        if sent != bytes.count { return "sendto: short datagram" }
        return nil
    }
}
