import NIOCore
import NIOPosix

/// Swift concurrency's global executor for fieldlog (installed by main.swift): runs `job` on one of SwiftNIO's
/// event loops, the one it is enqueued from when that is one (`any()` prefers the current loop). Not isolated
/// to any actor: the runtime calls it from whatever thread enqueues.
func enqueueOnEventLoop(_ job: UnsafeMutableRawPointer?) {
    MultiThreadedEventLoopGroup.singleton.any().executor.enqueue(ExecutorJob(unsafeBitCast(job, to: UnownedJob.self)))
}
