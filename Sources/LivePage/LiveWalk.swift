package import Glibc
import Synchronization
package import WalkJournal
import WalkModel

/// The walk the live page shows (the one being recorded, else the newest stored), kept in step with its
/// journal by reading only what was appended since the last look: the web server never touches the
/// recorder's state, and a `fieldlog star` from another process shows up like the recorder's own lines.
///
/// Every line that changes a card (a milestone, its photo outcome, a star) gets the next number in the
/// walk, `seq`. Numbers depend only on the journal, so a page, an event stream and a reconnecting browser
/// (`Last-Event-ID`) agree on them even after the model was let go and read again.
package final class LiveWalk: Sendable {
    package enum ChangeKind: String, Sendable {
        case milestone, photo, star
    }

    package struct Change: Sendable {
        package var kind: ChangeKind
        package var milestone: Int
        package var seq: Int
    }

    /// What changed since the last `takeChanges`.
    package struct Update {
        package var walkID: String?
        /// The walk is another one than before, or its journal was rewritten: pages must reload.
        package var replaced: Bool
        /// Each changed milestone's last change, oldest first.
        package var changes: [Change]
    }

    private struct Followed {
        var log: WalkLog
        let follower: JournalFollower
        var seq = 0
        /// Each milestone's last change.
        var changed: [Int: Change] = [:]
    }

    private struct State {
        /// nil before the first look and while there is no walk.
        var followed: Followed?
        /// Looked at since the start or the last `release`: a walk read now replaces one shown before.
        var looked = false
        /// Changes up to this seq were handed out by `takeChanges`.
        var taken = 0
        /// The walk was replaced since the last `takeChanges`.
        var replaced = false
    }

    private let store: JournalStore
    private let currentWalk: @Sendable () -> String?
    private let state = Mutex(State())

    /// `currentWalk` names the walk being recorded, if any.
    package init(store: JournalStore, currentWalk: @escaping @Sendable () -> String?) {
        self.store = store
        self.currentWalk = currentWalk
    }

    /// Reads what was appended, then runs `body` on the walk as it now stands (nil: no walk yet). Pages and
    /// exports look; what they read stays to be handed out by `takeChanges`.
    package func look<Result>(_ body: (LiveWalkView?) -> Result) -> Result {
        state.withLock { state in
            refresh(&state)
            return body(
                state.followed.map {
                    LiveWalkView(log: $0.log, seq: $0.seq, changed: $0.changed, length: $0.follower.offset)
                })
        }
    }

    /// Like `look`, and hands over what changed since the last call, by whichever look it was read: the one
    /// consumer (the event stream) sends it to every page.
    package func takeChanges<Result>(_ body: (Update, LiveWalkView?) -> Result) -> Result {
        state.withLock { state in
            refresh(&state)
            let view = state.followed.map {
                LiveWalkView(log: $0.log, seq: $0.seq, changed: $0.changed, length: $0.follower.offset)
            }
            let update = Update(
                walkID: view?.log.id, replaced: state.replaced,
                changes: state.replaced ? [] : view?.changes(after: state.taken) ?? [])
            state.replaced = false
            state.taken = view?.seq ?? 0
            return body(update, view)
        }
    }

    /// Lets go of the walk's memory (nobody is watching); the next look reads the journal again.
    package func release() {
        state.withLock { $0 = State() }
    }

    private func refresh(_ state: inout State) {
        defer { state.looked = true }
        guard let id = currentWalk() ?? (try? store.walkIDs())?.last else {
            if state.followed != nil { state.replaced = true }
            state.followed = nil
            state.taken = 0
            return
        }
        let path = store.path(for: id)
        var followed: Followed
        let fresh: Bool
        if let current = state.followed, current.log.id == id, Self.fileSize(path) >= current.follower.offset {
            followed = current
            fresh = false
        } else {
            // Another walk, a first one, or the journal shrank (the recorder cut back lines a failed sync may
            // have lost): read it from the start. A first look replaces nothing that anyone was shown.
            if state.looked { state.replaced = true }
            followed = Followed(log: WalkLog(id: id, journal: path), follower: JournalFollower(path: path))
            fresh = true
        }
        state.followed = nil  // `followed` holds the only reference while lines are applied: no copy of the log
        defer { state.followed = followed }
        // A long walk read from the start comes a few MiB at a time.
        repeat {
            for line in followed.follower.newLines() {
                guard let record = JournalCodec.decode(line) else { continue }
                followed.log.apply(record)
                let change: (ChangeKind, Int)? =
                    switch record {
                    case let .milestone(milestone): (.milestone, milestone.index)
                    case let .photo(photo): (.photo, photo.milestone)
                    case let .star(milestone, _, _): (.star, milestone)
                    default: nil
                    }
                if let (kind, milestone) = change {
                    followed.seq += 1
                    followed.changed[milestone] = Change(kind: kind, milestone: milestone, seq: followed.seq)
                }
            }
        } while followed.follower.hasMore
        followed.log.journalLength = followed.follower.offset
        // A walk read from the start is shown whole by whoever looks now: nothing of it is a change to hand out.
        if fresh { state.taken = followed.seq }
    }

    private static func fileSize(_ path: String) -> off_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_size : 0
    }
}

/// The followed walk at one moment, lent to a renderer (keep it no longer: the log is shared copy-on-write).
package struct LiveWalkView {
    package let log: WalkLog
    package let seq: Int
    package let changed: [Int: LiveWalk.Change]
    /// Bytes of the journal read: the walk's version, for what is rendered from it.
    package let length: off_t

    /// The last change of each milestone changed after `seq`, oldest first: what a reconnecting page missed.
    package func changes(after seq: Int) -> [LiveWalk.Change] {
        changed.values.filter { $0.seq > seq }.sorted { $0.seq < $1.seq }
    }
}
