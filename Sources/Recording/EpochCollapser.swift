package import WalkModel

/// gpsd sends several TPV reports per receiver epoch, sometimes with different positions. This keeps
/// the last report of each epoch and hands it on once the next epoch begins.
package struct EpochCollapser: Sendable {
    private var pending: Fix?

    package init() {}

    /// Returns the finished previous epoch's fix when `fix` starts a new epoch.
    package mutating func add(_ fix: Fix) -> Fix? {
        defer { pending = fix }
        guard let previous = pending, previous.time != fix.time else { return nil }
        return previous
    }

    /// The epoch still waiting for a successor (at the end of a stream or a session).
    package mutating func flush() -> Fix? {
        defer { pending = nil }
        return pending
    }
}
