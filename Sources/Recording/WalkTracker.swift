package import WalkJournal
package import WalkModel

/// What a fix did to the walk, in the order it must be journaled.
package enum WalkEvent: Sendable, Equatable {
    case segment(SegmentBreak)
    case point(TrackPoint)
    case milestone(Milestone)
    case rejected(Fix, reason: String)
}

/// The walk's state machine: filters fixes, splits segments, places milestones, and leaves measuring the
/// distance along the path to `DistanceEstimator`. It runs on GPS time only, so a replayed capture gives
/// the same walk at any speed.
package struct WalkTracker: Sendable {
    package let limits: WalkLimits
    package private(set) var distance: Double = 0
    package private(set) var segment: Int = 0
    package private(set) var milestoneCount: Int = 0
    /// The next multiple of `milestoneEvery` the walk has to reach for a milestone.
    private var nextMilestoneDistance: Double = 0
    package private(set) var lastPoint: TrackPoint?
    private var estimator = DistanceEstimator()
    private var speedRejections = 0
    /// An outlier reference would reject every good fix after it; after this many rejections in a row
    /// the walk restarts measuring from the newest fix.
    private static let speedRejectionsBeforeReset = 10

    package init(limits: WalkLimits) {
        self.limits = limits
    }

    /// What rebuilding an interrupted walk needs of its journal's points, taken in one at a time as the
    /// journal is read: the last segment's points of the estimator's memory (at most `maxPoints`), and
    /// whether the last point before them that tells says the receiver measures speed.
    package struct Restoration: Sendable {
        /// Bounds what a journal of points that all share one time can make recovery hold: 20 Hz for the
        /// estimator's memory.
        static let maxPoints = 20 * Int(DistanceEstimator.memory)
        /// The points kept are `points[first...]`: the ones before are let go a block at a time, not moved
        /// down for every point added (a two-day walk at 10 Hz is 1.7 million of them).
        private var points: [TrackPoint] = []
        private var first = 0
        fileprivate private(set) var measuresSpeed: Bool?

        package init() {}

        fileprivate var recent: ArraySlice<TrackPoint> { points[first...] }

        package mutating func add(_ point: TrackPoint) {
            let since = point.fix.time - DistanceEstimator.memory
            while first < points.count,
                points[first].segment != point.segment || points[first].fix.time < since
                    || points.count - first >= Self.maxPoints
            {
                // A fix that tells whether the receiver measures speed: a course comes only with a measured
                // speed, a missing speed only from a receiver without it.
                if points[first].fix.speed == nil || points[first].fix.track != nil {
                    measuresSpeed = points[first].fix.track != nil
                }
                first += 1
            }
            if first >= Self.maxPoints {
                points.removeFirst(first)
                first = 0
            }
            points.append(point)
        }
    }

    /// Rebuilds the state of an interrupted walk from its journal, so it continues without losing
    /// distance or repeating a milestone: `points` are its points in order (all of them, or those a
    /// `Restoration` kept).
    package init(limits: WalkLimits, restoring points: [TrackPoint], milestones: [Milestone]) {
        var restoration = Restoration()
        points.forEach { restoration.add($0) }
        self.init(limits: limits, restoring: restoration, milestones: milestones)
    }

    package init(limits: WalkLimits, restoring restoration: Restoration, milestones: [Milestone]) {
        self.limits = limits
        milestoneCount = milestones.count
        if let last = milestones.last {
            nextMilestoneDistance = nextMultiple(after: last.distance)
        }
        guard let last = restoration.recent.last else { return }
        lastPoint = last
        distance = last.distance
        segment = last.segment
        // The estimator's state depends on the segment's last two minutes, and on whether the receiver
        // measures speed: replaying them rebuilds it.
        estimator = DistanceEstimator(measuresSpeed: restoration.measuresSpeed ?? false)
        for point in restoration.recent {
            // Bounded as when the fix was recorded: a journal written before the bounds may hold a speed of 1e308.
            let fix = point.fix.bounded
            _ = estimator.advance(to: fix, positionError: positionError(of: fix), maxSpeed: limits.maxSpeed)
        }
    }

    /// Why a journaled walk's distance cannot be true, with the distance its fixes give when measured again;
    /// nil when it can be. No walk goes further than `maxSpeed` for its time plus three times the largest
    /// position error accepted at every fix.
    package static func implausibleDistance(
        of log: WalkLog, limits: WalkLimits
    ) -> (reason: String, recomputed: Double)? {
        guard let first = log.firstPoint, let last = log.lastPoint else { return nil }
        let duration = last.fix.time - first.fix.time
        let errors = 3 * max(limits.minStep, limits.maxHorizontalError) * Double(log.pointCount)
        let claimed = max(log.distance, log.milestones.last?.distance ?? 0)
        // Written so that NaN is implausible too.
        guard !(claimed <= limits.maxSpeed * duration + errors) else { return nil }
        var tracker = WalkTracker(limits: limits)
        // A journal cut short meanwhile gives the distance of what is left of it.
        try? log.forEachPoint { _ = tracker.ingest($0.fix) }
        return ("a distance of \(claimed) m in \(Int(duration)) s", tracker.distance)
    }

    /// Why `fix` is unusable on its own, whatever came before it; nil if it is usable.
    package static func flaw(of fix: Fix, limits: WalkLimits) -> String? {
        guard fix.mode >= 2, fix.latitude.isFinite, fix.longitude.isFinite,
            abs(fix.latitude) <= 90, abs(fix.longitude) <= 180
        else {
            return "no position"
        }
        if let eph = fix.horizontalError, !(eph <= limits.maxHorizontalError) {
            return "horizontal error \(Int(min(eph, 1e9))) m"
        }
        return nil
    }

    package mutating func ingest(_ reported: Fix) -> [WalkEvent] {
        let fix = reported.bounded
        if let flaw = Self.flaw(of: fix, limits: limits) {
            return [.rejected(fix, reason: flaw)]
        }
        guard let last = lastPoint else {
            return start(fix)
        }
        let elapsed = fix.time - last.fix.time
        guard elapsed > 0 else {
            return [.rejected(fix, reason: "time did not advance")]
        }
        let threshold = positionError(of: fix)
        let jump = Geodesy.distance(last.fix.latitude, last.fix.longitude, fix.latitude, fix.longitude)
        let plausible = jump <= limits.maxSpeed * elapsed + threshold

        var events: [WalkEvent] = []
        var newSegment = false
        if elapsed > limits.segmentGap {
            segment += 1
            newSegment = true
            events.append(.segment(SegmentBreak(index: segment, time: fix.time, gap: elapsed)))
        } else if !plausible {
            speedRejections += 1
            guard speedRejections >= Self.speedRejectionsBeforeReset else {
                return [.rejected(fix, reason: "jump of \(Int(jump)) m in \(elapsed) s")]
            }
            segment += 1
            newSegment = true
            events.append(.segment(SegmentBreak(index: segment, time: fix.time, gap: elapsed)))
        }
        speedRejections = 0

        if newSegment {
            estimator.restart()
            _ = estimator.advance(to: fix, positionError: threshold, maxSpeed: limits.maxSpeed)
            // Across a gap only the straight line is known, and only if it was travelled at a believable
            // speed and is more than the position's error.
            if plausible && jump >= threshold {
                distance += jump
            }
        } else {
            distance += estimator.advance(to: fix, positionError: threshold, maxSpeed: limits.maxSpeed)
        }
        let point = TrackPoint(fix: fix, segment: segment, distance: distance)
        lastPoint = point
        events.append(.point(point))
        if distance >= nextMilestoneDistance {
            events.append(.milestone(recordMilestone(at: point)))
        }
        return events
    }

    private mutating func start(_ fix: Fix) -> [WalkEvent] {
        let point = TrackPoint(fix: fix, segment: segment, distance: distance)
        lastPoint = point
        _ = estimator.advance(to: fix, positionError: positionError(of: fix), maxSpeed: limits.maxSpeed)
        return [.point(point), .milestone(recordMilestone(at: point))]
    }

    /// How far a fix's position may be off: its eph, at least `minStep`.
    private func positionError(of fix: Fix) -> Double {
        max(limits.minStep, fix.horizontalError ?? limits.unknownHorizontalError)
    }

    private mutating func recordMilestone(at point: TrackPoint) -> Milestone {
        let milestone = Milestone(
            index: milestoneCount, time: point.fix.time, latitude: point.fix.latitude,
            longitude: point.fix.longitude, distance: point.distance)
        milestoneCount += 1
        nextMilestoneDistance = nextMultiple(after: point.distance)
        return milestone
    }

    /// One milestone per crossing, even when a bridged gap jumps over several multiples at once.
    private func nextMultiple(after distance: Double) -> Double {
        ((distance / limits.milestoneEvery).rounded(.down) + 1) * limits.milestoneEvery
    }
}
