import Synchronization

/// Items handed from synchronous code (the recorder, under its lock) to one task that must not wait on them
/// while it has other work: `put` never blocks or suspends; the task takes what has come, or waits.
package final class Mailbox<Item: Sendable>: Sendable {
    private struct State {
        var items: [Item] = []
        var waiter: CheckedContinuation<Void, Never>?
        /// What the waiter waits for.
        var awaited: (@Sendable (Item) -> Bool)?
    }

    private let state = Mutex(State())

    package func put(_ item: Item) {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            state.items.append(item)
            guard state.awaited?(item) ?? true else { return nil }
            return state.waiter.take()
        }
        waiter?.resume()
    }

    package func contains(where matches: (Item) -> Bool) -> Bool {
        state.withLock { $0.items.contains(where: matches) }
    }

    package func take() -> [Item] {
        state.withLock { state in
            defer { state.items.removeAll() }
            return state.items
        }
    }

    /// Returns when an item is there (one for which `awaited` is true), or the task is cancelled. One task
    /// waits at a time.
    package func wait(for awaited: (@Sendable (Item) -> Bool)? = nil) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    if state.items.contains(where: { awaited?($0) ?? true }) || Task.isCancelled { return true }
                    state.waiter = continuation
                    state.awaited = awaited
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiter.take() }?.resume()
        }
    }
}
