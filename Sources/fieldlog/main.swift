import NIOCore
import NIOPosix

// Swift concurrency runs on SwiftNIO's event loop threads (which the live page's server and the Flickr client
// use anyway) instead of libdispatch's worker pool, whose monitor woke an idle recorder every second
// (BENCHMARKS.md, section 2). Installed from the main thread before the first task, as NIO requires; the
// main thread then only waits for the command to end.
_ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
try MultiThreadedEventLoopGroup.singleton.any().makeFutureWithTask { await FieldLogCommand.main() }.wait()
