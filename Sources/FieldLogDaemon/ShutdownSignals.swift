import CSandbox
import Glibc
import NIOPosix

/// SIGTERM and SIGINT as a request to shut down gracefully, waited for on a thread of its own that sleeps
/// until one comes. ServiceLifecycle's own signal handling uses a libdispatch source, and libdispatch, once
/// started, wakes the process every second for the rest of its life (its worker pool's monitor): a third of
/// an idle recorder's wake-ups at 1 Hz.
package enum ShutdownSignals {
    package struct Failure: Error, CustomStringConvertible {
        package let number: Int32
        package var description: String { "cannot handle signals: " + String(cString: strerror(number)) }
    }

    /// Takes over `signals` (once per process) and waits for the first of them; nil when the waiting task is
    /// cancelled first.
    package static func first(of signals: [Int32]) async throws(Failure) -> Int32? {
        let descriptor = signals.withUnsafeBufferPointer { csandbox_signal_pipe($0.baseAddress, Int32($0.count)) }
        guard descriptor >= 0 else { throw Failure(number: -descriptor) }
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        // The socket pair stays open: a signal may still come, and its handler writes to it.
        defer { thread.shutdownGracefully { _ in } }
        let received = try? await withTaskCancellationHandler {
            try await thread.runIfActive { () -> Int32 in
                var byte: UInt8 = 0
                while read(descriptor, &byte, 1) < 0 && errno == EINTR {}
                return Int32(byte)
            }
        } onCancel: {
            csandbox_signal_pipe_shutdown()
        }
        guard let received, received != 0 else { return nil }
        return received
    }
}
