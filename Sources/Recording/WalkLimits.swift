/// The rules that turn raw fixes into a walk. Defaults suit walking and cycling.
package struct WalkLimits: Sendable, Equatable {
    /// A milestone every this many metres along the path.
    package var milestoneEvery: Double = 100
    /// Fixes whose estimated horizontal error (eph) is above this many metres are dropped.
    package var maxHorizontalError: Double = 50
    /// Jumps that imply more than this speed (m/s) are dropped as outliers.
    package var maxSpeed: Double = 30
    /// A position may be off by this many metres (or the fix's own eph, if larger): the slack allowed on
    /// top of `maxSpeed` before a jump is an outlier, and the least straight line bridged across a gap.
    package var minStep: Double = 5
    /// The eph taken for a fix that reports none.
    package var unknownHorizontalError: Double = 10
    /// No fix for more than this many seconds of GPS time starts a new track segment.
    package var segmentGap: Double = 30
    /// An interrupted walk whose fixes continue within this many seconds of GPS time is resumed; after a
    /// longer pause a new walk starts.
    package var idleGap: Double = 30 * 60

    package init() {}
}
