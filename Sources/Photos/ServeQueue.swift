package import WalkJournal
package import WalkModel

/// Which milestone the photo service serves next: the walk being recorded first, whatever happened before
/// start-up; then the other walks, newest first. A walk's journal is read once, when its turn first comes,
/// for the milestones it still has waiting and the photos it already shows; older walks are known from the
/// walk index, which arrives when it has been built (after recording has begun).
package struct ServeQueue {
    package struct Walk {
        package var pending: [Milestone]
        package var picks: WalkPicks
    }

    package enum Next: Equatable {
        /// Serve this milestone of this walk.
        case serve(walkID: String, milestone: Milestone)
        /// Read this walk's journal first (`read(_:log:)`).
        case read(walkID: String)
        case idle
    }

    package private(set) var walks: [String: Walk] = [:]
    /// Milestones handed over before their walk was read.
    private var early: [String: [Milestone]] = [:]
    /// Walks the index says have milestones waiting, not read yet, newest first.
    private var backlog: [String] = []
    /// Whether the walk index has arrived (it may list nothing).
    package private(set) var historyKnown = false

    package mutating func arrived(_ milestone: Milestone, walkID: String) {
        if walks[walkID] != nil {
            insert([milestone], into: walkID)
        } else {
            early[walkID, default: []].append(milestone)
        }
    }

    /// The walk index's summaries: those with milestones waiting join the backlog.
    package mutating func history(_ summaries: [WalkSummary]) {
        backlog = summaries.filter { $0.pendingPhotos > 0 && walks[$0.id] == nil && early[$0.id] == nil }
            .map(\.id).sorted(by: >)
        historyKnown = true
    }

    /// Walk ids sort as their start times do (`20250101T080000Z`), so the greatest is the newest.
    package func next(current: String?) -> Next {
        if let current {
            if let walk = walks[current] {
                if let first = walk.pending.first { return .serve(walkID: current, milestone: first) }
            } else if early[current] != nil || backlog.contains(current) {
                return .read(walkID: current)
            }
        }
        let waiting = walks.filter { !$0.value.pending.isEmpty }.keys.max()
        let unread = (Array(early.keys) + backlog.prefix(1)).max()
        if let unread, waiting.map({ unread > $0 }) ?? true { return .read(walkID: unread) }
        if let waiting, let first = walks[waiting]?.pending.first { return .serve(walkID: waiting, milestone: first) }
        return .idle
    }

    /// A walk's journal as read now (nil when it could not be), with what arrived for it meanwhile.
    package mutating func read(_ walkID: String, log: WalkLog?) {
        walks[walkID] = Walk(pending: [], picks: log.map(WalkPicks.init) ?? WalkPicks())
        insert((log?.pendingMilestones ?? []) + (early.removeValue(forKey: walkID) ?? []), into: walkID)
        backlog.removeAll { $0 == walkID }
    }

    package mutating func served(_ index: Int, walkID: String, photo: PhotoCandidate?) {
        walks[walkID]?.pending.removeAll { $0.index == index }
        if let photo { walks[walkID]?.picks.add(photo) }
    }

    /// Photos the walk must not be offered again (rejected ones).
    package mutating func avoid(_ photoID: String, walkID: String) {
        walks[walkID]?.picks.avoided.insert(photoID)
    }

    /// Nothing waits, and nothing more is known to wait.
    package var isEmpty: Bool {
        historyKnown && backlog.isEmpty && early.isEmpty && walks.values.allSatisfy { $0.pending.isEmpty }
    }

    package var waitingCount: Int {
        walks.values.reduce(0) { $0 + $1.pending.count } + early.values.reduce(0) { $0 + $1.count }
    }

    /// Milestones in index order, each once.
    private mutating func insert(_ milestones: [Milestone], into walkID: String) {
        guard var walk = walks[walkID] else { return }
        for milestone in milestones where !walk.pending.contains(where: { $0.index == milestone.index }) {
            walk.pending.append(milestone)
        }
        walk.pending.sort { $0.index < $1.index }
        walks[walkID] = walk
    }
}
