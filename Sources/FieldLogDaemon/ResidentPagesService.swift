package import Logging
import ServiceLifecycle
import SystemIO

/// Keeps a long-running process's resident memory to what it runs (the recorder's to what recording runs):
/// `first` after start (the journal read back, gpsd connected) and then every `interval`, it gives back the code
/// and read-only data pages nothing has run since (`ResidentPages`). A photo's requests and decoding map more code each time; the next round gives it
/// back. On the monotonic clock: this is the process's housekeeping, not the walk's.
package struct ResidentPagesService: Service {
    private let first: Duration
    private let interval: Duration
    private let logger: Logger

    package init(first: Duration = .seconds(30), interval: Duration = .seconds(600), logger: Logger) {
        self.first = first
        self.interval = interval
        self.logger = logger
    }

    package func run() async throws {
        var pause = first
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                try await cancelWhenGracefulShutdown { [pause] in try await sleepOnEventLoop(for: pause) }
            } catch {
                return
            }
            let released = ResidentPages.releaseCleanFileMappings()
            logger.debug("gave back \(released / 1024) KiB of code and read-only data")
            pause = interval
        }
    }
}
