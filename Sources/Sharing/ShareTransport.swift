/// The connection to one destination, as the sharing engine sees it.
package enum ShareConnection: String, Sendable, Codable {
    case connecting, connected, disconnected
    /// The destination refused the credentials: asked again on a slow schedule (`ShareRetry`).
    case rejected
    /// It could not be set up (a bad URL, a password file that cannot be used): nothing is sent to it.
    case unusable
}

/// What a transport has to tell since the last poll.
package struct ShareTransportPoll: Sendable {
    package var acknowledged: [Int] = []
    package var connection: ShareConnection
    /// The latest failure in words (never with a password), nil while all is well.
    package var error: String?
}

package enum ShareSubmission: Sendable {
    /// The transport holds the message and delivers it, resending as needed, until it is acknowledged.
    case accepted
    /// It can never be delivered (too large for the destination): skipped.
    case refused
    /// Not taken now (no memory, the window full): offered again later.
    case later
}

/// A protocol client that delivers messages in order, at least once, and tells which were acknowledged.
package protocol ShareTransport: AnyObject, Sendable {
    /// Messages awaiting acknowledgement at most.
    var window: Int { get }
    func submit(_ payload: [UInt8], token: Int) -> ShareSubmission
    func poll() -> ShareTransportPoll
    func stop() async
}
