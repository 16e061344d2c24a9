import FoundationEssentials
import Glibc
import SystemIO
package import WalkModel

/// A walk in a few numbers: what `fieldlog walks` and `status` show and what the photo service needs to
/// know of a walk without reading its journal. Made by reading the journal's records in order, and read
/// on from where it stopped when the journal grows.
package struct WalkSummary: Codable, Sendable, Equatable {
    package var id: String
    package var started: Double?
    package var ended: Double?
    package var distance: Double
    package var milestones: Int
    /// Milestones still waiting for a photo.
    package var pendingPhotos: Int
    /// Milestones marked as favourites.
    package var favourites: Int
    /// GPS time of the walk's last fix.
    package var lastFixTime: Double?
    /// The journal this summary was made from: the bytes of its complete lines read, and its modification
    /// time (nanoseconds). A journal only grows, so one that is longer is read on from `size`, once the
    /// bytes before `size` are checked to be the same (`tailHash`); one that differs otherwise (the
    /// recorder cut back lines a failed sync may have lost) is read again from the start.
    package var size: Int64
    package var modified: Int64
    /// FNV-1a of the up to 256 bytes before `size`.
    package var tailHash: UInt64 = 0
    /// What reading on needs: the milestones waiting for a photo and the favourites, by index, and the
    /// last milestone's index (a repeated one is not counted).
    package var waiting: [Int] = []
    package var starred: [Int] = []
    package var lastMilestone: Int?

    package init(id: String) {
        self.id = id
        distance = 0
        milestones = 0
        pendingPhotos = 0
        favourites = 0
        size = 0
        modified = 0
    }

    /// Takes in one record, as `WalkLog.apply` does.
    package mutating func apply(_ record: JournalRecord) {
        switch record {
        case let .walkStart(_, time, _):
            started = time
        case let .point(point):
            distance = ended == nil ? point.distance : distance
            lastFixTime = point.fix.time
        case let .milestone(milestone):
            guard lastMilestone.map({ milestone.index > $0 }) ?? true else { return }
            lastMilestone = milestone.index
            milestones += 1
            waiting.append(milestone.index)
        case let .walkEnd(time, distance):
            ended = time
            self.distance = distance
        case let .photo(photo):
            if let position = waiting.lastIndex(of: photo.milestone) { waiting.remove(at: position) }
        case let .star(milestone, isStarred, _):
            if isStarred, !starred.contains(milestone) { starred.append(milestone) }
            if !isStarred { starred.removeAll { $0 == milestone } }
        case .segment, .event:
            return
        }
        pendingPhotos = waiting.count
        favourites = starred.count
    }

    /// Reads `path` from `size` on, up to its last complete line.
    package mutating func readOn(_ path: String) throws {
        let reader = JournalReader(path: path)
        let pass = try reader.forEachRecord(from: off_t(size)) { record, _ in
            if let record { apply(record) }
        }
        size = Int64(pass.end)
        tailHash = try Self.hash(before: size, in: reader)
    }

    package static func hash(before end: Int64, in reader: JournalReader) throws -> UInt64 {
        let start = max(0, end - 256)
        return try reader.bytes(from: off_t(start), count: Int(end - start)).reduce(0xcbf2_9ce4_8422_2325) {
            ($0 ^ UInt64($1)) &* 0x100_0000_01b3
        }
    }
}

/// `walks.index` in the state directory: one summary per walk, so that start-up, `fieldlog walks` and
/// `status` cost a `stat` per walk instead of reading every journal (a year of walks is hundreds of MB),
/// and the walk being recorded is read only from where its summary stopped. It is only a cache: a
/// missing or damaged index is rebuilt from the journals, one at a time.
package enum WalkIndex {
    package static let fileName = "walks.index"
    /// About 300 bytes a walk: room for some 50 000 walks. A larger file (or not a regular file) is not read
    /// but rebuilt.
    package static let maxBytes = 16 << 20

    /// Summaries of every walk, oldest first. Saves the index when it changed and `save` is set; a
    /// failure to save is ignored (a read-only viewer, a full disk: it is rebuilt next time).
    package static func summaries(in store: JournalStore, save: Bool = true) throws(JournalError) -> [WalkSummary] {
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
            let modified = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
            if let summary = known[id], summary.modified == modified, summary.size <= status.st_size {
                summaries.append(summary)
                continue
            }
            summaries.append(
                try summary(of: id, in: store, from: known[id], size: Int64(status.st_size), modified: modified))
            changed = true
        }
        if save && (changed || known.count != summaries.count), let data = try? JSONEncoder().encode(summaries) {
            try? FileIO.replace(path, with: data, durable: false)
        }
        return summaries
    }

    /// Walk `id`'s summary: `known` read on if its journal only grew since, else made anew.
    private static func summary(
        of id: String, in store: JournalStore, from known: WalkSummary?, size: Int64, modified: Int64
    ) throws(JournalError) -> WalkSummary {
        let path = store.path(for: id)
        do {
            var summary = WalkSummary(id: id)
            if let known, known.size <= size,
                (try? WalkSummary.hash(before: known.size, in: JournalReader(path: path))) == known.tailHash
            {
                summary = known
            }
            try summary.readOn(path)
            summary.modified = modified
            return summary
        } catch let error as FileIOError {
            throw JournalError(.cannotRead, path: error.path, reason: error.reason, errno: error.number)
        } catch {
            throw JournalError(.cannotRead, path: path, reason: "\(error)")
        }
    }
}
