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
