import CConcurrencyHook
import Glibc
import NIOCore
import NIOPosix
import Thumbnailing

if CommandLine.arguments.dropFirst().first == PhotoWorker.commandName {
    // Started once for every photo: run at once, without argument parsing by reflection, event loops or Swift
    // concurrency.
    exit(PhotoWorker.main(Array(CommandLine.arguments.dropFirst(2))))
} else {
    // Swift concurrency runs on SwiftNIO's event loop threads (which the live page's server and the Flickr
    // client use anyway) instead of libdispatch's worker pool: libdispatch, once started, wakes the process
    // every second for good (BENCHMARKS.md, section 2). Installed before the first task; the main thread then
    // only waits for the command to end. (Task.sleep schedules on libdispatch regardless: fieldlog sleeps with
    // sleepOnEventLoop.)
    cconcurrency_install_global_enqueue(enqueueOnEventLoop)
    try MultiThreadedEventLoopGroup.singleton.any().makeFutureWithTask { await FieldLogCommand.main() }.wait()
}
