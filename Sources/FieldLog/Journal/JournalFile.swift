#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A journal file opened for appending. The one place that calls write/fsync for the journal, so the
/// rest of fieldlog never sees errno.
public final class JournalFile {
    public let path: String
    private let descriptor: Int32

    /// Opens (creating if needed) `path` for appending. A new file's directory entry is synced too, so the
    /// file itself survives a power cut.
    public init(path: String) throws(JournalError) {
        self.path = path
        let existed = access(path, F_OK) == 0
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw JournalError(.cannotOpen, path: path, errno: errno) }
        descriptor = fd
        if !existed {
            try JournalFile.syncDirectory(of: path)
        }
    }

    deinit {
        close(descriptor)
    }

    /// Appends one whole line with a single write, so a crash leaves at most one torn line at the end.
    public func append(_ line: String) throws(JournalError) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        if let failure = FileIO.writeAll(bytes, to: descriptor) {
            throw JournalError(.cannotWrite, path: path, reason: failure)
        }
    }

    /// Forces everything appended so far to the storage device.
    public func sync() throws(JournalError) {
        guard fsync(descriptor) == 0 else { throw JournalError(.cannotWrite, path: path, errno: errno) }
    }

    static func syncDirectory(of path: String) throws(JournalError) {
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
            .joined(separator: "/")
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw JournalError(.cannotOpen, path: directory, errno: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw JournalError(.cannotWrite, path: directory, errno: errno) }
    }

    /// Cuts a line left half-written by a crash off the end of `path`. Returns the bytes removed.
    @discardableResult
    public static func repairTornTail(path: String) throws(JournalError) -> Int {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw JournalError(.cannotOpen, path: path, errno: errno) }
        defer { close(fd) }
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

    private static func truncate(fd: Int32, path: String, to length: off_t, from size: off_t) throws(JournalError)
        -> Int
    {
        guard ftruncate(fd, length) == 0, fsync(fd) == 0 else {
            throw JournalError(.cannotWrite, path: path, errno: errno)
        }
        return Int(size - length)
    }
}
