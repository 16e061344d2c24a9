import CSandbox
import Glibc
package import Logging
package import Recording
import ServiceLifecycle
import SystemIO

/// The processes `fieldlog run` starts beside the recorder (`--helpers children`): the live page and sharing,
/// each a `fieldlog` of its own that reads the journal. Whatever a page's client or a broker does to one of
/// them, the recorder's memory and threads are not theirs; one that ends is started again with backoff, and
/// status.json says so. On shutdown they get SIGTERM, and SIGKILL after `stopTimeout`.
package final class HelperSupervisor: Service, Sendable {
    package struct Helper: Sendable {
        /// The subcommand, which names it in logs and status: `live-page`, `live-share`.
        package var name: String
        /// Its arguments after the subcommand.
        package var arguments: [String]
    }

    private let helpers: [Helper]
    private let executable: String
    private let status: StatusFile
    private let logger: Logger
    /// Seconds between restarts: doubled after each quick end, up to `maxBackoff`.
    private let minBackoff = 1.0
    private let maxBackoff = 60.0
    /// A helper that ran this long is healthy again: its next restart waits `minBackoff`.
    private let healthyAfter = 60.0
    /// Above sharing's wait for acknowledgements at a stop (`ShareService.drainSeconds`).
    private let stopTimeout = 8.0

    package init(helpers: [Helper], executable: String, status: StatusFile, logger: Logger) {
        self.helpers = helpers
        self.executable = executable
        self.status = status
        self.logger = logger
    }

    private struct Child {
        var helper: Helper
        var pid: pid_t?
        var started = 0.0
        var restarts = 0
        var backoff: Double
        var restartAt = 0.0
        var lastExit: String?
    }

    package func run() async throws {
        var children = helpers.map { Child(helper: $0, backoff: minBackoff) }
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let now = monotonicSeconds()
            for index in children.indices {
                tend(&children[index], now: now)
            }
            status.note(helpers: children.map(Self.record))
            // Once a second: a restart waits a second more at worst, and an idle recorder wakes rarely.
            try? await sleepOnEventLoop(for: .seconds(1))
        }
        stop(&children)
        status.note(helpers: children.map(Self.record))
    }

    /// Reaps a child that ended and starts one that is due.
    private func tend(_ child: inout Child, now: Double) {
        if let pid = child.pid {
            var code: Int32 = 0
            let state = csandbox_poll(pid, &code)
            guard state != Int32(CSANDBOX_RUNNING) else { return }
            child.pid = nil
            let how = state == Int32(CSANDBOX_SIGNALED) ? "killed by signal \(code)" : "exit status \(code)"
            child.lastExit = how
            child.backoff = now - child.started >= healthyAfter ? minBackoff : min(maxBackoff, child.backoff * 2)
            child.restartAt = now + child.backoff
            logger.error(
                "\(child.helper.name) (pid \(pid)) ended, \(how); starting it again in \(Int(child.backoff)) s")
            return
        }
        guard now >= child.restartAt else { return }
        let arguments = [executable, child.helper.name, "--supervisor", "\(getpid())"] + child.helper.arguments
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { if null >= 0 { close(null) } }
        let pid: pid_t
        do {
            pid = try ChildProcess.spawn(arguments, input: null, output: STDOUT_FILENO, error: STDERR_FILENO)
        } catch {
            child.backoff = min(maxBackoff, child.backoff * 2)
            child.restartAt = now + child.backoff
            logger.error("\(child.helper.name) cannot be started: \(error); trying again in \(Int(child.backoff)) s")
            return
        }
        if child.started > 0 { child.restarts += 1 }
        child.pid = pid
        child.started = now
        logger.info("\(child.helper.name) started (pid \(pid))")
    }

    /// SIGTERM to every child, then SIGKILL to those still running after `stopTimeout`.
    private func stop(_ children: inout [Child]) {
        for child in children { if let pid = child.pid { _ = csandbox_signal(pid, SIGTERM) } }
        let deadline = monotonicSeconds() + stopTimeout
        for index in children.indices {
            guard let pid = children[index].pid else { continue }
            var code: Int32 = 0
            while csandbox_poll(pid, &code) == Int32(CSANDBOX_RUNNING) {
                if monotonicSeconds() > deadline {
                    logger.warning(
                        "\(children[index].helper.name) (pid \(pid)) did not stop within \(Int(stopTimeout)) s; killed")
                    _ = csandbox_kill(pid)
                }
                usleep(10_000)
            }
            children[index].pid = nil
        }
    }

    private static func record(_ child: Child) -> StatusFile.Contents.Helper {
        .init(
            name: child.helper.name, pid: child.pid, running: child.pid != nil, restarts: child.restarts,
            lastExit: child.lastExit)
    }
}
