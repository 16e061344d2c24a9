import FoundationEssentials
import Glibc
import SystemIO
package import WalkModel

/// The state directory: one append-only journal per walk, named from the walk's first GPS time so that
/// names sort in walk order.
package struct JournalStore: Sendable {
    package let directory: String

    package init(directory: String) {
        self.directory = directory
    }

    package static let prefix = "walk-"
    package static let suffix = ".jsonl"
    package func path(for id: String) -> String {
        directory + "/" + Self.prefix + id + Self.suffix
    }

    /// Creates the directory if needed and checks it can be written.
    package func prepare() throws(JournalError) {
        do {
            try FileIO.makeDirectories(directory)
        } catch {
            throw JournalError(.cannotOpen, path: error.path, reason: "cannot create it: \(error.reason)")
        }
        guard FileManager.default.isWritableFile(atPath: directory) else {
            throw JournalError(.cannotWrite, path: directory, reason: "permission denied")
        }
    }

    /// Removes the temporary files of whole-file replacements (`.NAME.PID.tmp`: walks.index; status.json
    /// was replaced that way before it was written in place) that a crash or power cut left behind. Only the
    /// recorder calls it: a replacement may be under way in a running recorder.
    package func removeLeftovers() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where name.hasPrefix(".") && name.hasSuffix(".tmp") {
            try? FileManager.default.removeItem(atPath: directory + "/" + name)
        }
    }

    /// Walk ids, oldest first: journals that are regular files, of any size (they are read a chunk at a
    /// time). A link or a FIFO (opening it would wait for a writer for ever) named like a journal is skipped
    /// and told of once: no command, nor the recorder, reads it.
    package func walkIDs() throws(JournalError) -> [String] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            let exists = FileManager.default.fileExists(atPath: directory)
            throw JournalError(.cannotRead, path: directory, reason: exists ? "permission denied" : "no such directory")
        }
        let parent = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if parent >= 0 { close(parent) } }
        return names.filter { $0.hasPrefix(Self.prefix) && $0.hasSuffix(Self.suffix) && isJournal($0, in: parent) }
            .map { String($0.dropFirst(Self.prefix.count).dropLast(Self.suffix.count)) }
            .sorted()
    }

    private func isJournal(_ name: String, in parent: Int32) -> Bool {
        var status = stat()
        guard parent >= 0, fstatat(parent, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else { return false }
        guard status.st_mode & S_IFMT != S_IFREG else { return true }
        RefusedFiles.report(
            FileIOError(.read, path: directory + "/" + name, reason: "not a regular file", number: EINVAL))
        return false
    }

    /// Resolves a walk id or `latest` (the default) to an existing walk id.
    package func resolve(_ selector: String?) throws(JournalError) -> String {
        let ids = try walkIDs()
        guard let selector, selector != "latest" else {
            guard let latest = ids.last else { throw JournalError(.noWalks, path: directory) }
            return latest
        }
        guard ids.contains(selector) else { throw JournalError(.noSuchWalk, path: directory, reason: selector) }
        return selector
    }

    /// Marks milestone `index` of walk `id` as a favourite, or takes the mark back: one line appended with a
    /// single write and synced, as the recorder appends its own (it may be writing the same file). Returns
    /// false, writing nothing, when the milestone already was so.
    package func setStarred(
        _ starred: Bool, milestone index: Int, walk id: String, wall: Double
    ) throws(JournalError) -> Bool {
        let log = try read(id)
        guard log.milestones.contains(where: { $0.index == index }) else {
            let range = log.milestones.isEmpty ? "none yet" : "0 to \(log.milestones.last!.index)"
            throw JournalError(.noSuchMilestone, path: path(for: id), reason: "\(index) (this walk has \(range))")
        }
        guard log.starred.contains(index) != starred else { return false }
        try append(.star(milestone: index, starred: starred, wall: wall), toWalk: id)
        return true
    }

    /// Appends `record` to walk `id` with a single write and syncs it, as the recorder appends its own (it may
    /// be writing the same file): for the processes beside the recorder (`star`, sharing's rare events).
    package func append(_ record: JournalRecord, toWalk id: String) throws(JournalError) {
        // A recorder that died mid-line left half a line: the record must not be glued to it.
        try JournalFile.repairTornTail(path: path(for: id))
        let file = try JournalFile(path: path(for: id))
        // Under the lock the recorder cuts its unsynced tail back under (after a failed fsync), not fsync's wait.
        try file.withExclusiveLock { () throws(JournalError) in try file.append(JournalCodec.encode(record)) }
        try file.sync()
    }

    /// Walk `id` as its journal now stands, read a chunk at a time; its points are read again when asked.
    package func read(_ id: String) throws(JournalError) -> WalkLog {
        try read(id, eachPoint: { _ in })
    }

    /// Walk `id`, handing each track point to `eachPoint` as it is read.
    package func read(_ id: String, eachPoint: (TrackPoint) -> Void) throws(JournalError) -> WalkLog {
        do {
            return try WalkLog.read(id: id, path: path(for: id), eachPoint: eachPoint)
        } catch let error as FileIOError {
            throw JournalError(.cannotRead, path: error.path, reason: error.reason, errno: error.number)
        } catch {
            throw JournalError(.cannotRead, path: path(for: id), reason: "\(error)")
        }
    }

    /// A new, unused walk id for a walk starting at `time`: `20260522T094736Z`, with a suffix if taken.
    package func newWalkID(startingAt time: Double) -> String {
        let stamp = Timestamp.format(time.rounded(.down)).filter { $0 != "-" && $0 != ":" }
        var id = stamp
        var attempt = 1
        while FileManager.default.fileExists(atPath: path(for: id)) {
            attempt += 1
            id = "\(stamp)-\(attempt)"
        }
        return id
    }
}
