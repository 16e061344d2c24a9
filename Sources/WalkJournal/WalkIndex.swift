import FoundationEssentials
import Glibc
import SystemIO

/// A walk in a few numbers: what `fieldlog walks` lists and what the photo service needs to know of a
/// walk without reading its journal.
public struct WalkSummary: Codable, Sendable, Equatable {
    public var id: String
    public var started: Double?
    public var ended: Double?
    public var distance: Double
    public var milestones: Int
    /// Milestones still waiting for a photo.
    public var pendingPhotos: Int
    /// Milestones marked as favourites.
    public var favourites: Int
    /// The journal this summary was made from: its size and modification time (nanoseconds). A journal
    /// only grows, and its repair only shrinks it, so a summary whose file differs is made anew.
    package var size: Int64
    package var modified: Int64

    package init(_ log: WalkLog, size: Int64, modified: Int64) {
        id = log.id
        started = log.started
        ended = log.ended
        distance = log.distance
        milestones = log.milestones.count
        pendingPhotos = log.pendingMilestones.count
        favourites = log.starred.count
        self.size = size
        self.modified = modified
    }
}

/// `walks.index` in the state directory: one summary per walk, so that start-up and `fieldlog walks` cost
/// a `stat` per walk instead of reading every journal (a year of walks is hundreds of MB of journals). It
/// is only a cache, checked against each journal's size and mtime: a missing, stale or damaged index is
/// rebuilt from the journals, one at a time.
public enum WalkIndex {
    public static let fileName = "walks.index"
    /// About 250 bytes a walk: room for some 60 000 walks. A larger file (or not a regular file) is not read
    /// but rebuilt.
    package static let maxBytes = 16 << 20

    /// Summaries of every walk, oldest first. Saves the index when it changed and `save` is set; a
    /// failure to save is ignored (a read-only viewer, a full disk: it is rebuilt next time).
    public static func summaries(in store: JournalStore, save: Bool = true) throws(JournalError) -> [WalkSummary] {
        let path = store.directory + "/" + fileName
        var stored: [UInt8] = []
        do {
            stored = try FileIO.readRegular(fileName, in: store.directory, maxBytes: maxBytes)
        } catch {
            RefusedFiles.report(error)
        }
        let known = Dictionary(
            ((try? JSONDecoder().decode([WalkSummary].self, from: Data(stored))) ?? []).map { ($0.id, $0) },
            uniquingKeysWith: { _, last in last })
        var summaries: [WalkSummary] = []
        var changed = false
        for id in try store.walkIDs() {
            var status = stat()
            guard stat(store.path(for: id), &status) == 0 else { continue }
            let size = Int64(status.st_size)
            let modified = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
            if let summary = known[id], summary.size == size, summary.modified == modified {
                summaries.append(summary)
            } else {
                summaries.append(WalkSummary(try store.read(id), size: size, modified: modified))
                changed = true
            }
        }
        if save && (changed || known.count != summaries.count), let data = try? JSONEncoder().encode(summaries) {
            try? FileIO.replace(path, with: data, durable: false)
        }
        return summaries
    }
}
