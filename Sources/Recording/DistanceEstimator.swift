import Glibc
package import WalkModel

/// How far the walker went between consecutive fixes of one track segment.
///
/// Positions wander by metres, slowly, so differences of positions turn noise into distance and any
/// threshold that ignores the noise also ignores turns inside it. Receivers measure their speed over
/// ground from the Doppler shift, to about a tenth of a metre per second, whatever the position does:
/// where a receiver reports it, distance is that speed integrated over GPS time. Speed is never exactly
/// zero when standing, so a median of the last three reports below `movingSpeed` counts as standing.
/// Receivers without Doppler speed (gpsd then derives a speed from positions and sends no `track`) are
/// measured from positions: the average speed over the chord of the last `chordSeconds`, counted from
/// when the position has moved `startRadius` over `startSeconds` until it stays within `stopRadius` over
/// `stopSeconds`. On starting again, the chord from where counting stopped counts too, so a stop costs
/// no distance. The wide start window keeps a wandering position from being walked.
///
/// A Doppler speed saying standing is believed only while the positions agree: gpsd 3.25 reports a speed of
/// zero (or one derived from a stale position) with a course for receivers that begin their second with
/// GLL, for tens of seconds at a time. While the speed says standing, the positions are measured as for a
/// receiver without speed, but start only after moving away from where the speed stopped at every fix of
/// `departureSeconds` (a wandering position turns back within seconds); the whole way from there counts,
/// no faster than the walker's Doppler pace before. Once the positions and the courses show that the walker
/// kept going (`keepsGoing`), that pace counts, from where the speed said standing. When the speed says moving again
/// first, the way from where counting stopped counts if it is longer than wandering goes meanwhile.
///
/// The state is a function of the last minute of fixes, so a walk restored from its journal continues
/// exactly as it would have (see `WalkTracker.init(limits:restoring:milestones:)`).
package struct DistanceEstimator: Sendable {
    /// Below this speed (m/s, median of three reports) a Doppler receiver is taken to be standing.
    package static let movingSpeed = 0.4
    /// Doppler reports further apart than this (a lost epoch or a tunnel) are bridged by the chord.
    package static let speedGap = 5.0
    /// Position-only receivers: the speed is the chord over this many seconds divided by its time ...
    package static let chordSeconds = 8.0
    /// ... counted from a move of `startRadius` metres within `startSeconds` ...
    package static let startSeconds = 60.0
    package static let startRadius = 25.0
    /// ... until the position moves less than `stopRadius` metres in `stopSeconds`.
    package static let stopSeconds = 20.0
    package static let stopRadius = 8.0
    /// While a Doppler speed says standing, a start needs the position to move away at every fix for this long.
    package static let departureSeconds = 20.0
    /// cos 45 degrees: courses this close agree with each other and with the positions' way
    /// (`coursesFollowPositions`).
    private static let courseAgreement = 0.5.squareRoot()
    /// While a Doppler speed says standing, the walker's pace is its median over this many seconds before.
    package static let paceSeconds = 10.0
    /// How far back a replay has to start to rebuild the state: the window, and where counting last
    /// stopped within it.
    package static let memory = 2 * startSeconds + speedGap

    private struct Sample {
        var time: Double
        var latitude: Double
        var longitude: Double
        /// Doppler speed, m/s; nil when the receiver measures none.
        var speed: Double?
        /// The course over ground, degrees true, when the receiver sent one.
        var track: Double?
    }

    /// The fixes of the last `startSeconds` (and the one before), oldest first.
    private var samples: [Sample] = []
    /// Whether the receiver measures Doppler speed: it sent a course, and speed with every fix since.
    /// Receivers leave the course out when they hardly move; gpsd never sends one with a speed it derived.
    package private(set) var measuresSpeed = false
    /// Whether the position-only walker was moving at the last fix, and where counting last stopped.
    private var movingByPosition = false
    private var stoppedAt: Sample?
    /// Whether the Doppler speed said standing at the last fix: the positions then measure, strictly.
    private var standingBySpeed = false
    /// The last fix the Doppler speed counted before it said standing and the walker's pace then, if it had one
    /// (`pace(before:)`); what the positions counted since.
    private var paceBeforeStanding: (since: Sample, pace: Double)?
    private var countedWhileStanding = 0.0
    /// Whether the positions have shown since that the walker kept going (`keepsGoing`): the pace counts.
    private var keptGoing = false

    package init(measuresSpeed: Bool = false) {
        self.measuresSpeed = measuresSpeed
    }

    /// Forgets the path: the next fix starts a new segment.
    package mutating func restart() {
        samples.removeAll(keepingCapacity: true)
        movingByPosition = false
        stoppedAt = nil
        standingBySpeed = false
        (paceBeforeStanding, countedWhileStanding, keptGoing) = (nil, 0, false)
    }

    /// Distance in metres from the previous fix to `fix`, which must be later; 0 for a segment's first fix.
    /// `positionError`: how far `fix`'s position may be off, metres; `maxSpeed`: the fastest the walk goes.
    package mutating func advance(to fix: Fix, positionError: Double, maxSpeed: Double) -> Double {
        if fix.speed == nil {
            // A Doppler receiver's report whose speed was unusable (NaN, 1e308: see Fix.bounded) still has its
            // course: it is skipped, and the next report integrates across it as across a lost epoch.
            if measuresSpeed, fix.track != nil, let last = samples.last, fix.time - last.time <= Self.speedGap {
                return 0
            }
            measuresSpeed = false
        } else if fix.track != nil {
            measuresSpeed = true
        }
        let sample = Sample(
            time: fix.time, latitude: fix.latitude, longitude: fix.longitude, speed: measuresSpeed ? fix.speed : nil,
            track: fix.track)
        defer { remember(sample) }
        guard let previous = samples.last else { return 0 }
        let elapsed = sample.time - previous.time
        if let speed = sample.speed, let previousSpeed = previous.speed {
            guard elapsed <= Self.speedGap else {
                (movingByPosition, standingBySpeed, stoppedAt) = (false, false, sample)
                return bridge(from: previous, to: sample, speeds: (min(previousSpeed, maxSpeed), min(speed, maxSpeed)))
            }
            let median = movingSpeed(endingWith: speed, at: sample.time)
            guard median > 0 else {
                if !standingBySpeed {
                    (standingBySpeed, movingByPosition, keptGoing) = (true, false, false)
                    paceBeforeStanding = pace(before: previous).map { (previous, $0) }
                    countedWhileStanding = 0
                }
                let byPosition = positionStep(to: sample, strict: true)
                // A stretch longer than the window is left to the positions, as a restored walk would see it.
                if let since = paceBeforeStanding?.since, since.time <= samples[0].time {
                    (paceBeforeStanding, keptGoing) = (nil, false)
                }
                guard let (start, pace) = paceBeforeStanding else { return byPosition }
                let paced = pace * (sample.time - start.time)
                keptGoing = keptGoing || keepsGoing(from: start, to: sample, paced: paced)
                // Positions overcount a walker's way by their wander: no faster than the pace before.
                let upToPace = max(0, paced - countedWhileStanding)
                let step = keptGoing ? upToPace : min(byPosition, upToPace)
                countedWhileStanding += step
                return step
            }
            let resumed = standingBySpeed && !movingByPosition && !keptGoing ? walkedWhileStanding(until: previous) : 0
            // Counted up to here: positions taking over later measure from this fix.
            (movingByPosition, standingBySpeed, stoppedAt) = (false, false, sample)
            let integrated = elapsed * median
            // Over a second or two the path is the chord: a Doppler speed that claims more than the positions
            // allow (a receiver's glitch, 1000 m/s while standing) is not integrated; the positions count.
            let chord = distance(previous, sample)
            return resumed + (integrated <= chord + 2 * positionError ? integrated : chord)
        }
        standingBySpeed = false
        return positionStep(to: sample, strict: false)
    }

    private mutating func remember(_ sample: Sample) {
        samples.append(sample)
        // Keep one sample at or before the start of the window: the chords measure from it.
        let start = sample.time - Self.startSeconds
        var drop = 0
        while drop + 1 < samples.count && samples[drop + 1].time <= start { drop += 1 }
        if drop > 0 { samples.removeFirst(drop) }
    }

    /// Median of the last three Doppler reports within `speedGap`, the newest being `speed`; 0 below
    /// `movingSpeed`. A median lags a start and a stop by the same epoch, so they cancel.
    private func movingSpeed(endingWith speed: Double, at time: Double) -> Double {
        // The two earlier reports, newest first; no array: this runs for every fix.
        var earlier: (Double?, Double?) = (nil, nil)
        let since = time - Self.speedGap
        for sample in samples.reversed() {
            guard sample.time >= since, let report = sample.speed else { break }
            if earlier.0 == nil {
                earlier.0 = report
            } else {
                earlier.1 = report
                break
            }
        }
        let median: Double
        switch earlier {
        case let (first?, second?): median = max(min(speed, first), min(max(speed, first), second))
        // Two reports: the lower, so a single spike counts as nothing.
        case let (first?, nil): median = min(speed, first)
        default: median = speed
        }
        return median >= Self.movingSpeed ? median : 0
    }

    /// Across a gap in the Doppler reports: at least the chord if either end was moving, at most the
    /// faster end's speed for the whole gap.
    private func bridge(from start: Sample, to end: Sample, speeds: (Double, Double)) -> Double {
        let elapsed = end.time - start.time
        let slower = min(speeds.0, speeds.1) >= Self.movingSpeed ? min(speeds.0, speeds.1) : 0
        let faster = max(speeds.0, speeds.1) >= Self.movingSpeed ? max(speeds.0, speeds.1) : 0
        let chord = Geodesy.distance(start.latitude, start.longitude, end.latitude, end.longitude)
        return min(elapsed * faster, max(chord, elapsed * slower))
    }

    /// The average speed along the chord of the last `chordSeconds` times the time since the last fix;
    /// 0 while standing; on starting, the chord from where counting stopped. A `strict` start also needs a
    /// departure (`departs`).
    private mutating func positionStep(to sample: Sample, strict: Bool) -> Double {
        let oldest = samples[0]
        // Starting is measured from where counting stopped, never from the way there.
        let start = stoppedAt.flatMap { $0.time > oldest.time ? $0 : nil } ?? oldest
        if movingByPosition {
            let from = samples.last(where: { $0.time <= sample.time - Self.stopSeconds }) ?? oldest
            movingByPosition = distance(from, sample) >= Self.stopRadius
            guard movingByPosition else {
                stoppedAt = samples.last
                return 0
            }
            let chordStart = samples.last(where: { $0.time <= sample.time - Self.chordSeconds }) ?? oldest
            return distance(chordStart, sample) / (sample.time - chordStart.time) * (sample.time - samples.last!.time)
        }
        movingByPosition = distance(start, sample) >= Self.startRadius && (!strict || departs(from: start, to: sample))
        return movingByPosition ? distance(start, sample) : 0
    }

    /// Whether the walker went on from `start`, where the speed said standing, to `sample` at about the pace
    /// before (`paced` metres). Positions alone measure the chords of that way, short by its turns (legs of
    /// 25-40 m: a fifth), so the pace counts it. A stop shows in the positions: over `chordSeconds` a standing
    /// receiver's position wanders by metres, growing with the root of the time, while a walker's moves on by
    /// pace times time, a turn cutting only the chord around it. So the walker went on if the positions' path in
    /// such chords is at least two thirds of `paced` and as far as a start (measured on generated walks over
    /// 40 s: 73-117 % for legs of 25 m and more; stops of 20-50 s after walking at most 56 % with a wander of
    /// 5 m, but up to 88 % with 8 m: the courses tell those apart, `coursesFollowPositions`).
    private func keepsGoing(from start: Sample, to sample: Sample, paced: Double) -> Bool {
        chordPath(from: start, to: sample) >= max(paced * 2 / 3, Self.startRadius)
            && coursesFollowPositions(from: start, to: sample)
    }

    /// Whether the courses reported from `start` to `end` point along the positions' way: in at least two thirds
    /// of its chords of `chordSeconds`, and at least two, three or more courses agree with each other and their
    /// sum lies within 45 degrees of the chord. Where the speed says standing, a walker's receiver still reports
    /// where it heads (gpsd 3.25 gives a GLL-first plotter's compass heading), while a standing receiver's course
    /// is the direction of its speed's noise, different at every fix; one that leaves the course out when slow
    /// shows none. Without this, a wander of 8-12 m passes the path's test alone: stops of 30-50 s counted as
    /// walked at the pace before (+69 m for a 50 s stop).
    private func coursesFollowPositions(from start: Sample, to end: Sample) -> Bool {
        var (chords, following) = (0, 0)
        var from = start
        var course = (east: 0.0, north: 0.0, reports: 0)
        // Whole chords only: over a second or two the positions' way is their noise.
        for sample in samples.filter({ $0.time > start.time && $0.time < end.time }) + [end] {
            if let track = sample.track {
                course = (
                    course.east + sin(track * .pi / 180), course.north + cos(track * .pi / 180), course.reports + 1
                )
            }
            guard sample.time - from.time >= Self.chordSeconds else { continue }
            chords += 1
            let way = Geodesy.displacement(
                from: (from.latitude, from.longitude), to: (sample.latitude, sample.longitude))
            let wayLength = (way.east * way.east + way.north * way.north).squareRoot()
            let courseLength = (course.east * course.east + course.north * course.north).squareRoot()
            // Courses that agree: the sum of n random directions is about root n long, of n alike nearly n.
            if course.reports >= 3 && courseLength >= Self.courseAgreement * Double(course.reports)
                && way.east * course.east + way.north * course.north >= Self.courseAgreement * wayLength * courseLength
            {
                following += 1
            }
            from = sample
            course = (0, 0, 0)
        }
        return chords >= 2 && 3 * following >= 2 * chords
    }

    /// When the speed says moving again before the positions started or showed the walker going on: the way
    /// from where counting stopped (within the window) to `end` if it is longer than a wandering position goes
    /// in that time, else 0.
    private func walkedWhileStanding(until end: Sample) -> Double {
        guard let start = stoppedAt, start.time > samples[0].time else { return 0 }
        let away = distance(start, end)
        return away >= max(Self.startRadius, 2 * Self.movingSpeed * (end.time - start.time)) ? away : 0
    }

    /// The median Doppler report over the `paceSeconds` up to `end`, all within the window, if it says moving.
    private func pace(before end: Sample) -> Double? {
        var reports: [Double] = []
        var later = end
        for sample in samples.reversed() where sample.time <= end.time {
            guard let report = sample.speed, later.time - sample.time <= Self.speedGap else { return nil }
            reports.append(report)
            if sample.time <= end.time - Self.paceSeconds {
                let median = reports.sorted()[reports.count / 2]
                return median >= Self.movingSpeed ? median : nil
            }
            later = sample
        }
        return nil
    }

    /// The positions' path from `start` to `end` in chords of `chordSeconds`, over the window's fixes.
    private func chordPath(from start: Sample, to end: Sample) -> Double {
        var path = 0.0
        var from = start
        for sample in samples where sample.time < end.time && sample.time - from.time >= Self.chordSeconds {
            path += distance(from, sample)
            from = sample
        }
        return path + distance(from, end)
    }

    /// Whether every fix of the last `departureSeconds` up to `sample`, all after `start`, was farther from
    /// `start` than the one before.
    private func departs(from start: Sample, to sample: Sample) -> Bool {
        var farther = distance(start, sample)
        for earlier in samples.reversed() where earlier.time > start.time {
            let away = distance(start, earlier)
            guard away < farther else { return false }
            if earlier.time <= sample.time - Self.departureSeconds { return true }
            farther = away
        }
        return false
    }

    private func distance(_ a: Sample, _ b: Sample) -> Double {
        Geodesy.distance(a.latitude, a.longitude, b.latitude, b.longitude)
    }
}
