import WalkModel

/// gpsd sends several TPV reports per receiver epoch, sometimes with different positions. This keeps
/// the last report of each epoch and hands it on once the next epoch begins.
public struct EpochCollapser: Sendable {
    private var pending: Fix?

    public init() {}

    /// Returns the finished previous epoch's fix when `fix` starts a new epoch.
    public mutating func add(_ fix: Fix) -> Fix? {
        defer { pending = fix }
        guard let previous = pending, previous.time != fix.time else { return nil }
        return previous
    }

    /// The epoch still waiting for a successor (at the end of a stream or a session).
    public mutating func flush() -> Fix? {
        defer { pending = nil }
        return pending
    }
}
