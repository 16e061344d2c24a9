package import WalkModel

/// What is shared of a walk, chosen from its journal records in journal order: a fix at most every `every`
/// seconds of GPS time, always the first and last fix of a segment, every milestone at its position, and each
/// milestone's photo when it is journaled.
///
/// The choice depends on the records read so far and nothing else (no clock, no network): the messages of a
/// journal's first N lines are always the same, so a message is named by its walk and its number in that walk,
/// and the durable position of a destination is one number per walk (see `ShareCursor`).
package struct ShareSelector {
    package enum Content: Sendable, Equatable {
        /// A fix chosen by the GPS-time rate, or the first or last of a segment.
        case fix(TrackPoint)
        /// A milestone at its position; with the fix at the same GPS time, when there is one.
        case milestone(Milestone, TrackPoint?)
        /// A milestone's photo: sent at the milestone's own position and GPS time, so that a server drawing the
        /// track sees the same point again, never a jump.
        case photo(Milestone, PhotoCandidate, cacheKey: String)

        package var time: Double {
            switch self {
            case let .fix(point): point.fix.time
            case let .milestone(milestone, _): milestone.time
            case let .photo(milestone, _, _): milestone.time
            }
        }
    }

    package let every: Double
    /// A fix chosen, held until the next record: a milestone at its time is sent in its place (one point, not two).
    private var held: TrackPoint?
    /// The last fix read, and whether it went out (or is held).
    private var previous: TrackPoint?
    private var previousChosen = false
    private var lastChosenTime: Double?
    private var milestones: [Int: Milestone] = [:]
    /// Whether the walk's end was read.
    package private(set) var ended = false

    package init(every: Double) {
        self.every = every
    }

    package mutating func feed(_ record: JournalRecord) -> [Content] {
        var out: [Content] = []
        switch record {
        case .walkStart:
            self = ShareSelector(every: every)
        case let .point(point):
            if let held { out.append(.fix(held)) }
            held = nil
            let startsSegment = previous.map { $0.segment != point.segment } ?? true
            if startsSegment, let previous, !previousChosen { out.append(.fix(previous)) }
            if startsSegment || lastChosenTime.map({ point.fix.time - $0 >= every }) ?? true {
                held = point
                lastChosenTime = point.fix.time
                previousChosen = true
            } else {
                previousChosen = false
            }
            previous = point
        case let .milestone(milestone):
            milestones[milestone.index] = milestone
            if let held, held.fix.time == milestone.time {
                out.append(.milestone(milestone, held))
            } else {
                if let held { out.append(.fix(held)) }
                let atFix = previous.flatMap { $0.fix.time == milestone.time ? $0 : nil }
                out.append(.milestone(milestone, atFix))
                if atFix != nil { previousChosen = true }
            }
            held = nil
            lastChosenTime = max(lastChosenTime ?? milestone.time, milestone.time)
        case .segment:
            out += endOfSegment()
        case .walkEnd:
            out += endOfSegment()
            ended = true
        case let .photo(photo):
            guard case let .found(candidate, _, cacheKey) = photo.outcome, let milestone = milestones[photo.milestone]
            else { break }
            if let held { out.append(.fix(held)) }
            held = nil
            out.append(.photo(milestone, candidate, cacheKey: cacheKey))
        case let .event(event) where event.kind == .sessionEnd || event.kind == .gpsdLost:
            // The recorder stopped, or the receiver went quiet: followers get the last position now, not when
            // the walk goes on (if it goes on in the same segment, its next fix counts as a first one).
            out += endOfSegment()
        case .event, .star:
            break
        }
        return out
    }

    /// What is still held back, for a walk that is over (a later walk has begun): as its end would give.
    package mutating func finish() -> [Content] {
        ended = true
        return endOfSegment()
    }

    private mutating func endOfSegment() -> [Content] {
        var out: [Content] = []
        if let held { out.append(.fix(held)) }
        held = nil
        if let previous, !previousChosen { out.append(.fix(previous)) }
        previous = nil
        previousChosen = false
        return out
    }
}
