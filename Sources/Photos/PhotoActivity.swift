import Synchronization
package import WalkJournal

/// What the photo service is doing right now, for the live page's status line. Kept in memory only: it
/// describes the present, and the journal already records every outcome.
package final class PhotoActivity: Sendable {
    private let state = Mutex(PhotoActivityState.idle)
    private let observer = Mutex<(@Sendable (PhotoActivityState) -> Void)?>(nil)

    package init() {}

    package var current: PhotoActivityState { state.withLock { $0 } }

    /// `body` hears of every change (the recorder writes it into status.json for the live page's process).
    package func observe(_ body: @escaping @Sendable (PhotoActivityState) -> Void) {
        observer.withLock { $0 = body }
        body(current)
    }

    package func set(_ new: PhotoActivityState) {
        let changed = state.withLock { state in
            defer { state = new }
            return state != new
        }
        if changed, let body = observer.withLock({ $0 }) { body(new) }
    }
}
