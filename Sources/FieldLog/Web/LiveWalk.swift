#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The walk the live page shows (the one being recorded, else the newest stored), kept in step with its
/// journal by reading only what was appended since the last look: the web server never touches the
/// recorder's state, and a `fieldlog star` from another process shows up like the recorder's own lines.
///
/// Every line that changes a card (a milestone, its photo outcome, a star) gets the next number in the
/// walk, `seq`. Numbers depend only on the journal, so a page, an event stream and a reconnecting browser
/// (`Last-Event-ID`) agree on them even after the model was let go and read again.
final class LiveWalk: Sendable {
    enum ChangeKind: String, Sendable {
        case milestone, photo, star
    }

    struct Change: Sendable {
        var kind: ChangeKind
        var milestone: Int
        var seq: Int
    }

    /// What a look at the journal found.
    struct Update {
        var walkID: String?
        /// The walk is another one than at the last look, or its journal was rewritten: pages must reload.
        var replaced: Bool
        var changes: [Change]
    }

    private struct Followed {
        var log: WalkLog
        let follower: JournalFollower
        var seq = 0
        /// Each milestone's last change.
        var changed: [Int: Change] = [:]
    }

    private let store: JournalStore
    private let currentWalk: @Sendable () -> String?
    /// nil until the first look and after `release`; `.some(nil)` when there was no walk to follow.
    private let followed = Mutex<Followed??>(nil)

    /// `currentWalk` names the walk being recorded, if any.
    init(store: JournalStore, currentWalk: @escaping @Sendable () -> String?) {
        self.store = store
        self.currentWalk = currentWalk
    }

    /// Reads what was appended, then runs `body` on the walk as it now stands (nil: no walk yet).
    func look<Result>(_ body: (Update, LiveWalkView?) -> Result) -> Result {
        followed.withLock { followed in
            let update = Self.refresh(&followed, id: currentWalk() ?? (try? store.walkIDs())?.last, store: store)
            guard case let .some(.some(current)) = followed else { return body(update, nil) }
            return body(update, LiveWalkView(log: current.log, seq: current.seq, changed: current.changed))
        }
    }

    /// Lets go of the walk's memory (nobody is watching); the next look reads the journal again.
    func release() {
        followed.withLock { $0 = nil }
    }

    private static func refresh(_ state: inout Followed??, id: String?, store: JournalStore) -> Update {
        // A first look (after a release too) replaces nothing that anyone was shown.
        var replaced = false
        guard let id else {
            if case .some(.some) = state { replaced = true }
            state = .some(nil)
            return Update(walkID: nil, replaced: replaced, changes: [])
        }
        let path = store.path(for: id)
        var followed: Followed
        switch state {
        case let .some(.some(current)) where current.log.id == id && fileSize(path) >= current.follower.offset:
            followed = current
        case .some:
            // Another walk, a first one, or the journal shrank (the recorder cut back lines a failed sync may
            // have lost): read it from the start.
            replaced = true
            followed = Followed(log: WalkLog(id: id), follower: JournalFollower(path: path))
        case nil:
            followed = Followed(log: WalkLog(id: id), follower: JournalFollower(path: path))
        }
        state = nil  // `followed` holds the only reference while lines are applied: no copy of the log
        defer { state = .some(followed) }
        var changes: [Change] = []
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
                let change = Change(kind: kind, milestone: milestone, seq: followed.seq)
                followed.changed[milestone] = change
                changes.append(change)
            }
        }
        return Update(walkID: id, replaced: replaced, changes: changes)
    }

    private static func fileSize(_ path: String) -> off_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_size : 0
    }
}

/// The followed walk at one moment, lent to a renderer (keep it no longer: the log is shared copy-on-write).
struct LiveWalkView {
    let log: WalkLog
    let seq: Int
    let changed: [Int: LiveWalk.Change]

    /// The last change of each milestone changed after `seq`, oldest first: what a reconnecting page missed.
    func changes(after seq: Int) -> [LiveWalk.Change] {
        changed.values.filter { $0.seq > seq }.sorted { $0.seq < $1.seq }
    }
}
