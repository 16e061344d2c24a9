#include "CConcurrencyHook.h"

#include <stddef.h>

// The runtime's hook (libswift_Concurrency): called with Swift's calling convention, with the job and the
// runtime's own global enqueue.
typedef void (*original_enqueue)(void *job) __attribute__((swiftcall));
extern void (*swift_task_enqueueGlobal_hook)(void *job, original_enqueue original) __attribute__((swiftcall));

static void (*global_enqueue)(void *job) = NULL;

__attribute__((swiftcall)) static void enqueue_hook(void *job, original_enqueue original) {
    (void)original;
    global_enqueue(job);
}

void cconcurrency_install_global_enqueue(void (*enqueue)(void *job)) {
    global_enqueue = enqueue;
    swift_task_enqueueGlobal_hook = enqueue_hook;
}
