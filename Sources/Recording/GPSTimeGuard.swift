package import WalkModel

/// Decides whether a fix's GPS time can be believed before the walk uses it. One fix with a wrong time (a
/// receiver's glitch dated 2100, a 1024-week rollover image, a cold-start clock) would otherwise open a walk
/// at that time and make every later, correct fix look like time going backwards.
///
/// The rule:
/// - A fix is accepted at once when it is later than the last accepted fix (the reference) and no later than
///   the reference plus the time the monotonic clock measured since then plus `slack`. At the start of a
///   session the reference is the newest journal's last time, without a monotonic instant: a fix within
///   the idle gap after it is accepted.
/// - Any other fix is held as suspect. Held fixes that follow each other by the same rule form a run; a run
///   of `agreeingFixes` is taken as the receiver's new time, and its fixes are accepted in order. A run back
///   in time, or more than `farAhead` ahead of the monotonic clock, needs `agreeingFixesFar`: a minute of
///   fixes at 1 Hz, so that a burst of fixes in 2100 is not a walk. With nothing to compare with (no journal,
///   or a journal left more than the idle gap before), `agreeingFixesFirst` start a walk. A run that a fix
///   consistent with the reference interrupts is dropped.
/// - A time before `earliest` (or from `latest` on), or a 1024-week rollover image of the reference's time, is
///   never accepted.
///
/// Pure: the monotonic instant of each fix is passed in, so a replay or a test decides the clock.
package struct GPSTimeGuard: Sendable {
    /// No fix is earlier: an unset receiver clock, or the 1024-week rollover image of any time before 2029.
    package static let earliest = 1_262_304_000.0  // 2010-01-01T00:00:00Z
    /// Nor later: RFC 3339 has four digits for the year.
    package static let latest = 253_402_300_800.0  // 10000-01-01T00:00:00Z
    /// How far GPS time may run ahead of the monotonic clock between two fixes: gpsd's latency, and replays
    /// of gaps faster than real time (those are held until a run confirms them, and journaled the same).
    package static let slack = 60.0
    /// Fixes that agree with each other and not with the reference: the receiver's time has really moved.
    package static let agreeingFixes = 5
    /// Fixes that agree when there is no reference to disagree with: a lone glitch is not a walk, and the walk's
    /// first fix is journaled one epoch later only.
    package static let agreeingFixesFirst = 2
    /// A move back in time (a clock that ran ahead, corrected), or far ahead, needs a minute of fixes at 1 Hz.
    package static let agreeingFixesFar = 60
    package static let farAhead = 86_400.0
    package static let rolloverPeriod = 1024.0 * 7 * 86_400
    /// How close to a multiple of 1024 weeks an offset counts as a rollover image.
    package static let rolloverTolerance = 86_400.0

    package enum Suspicion: String, Sendable {
        case outOfRange = "before 2010 or after 9999"
        case rollover = "a 1024-week rollover image"
        case ahead = "ahead of the monotonic clock"
        case before = "before the last good time"
        case unconfirmed = "not confirmed by further fixes"
    }

    /// Fixes held as suspect and then dropped, from the first held fix to the next accepted one (or the end).
    package struct Episode: Sendable, Equatable {
        package var dropped: Int
        /// GPS time of the first fix dropped, and why it was held.
        package var firstTime: Double
        package var suspicion: Suspicion

        package init(dropped: Int, firstTime: Double, suspicion: Suspicion) {
            self.dropped = dropped
            self.firstTime = firstTime
            self.suspicion = suspicion
        }
    }

    /// A run of held fixes accepted as the receiver's new time.
    package struct Jump: Sendable, Equatable {
        package var from: Double
        package var to: Double
        package var fixes: Int

        package init(from: Double, to: Double, fixes: Int) {
            self.from = from
            self.to = to
            self.fixes = fixes
        }
    }

    package struct Outcome: Sendable, Equatable {
        /// Fixes for the walk, in order: none, the fix checked, or a confirmed run ending with it.
        package var accepted: [Fix] = []
        /// Set when this fix ended an episode in which fixes were dropped.
        package var episode: Episode?
        package var jump: Jump?
    }

    private struct Reference: Sendable {
        var time: Double
        /// nil for a reference read from the journal of an earlier session.
        var monotonic: Double?
    }

    private let idleGap: Double
    private var reference: Reference?
    private var held: [(fix: Fix, monotonic: Double)] = []
    private var episode: Episode?

    /// `lastGoodTime`: the newest journal's last GPS time, if any.
    package init(lastGoodTime: Double?, idleGap: Double) {
        self.idleGap = idleGap
        reference = lastGoodTime.map { Reference(time: $0, monotonic: nil) }
    }

    package mutating func check(_ fix: Fix, monotonic: Double) -> Outcome {
        let time = fix.time
        guard time >= Self.earliest && time < Self.latest else {
            drop(1, firstTime: time, .outOfRange)
            return Outcome()
        }
        if let reference, follows(reference, time, monotonic) {
            return accept([fix], monotonic: monotonic, jump: nil)
        }
        if let reference, isRolloverImage(time, of: reference, monotonic: monotonic) {
            drop(1, firstTime: time, .rollover)
            return Outcome()
        }
        if let last = held.last, !follows(Reference(time: last.fix.time, monotonic: last.monotonic), time, monotonic) {
            dropHeld()
        }
        held.append((fix, monotonic))
        guard held.count >= agreeingFixesNeeded(for: held[0]) else { return Outcome() }
        let run = held.map(\.fix)
        held.removeAll()
        let jump = reference.map { Jump(from: $0.time, to: run[0].time, fixes: run.count) }
        return accept(run, monotonic: monotonic, jump: jump)
    }

    /// Ends the session: fixes still held are dropped. Returns the episode, if fixes were dropped.
    package mutating func finish() -> Episode? {
        dropHeld()
        defer { episode = nil }
        return episode
    }

    private mutating func accept(_ fixes: [Fix], monotonic: Double, jump: Jump?) -> Outcome {
        dropHeld()
        reference = Reference(time: fixes[fixes.count - 1].time, monotonic: monotonic)
        defer { episode = nil }
        return Outcome(accepted: fixes, episode: episode, jump: jump)
    }

    private mutating func dropHeld() {
        guard let first = held.first else { return }
        let reason: Suspicion = reference.map { first.fix.time <= $0.time ? .before : .ahead } ?? .unconfirmed
        drop(held.count, firstTime: first.fix.time, reason)
        held.removeAll()
    }

    private mutating func drop(_ count: Int, firstTime: Double, _ suspicion: Suspicion) {
        if episode == nil {
            episode = Episode(dropped: 0, firstTime: firstTime, suspicion: suspicion)
        }
        episode?.dropped += count
    }

    /// How many agreeing fixes make a run starting with `first` the receiver's time.
    private func agreeingFixesNeeded(for first: (fix: Fix, monotonic: Double)) -> Int {
        guard let reference else { return Self.agreeingFixesFirst }
        if first.fix.time <= reference.time { return Self.agreeingFixesFar }
        // After a reference from an earlier session any time later is plausible: the device may have been off.
        guard let since = reference.monotonic else { return Self.agreeingFixesFirst }
        let ahead = first.fix.time - reference.time - (first.monotonic - since)
        return ahead > Self.farAhead ? Self.agreeingFixesFar : Self.agreeingFixes
    }

    /// Later than `reference`, and not further ahead than the monotonic clock allows (the idle gap for a
    /// reference from an earlier session, whose monotonic instant is unknown).
    private func follows(_ reference: Reference, _ time: Double, _ monotonic: Double) -> Bool {
        let elapsed = time - reference.time
        guard elapsed > 0 else { return false }
        guard let since = reference.monotonic else { return elapsed <= idleGap }
        return elapsed <= monotonic - since + Self.slack
    }

    /// `time` is behind where the reference's time should be now by a whole number of 1024-week periods. Only
    /// behind: were the reference itself an image, the true time ahead of it must still be able to win.
    private func isRolloverImage(_ time: Double, of reference: Reference, monotonic: Double) -> Bool {
        let expected = reference.time + (reference.monotonic.map { max(0, monotonic - $0) } ?? 0)
        let periods = ((expected - time) / Self.rolloverPeriod).rounded()
        return periods >= 1 && abs(expected - time - periods * Self.rolloverPeriod) <= Self.rolloverTolerance
    }
}
