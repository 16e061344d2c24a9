package import Glibc
import SystemIO
import WalkModel

/// A journal file opened for appending. The one place that calls write/fsync for the journal, so the
/// rest of fieldlog never sees errno.
///
/// It knows how long the file is meant to be (`length`) and how much of that a successful `fsync`
/// vouched for (`syncedLength`), so that a failed write or sync can be cut back to a clean line boundary
/// and written again later: after a failed fsync Linux may have dropped the dirty pages, and only
/// rewriting the lines makes them durable.
package final class JournalFile {
    package let path: String
    private var descriptor: Int32
    /// Bytes of whole lines in the file, as far as this process knows.
    package private(set) var length: off_t
    /// Bytes known to be on the storage device.
    package private(set) var syncedLength: off_t
    /// A write failed part way: the file may end in part of a line, after `length`.
    private var writeFailed = false

    /// Opens (creating if needed) `path` for appending. A new file's directory entry is synced too, so the
    /// file itself survives a power cut.
    package init(path: String) throws(JournalError) {
        self.path = path
        let existed = access(path, F_OK) == 0
        // Read access too: if the file is unlinked behind our back, its bytes are copied to a new one. Never
        // through a link, and never a FIFO or a device (a FIFO's writes would block the recorder when full).
        let fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw JournalError(.cannotOpen, path: path, errno: errno) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0
        else {
            close(fd)
            throw JournalError(.cannotOpen, path: path, reason: "not a regular file")
        }
        descriptor = fd
        let size = lseek(fd, 0, SEEK_END)
        length = max(0, size)
        syncedLength = 0
        if !existed {
            do {
                try JournalFile.syncDirectory(of: path)
            } catch {
                close(fd)
                unlink(path)
                throw error
            }
        }
    }

    deinit {
        close(descriptor)
    }

    /// Appends one whole line with a single write, so a crash leaves at most one torn line at the end. A
    /// write that fails part way is cut back off, so the file stays whole lines.
    package func append(_ line: String) throws(JournalError) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        try append(line: bytes)
    }

    /// Appends `bytes`, one line with its newline.
    package func append(line bytes: [UInt8]) throws(JournalError) {
        if let failure = FileIO.writeAll(bytes, to: descriptor) {
            // Best effort now; if it fails too, `length` still says where the next write must start.
            writeFailed = ftruncate(descriptor, length) != 0
            throw JournalError(.cannotWrite, path: path, reason: failure.reason, errno: failure.number)
        }
        // `fieldlog star` appends whole lines to the same file from another process: with O_APPEND the
        // offset after this write is the file's end, their lines included.
        let end = lseek(descriptor, 0, SEEK_CUR)
        length = end >= length + off_t(bytes.count) ? end : length + off_t(bytes.count)
    }

    /// Runs `body` holding an exclusive `flock` on the file: taken by a writer from another process around its
    /// append (`fieldlog star`) and by the recorder around reading and cutting back its unsynced tail. The
    /// recorder's own appends take no lock (O_APPEND keeps lines whole), so a held lock never stops recording.
    package func withExclusiveLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
        defer { _ = flock(descriptor, LOCK_UN) }
        return try body()
    }

    /// Forces everything appended so far to the storage device.
    package func sync() throws(JournalError) {
        guard fsync(descriptor) == 0 else { throw JournalError(.cannotWrite, path: path, errno: errno) }
        syncedLength = length
    }

    /// Makes the file end where `length` says, after a failed write left part of a line behind. Only
    /// then: lines another writer appended since (`fieldlog star`) are whole and stay.
    package func cutToLength() throws(JournalError) {
        guard writeFailed else { return }
        guard ftruncate(descriptor, length) == 0 else { throw JournalError(.cannotWrite, path: path, errno: errno) }
        writeFailed = false
    }

    /// Gives up the bytes after `syncedLength` (a failed fsync may have lost them): the caller writes `own`,
    /// the lines it appended since, again. Returns the other lines found there, whole lines another writer
    /// appended meanwhile (`fieldlog star`), for the caller to write again too: cutting the file back must
    /// not take them with it. Best effort: a failure here is caught by `cutToLength` before the next write.
    package func dropUnsynced(own: [[UInt8]]) -> [[UInt8]] {
        // Read and cut under the lock `fieldlog star` appends under: a star appended in between would go unseen.
        withExclusiveLock { () -> [[UInt8]] in dropUnsyncedLocked(own: own) }
    }

    private func dropUnsyncedLocked(own: [[UInt8]]) -> [[UInt8]] {
        var others: [[UInt8]] = []
        let end = lseek(descriptor, 0, SEEK_END)
        if end > syncedLength {
            var tail = [UInt8](repeating: 0, count: Int(end - syncedLength))
            let count = tail.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress!, $0.count, syncedLength) }
            var mine = own[...]
            for line in tail.prefix(max(0, count)).split(separator: UInt8(ascii: "\n")) {
                let whole = Array(line) + [UInt8(ascii: "\n")]
                if let next = mine.first, next == whole {
                    mine.removeFirst()
                } else if !mine.contains(whole), JournalCodec.decode(Substring(decoding: line, as: UTF8.self)) != nil {
                    others.append(whole)
                }
            }
        }
        length = syncedLength
        _ = ftruncate(descriptor, length)
        return others
    }

    /// Whether the file was removed (or its directory was) while open: its bytes live on only in this
    /// descriptor.
    package var isUnlinked: Bool {
        var status = stat()
        return fstat(descriptor, &status) == 0 && status.st_nlink == 0
    }

    /// Copies the bytes of a removed file into a new file at `path`, and appends there from now on.
    package func relink() throws(JournalError) {
        var bytes = [UInt8](repeating: 0, count: Int(length))
        var done = 0
        while done < bytes.count {
            let got = bytes.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress! + done, $0.count - done, off_t(done))
            }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { throw JournalError(.cannotRead, path: path, errno: got < 0 ? errno : EIO) }
            done += got
        }
        let fresh = open(path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fresh >= 0 else { throw JournalError(.cannotOpen, path: path, errno: errno) }
        if let failure = FileIO.writeAll(bytes, to: fresh) {
            close(fresh)
            unlink(path)
            throw JournalError(.cannotWrite, path: path, reason: failure.reason, errno: failure.number)
        }
        guard fsync(fresh) == 0 else {
            let number = errno
            close(fresh)
            unlink(path)
            throw JournalError(.cannotWrite, path: path, errno: number)
        }
        do {
            try JournalFile.syncDirectory(of: path)
        } catch {
            close(fresh)
            unlink(path)
            throw error
        }
        close(descriptor)
        descriptor = fresh
        syncedLength = length
    }

    package static func syncDirectory(of path: String) throws(JournalError) {
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
            .joined(separator: "/")
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw JournalError(.cannotOpen, path: directory, errno: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw JournalError(.cannotWrite, path: directory, errno: errno) }
    }

    /// Cuts a line left half-written by a crash off the end of `path`, and the NULs a power cut can leave
    /// where a file's size got ahead of its data. Returns the bytes removed.
    @discardableResult
    package static func repairTornTail(path: String) throws(JournalError) -> Int {
        let fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw JournalError(.cannotOpen, path: path, errno: errno) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw JournalError(.cannotOpen, path: path, reason: "not a regular file")
        }
        let size = lseek(fd, 0, SEEK_END)
        guard size > 0 else { return 0 }
        // Scan backwards in blocks for the last newline.
        var end = size
        var block = [UInt8](repeating: 0, count: 4096)
        while end > 0 {
            let start = max(0, end - off_t(block.count))
            let count = Int(end - start)
            let read = block.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, count, start) }
            guard read == count else { throw JournalError(.cannotRead, path: path, errno: errno) }
            if let last = block[0..<count].lastIndex(of: UInt8(ascii: "\n")) {
                let keep = start + off_t(last) + 1
                if keep == size { return 0 }
                return try truncate(fd: fd, path: path, to: keep, from: size)
            }
            end = start
        }
        return try truncate(fd: fd, path: path, to: 0, from: size)
    }

    private static func truncate(
        fd: Int32, path: String, to length: off_t, from size: off_t
    ) throws(JournalError)
        -> Int
    {
        guard ftruncate(fd, length) == 0, fsync(fd) == 0 else {
            throw JournalError(.cannotWrite, path: path, errno: errno)
        }
        return Int(size - length)
    }
}
