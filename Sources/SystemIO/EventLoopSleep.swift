internal import NIOCore
internal import NIOPosix

/// `Task.sleep(for:)` on a timer of SwiftNIO's event loops. Swift's own sleep schedules on libdispatch, which,
/// once started, wakes the process every second for the rest of its life. Throws `CancellationError` when the
/// task is cancelled first, as Task.sleep does.
package func sleepOnEventLoop(for duration: Duration) async throws {
    let (seconds, attoseconds) = duration.components
    let nanoseconds = max(
        0, seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue + attoseconds / 1_000_000_000)
    let loop = MultiThreadedEventLoopGroup.singleton.any()
    let woken = loop.makePromise(of: Void.self)
    let timer = loop.scheduleTask(in: .nanoseconds(nanoseconds)) { woken.succeed() }
    try await withTaskCancellationHandler {
        try await woken.futureResult.get()
    } onCancel: {
        // Whichever comes second of the timer and the cancellation is ignored by the promise.
        timer.cancel()
        woken.fail(CancellationError())
    }
}
