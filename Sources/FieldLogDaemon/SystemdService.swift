package import Logging
import ServiceLifecycle
import SystemIO

/// Tells systemd how `fieldlog run` is doing: `READY=1` when the service group starts (the recorder has
/// recovered its state by then), `WATCHDOG=1` at half of `$WATCHDOG_USEC` while `isAlive` answers, and
/// `STOPPING=1` as soon as a graceful shutdown begins.
///
/// Put it last in the group's services: a `ServiceGroup` shuts services down in reverse order, so this one
/// hears of the shutdown first and says `STOPPING=1` before the recorder syncs and closes the session.
/// (systemd stops watching the watchdog once the unit is stopping, so petting may end then.)
package struct SystemdService: Service {
    private let notifier: SystemdNotifier
    private let isAlive: @Sendable () async -> Bool
    private let logger: Logger

    /// `isAlive` is asked before every pet; a recorder that hangs (never answers) or answers false is not
    /// petted, and systemd restarts the service after `WatchdogSec=`.
    package init(notifier: SystemdNotifier, logger: Logger, isAlive: @escaping @Sendable () async -> Bool) {
        self.notifier = notifier
        self.isAlive = isAlive
        self.logger = logger
    }

    package func run() async throws {
        guard notifier.isEnabled else {
            // Not under systemd: nothing to say, but stay until the group shuts down like the others.
            try? await gracefulShutdown()
            return
        }
        notifier.ready(status: "recording")
        if let interval = notifier.watchdogInterval {
            logger.debug("petting the systemd watchdog every \(interval)")
        }
        await withGracefulShutdownHandler {
            guard let interval = notifier.watchdogInterval else {
                try? await gracefulShutdown()
                return
            }
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                // A recorder stuck in a syscall never answers: no more pets, and systemd steps in.
                if await isAlive() {
                    notifier.watchdog()
                }
                do {
                    try await cancelWhenGracefulShutdown { try await sleepOnEventLoop(for: interval) }
                } catch {
                    return
                }
            }
        } onGracefulShutdown: { [notifier] in
            notifier.stopping(status: "stopping: syncing the journal")
        }
    }
}
