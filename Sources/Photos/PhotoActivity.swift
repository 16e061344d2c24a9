import FoundationEssentials
import Synchronization

/// What the photo service is doing right now, for the live page's status line. Kept in memory only: it
/// describes the present, and the journal already records every outcome.
public final class PhotoActivity: Sendable {
    public enum State: Sendable, Equatable {
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

    public init() {}

    public var current: State { state.withLock { $0 } }

    package func set(_ new: State) {
        state.withLock { $0 = new }
    }
}

extension PhotoActivity.State {
    /// A few words for a status line: "searching near milestone 4", "retrying in 8 s (HTTP 500)".
    public func description(now: Double) -> String {
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
