/// The photo service's state as `status.json` holds it, for the processes that read the status file (the live
/// page, `fieldlog status`): the photo service writes it through the recorder's status file.
package struct PhotoStatus: Codable, Sendable, Equatable {
    /// idle, searching, downloading, backing_off or unusable.
    package var state: String
    package var milestone: Int?
    package var reason: String?
    /// System-clock time of the next try, while backing off.
    package var retryWall: Double?

    package init(state: String, milestone: Int? = nil, reason: String? = nil, retryWall: Double? = nil) {
        self.state = state
        self.milestone = milestone
        self.reason = reason
        self.retryWall = retryWall
    }

    package enum CodingKeys: String, CodingKey {
        case state, milestone, reason
        case retryWall = "retry_wall"
    }
}

/// What the photo service is doing right now (`PhotoActivity`), as the processes that show it read it back from
/// status.json.
package enum PhotoActivityState: Sendable, Equatable {
    /// Nothing waits for a photo.
    case idle
    case searching(milestone: Int)
    case downloading(milestone: Int)
    /// The source failed (network, HTTP error); the milestone is retried at `retry` (system clock).
    case backingOff(milestone: Int, reason: String, retry: Double)
    /// The source cannot be used this session (a rejected API key); milestones stay pending.
    case unusable(reason: String)
}

extension PhotoActivityState {
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

extension PhotoActivityState {
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
