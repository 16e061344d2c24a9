#ifndef CCONCURRENCYHOOK_H
#define CCONCURRENCYHOOK_H

/// Sends every job Swift concurrency would give its global executor (libdispatch's worker pool on Linux) to
/// `enqueue` instead, from the thread that enqueues it. Install before the first task starts.
///
/// SwiftNIO offers the same (NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor)
/// but finds the runtime's hook with dlsym, which a binary with the Swift runtime linked in statically does
/// not export: here the hook is reached by the linker instead.
void cconcurrency_install_global_enqueue(void (*enqueue)(void *job));

#endif
