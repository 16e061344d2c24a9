import FoundationEssentials
import Synchronization
package import WalkJournal

/// What the photo service is doing right now, for the live page's status line. Kept in memory only: it
/// describes the present, and the journal already records every outcome.
package final class PhotoActivity: Sendable {
    package enum State: Sendable, Equatable {
        /// Nothing waits for a photo.
        case idle
        case searching(milestone: Int)
        case downloading(milestone: Int)
        /// The source failed (network, HTTP error); the milestone is retried at `retry` (system clock).
        case backingOff(milestone: Int, reason: String, retry: Double)
        /// The source cannot be used this session (a rejected API key); milestones stay pending.
        case unusable(reason: String)
    }

    private let state = Mutex(State.idle)
    private let observer = Mutex<(@Sendable (State) -> Void)?>(nil)

    package init() {}

    package var current: State { state.withLock { $0 } }

    /// `body` hears of every change (the recorder writes it into status.json for the live page's process).
    package func observe(_ body: @escaping @Sendable (State) -> Void) {
        observer.withLock { $0 = body }
        body(current)
    }

    package func set(_ new: State) {
        let changed = state.withLock { state in
            defer { state = new }
            return state != new
        }
        if changed, let body = observer.withLock({ $0 }) { body(new) }
    }
}

extension PhotoActivity.State {
    /// As status.json holds it.
    package var statusRecord: PhotoStatus {
        switch self {
        case .idle: .init(state: "idle")
        case let .searching(milestone): .init(state: "searching", milestone: milestone)
        case let .downloading(milestone): .init(state: "downloading", milestone: milestone)
        case let .backingOff(milestone, reason, retry):
            .init(state: "backing_off", milestone: milestone, reason: reason, retryWall: retry)
        case let .unusable(reason): .init(state: "unusable", reason: reason)
        }
    }

    /// From status.json; nil for a state this build does not know.
    package init?(statusRecord record: PhotoStatus) {
        switch (record.state, record.milestone) {
        case ("idle", _): self = .idle
        case let ("searching", milestone?): self = .searching(milestone: milestone)
        case let ("downloading", milestone?): self = .downloading(milestone: milestone)
        case let ("backing_off", milestone?):
            self = .backingOff(milestone: milestone, reason: record.reason ?? "", retry: record.retryWall ?? 0)
        case ("unusable", _): self = .unusable(reason: record.reason ?? "")
        default: return nil
        }
    }
}

extension PhotoActivity.State {
    /// A few words for a status line: "searching near milestone 4", "retrying in 8 s (HTTP 500)".
    package func description(now: Double) -> String {
        switch self {
        case .idle: "waiting for the next milestone"
        case let .searching(milestone): "searching near milestone \(milestone)"
        case let .downloading(milestone): "downloading for milestone \(milestone)"
        case let .backingOff(milestone, reason, retry):
            "milestone \(milestone) failed (\(reason)), retrying in \(max(0, Int((retry - now).rounded(.up)))) s"
        case let .unusable(reason): "source unusable: \(reason)"
        }
    }
}
