import Glibc
import Synchronization

/// The few file operations fieldlog needs beyond Foundation's, with errno turned into messages.
package enum FileIO {
    /// Writes all of `bytes` to `descriptor`, retrying short writes. Returns the error on failure, its path
    /// `/dev/fd/N` and its reason strerror's text.
    package static func writeAll(_ bytes: some Collection<UInt8>, to descriptor: Int32) -> FileIOError? {
        var remaining = ArraySlice(bytes)
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { write(descriptor, $0.baseAddress!, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return FileIOError(.write, path: "/dev/fd/\(descriptor)", number: errno)
            }
            remaining = remaining.dropFirst(written)
        }
        return nil
    }

    /// What `fstat(2)` says of an open descriptor, in the fields fieldlog reads; nil when it is not open.
    package static func status(of descriptor: Int32) -> FileStatus? {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        return FileStatus(status)
    }

    /// What `stat(2)` says of `path` (a link followed); nil when there is nothing there to follow.
    package static func status(atPath path: String) -> FileStatus? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return FileStatus(status)
    }

    /// The whole contents of `path`, read straight into one array (no Data in between: journals of long
    /// walks are megabytes, and export reads them whole). A file of more than `limit` bytes is an error
    /// (EFBIG), told from its size before it is read, or as soon as reading passes the limit.
    package static func readAll(_ path: String, limit: Int = .max) throws(FileIOError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileIOError(.read, path: path, number: errno) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw FileIOError(.read, path: path, reason: String(cString: strerror(errno)))
        }
        guard status.st_size <= limit else {
            throw FileIOError(.read, path: path, reason: "\(status.st_size) bytes", number: EFBIG)
        }
        var failure: Int32 = 0
        func fill(_ buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
            var filled = 0
            while filled < buffer.count {
                let got = read(descriptor, buffer.baseAddress! + filled, buffer.count - filled)
                if got < 0 && errno == EINTR { continue }
                if got < 0 { failure = errno }
                if got <= 0 { break }
                filled += got
            }
            return filled
        }
        var bytes = [UInt8](unsafeUninitializedCapacity: Int(status.st_size)) { $1 = fill($0) }
        // A journal being recorded grows while it is read: take what came after fstat too.
        while failure == 0 && bytes.count == bytes.capacity {
            let more = [UInt8](unsafeUninitializedCapacity: 1 << 16) { $1 = fill($0) }
            if more.isEmpty { break }
            bytes += more
            if bytes.count > limit {
                throw FileIOError(.read, path: path, reason: "more than \(limit) bytes", number: EFBIG)
            }
        }
        if failure != 0 { throw FileIOError(.read, path: path, number: failure) }
        return bytes
    }

    /// Opens `name` in `directory` for reading, only if it is what a file fieldlog keeps must be: a regular
    /// file (not a link, followed nowhere: O_NOFOLLOW relative to the directory; not a FIFO or a device,
    /// which could block the opening or the reading for ever: O_NONBLOCK) of at most `maxBytes`. Returns the
    /// descriptor, which the caller closes, and the size.
    package static func openRegular(
        _ name: String, in directory: String, maxBytes: Int
    ) throws(FileIOError)
        -> (descriptor: Int32, size: Int)
    {
        let path = directory + "/" + name
        let parent = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard parent >= 0 else { throw FileIOError(.read, path: directory, number: errno) }
        defer { close(parent) }
        let descriptor = openat(parent, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let number = errno
            throw FileIOError(
                .read, path: path, reason: number == ELOOP ? "a symbolic link" : String(cString: strerror(number)),
                number: number)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let number = errno
            close(descriptor)
            throw FileIOError(.read, path: path, number: number)
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw FileIOError(.read, path: path, reason: "not a regular file", number: EINVAL)
        }
        guard status.st_size <= maxBytes else {
            close(descriptor)
            throw FileIOError(
                .read, path: path, reason: "\(status.st_size) bytes, more than the \(maxBytes) it may hold",
                number: EFBIG)
        }
        return (descriptor, Int(status.st_size))
    }

    /// The contents of `name` in `directory` if it passes `openRegular`, read to its end but never past
    /// `maxBytes` (a file still growing stops there).
    package static func readRegular(_ name: String, in directory: String, maxBytes: Int) throws(FileIOError) -> [UInt8]
    {
        let (descriptor, size) = try openRegular(name, in: directory, maxBytes: maxBytes)
        defer { close(descriptor) }
        return try readToEnd(descriptor, size: size, maxBytes: maxBytes, path: directory + "/" + name)
    }

    /// A secret kept in a file (a password): `path` read as `readRegular` reads a file, and whether every user
    /// of the machine may read it too (its mode gives others read permission).
    package static func readSecret(
        _ path: String, maxBytes: Int
    ) throws(FileIOError) -> (bytes: [UInt8], readableByAll: Bool) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let (descriptor, size) = try openRegular(name, in: directory, maxBytes: maxBytes)
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw FileIOError(.read, path: path, number: errno) }
        return (try readToEnd(descriptor, size: size, maxBytes: maxBytes, path: path), status.st_mode & S_IROTH != 0)
    }

    private static func readToEnd(
        _ descriptor: Int32, size: Int, maxBytes: Int, path: String
    ) throws(FileIOError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: min(maxBytes, size + (1 << 16)))
        var filled = 0
        while filled < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if got < 0 && errno == EINTR { continue }
            if got < 0 {
                throw FileIOError(.read, path: path, number: errno)
            }
            if got == 0 { break }
            filled += got
            // A journal being recorded grows while it is read: take what came after fstat too, up to the bound.
            if filled == bytes.count && bytes.count < maxBytes {
                bytes += [UInt8](repeating: 0, count: min(maxBytes - bytes.count, 1 << 16))
            }
        }
        bytes.removeSubrange(filled...)
        return bytes
    }

    /// `mkdir -p`: `directory` and its missing parents; an error names the one that could not be made.
    package static func makeDirectories(_ directory: String) throws(FileIOError) {
        var prefix = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw FileIOError(.create, path: prefix, number: errno)
            }
        }
        var info = stat()
        guard stat(directory, &info) == 0 else {
            throw FileIOError(.create, path: directory, number: errno)
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw FileIOError(.create, path: directory, reason: "it exists and is not a directory", number: ENOTDIR)
        }
    }

    /// Replaces `path` whole: writes a temporary file beside it and renames it over `path`, so readers see
    /// the old file or the new one, never half. `durable` also syncs the data before the rename.
    package static func replace(_ path: String, with bytes: some Collection<UInt8>, durable: Bool) throws(FileIOError) {
        do {
            try replace(path, durable: durable) { write in try write(Array(bytes)) }
        } catch let error as FileIOError {
            throw error
        } catch {
            throw FileIOError(.write, path: path, reason: "\(error)")
        }
    }

    /// Replaces `path` whole with what `body` hands to the `write` it is given, a chunk at a time, as
    /// `replace(_:with:durable:)` does. Whatever `body` throws leaves `path` as it was, and is rethrown.
    package static func replace(
        _ path: String, durable: Bool, writing body: (_ write: ([UInt8]) throws -> Void) throws -> Void
    ) throws {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = directory + ".\(name).\(getpid()).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw FileIOError(.write, path: path, reason: String(cString: strerror(errno))) }
        do {
            defer { close(descriptor) }
            try body { bytes in
                if let failure = writeAll(bytes, to: descriptor) {
                    throw FileIOError(.write, path: path, reason: failure.reason, number: failure.number)
                }
            }
            if durable && fsync(descriptor) != 0 { throw FileIOError(.write, path: path, number: errno) }
        } catch {
            unlink(temporary)
            throw error
        }
        if rename(temporary, path) != 0 {
            let number = errno
            unlink(temporary)
            throw FileIOError(.write, path: path, number: number)
        }
    }
}

/// A file operation that failed: which one, on which path, the errno as its code (0 when there was none)
/// and a reason safe to show (strerror's text, or a few words of fieldlog's own).
package struct FileIOError: Error, CustomStringConvertible {
    /// What was being done, for the message's verb.
    package enum Operation: String, Sendable {
        case read, write, create
    }

    package let operation: Operation
    package let path: String
    /// The errno, when it was one.
    package let number: Int32
    package let reason: String

    /// "cannot read PATH: REASON", "cannot write ..." or "cannot create ...".
    package var description: String { "cannot \(operation.rawValue) \(path): \(reason)" }

    package init(_ operation: Operation, path: String, reason: String, number: Int32 = 0) {
        self.operation = operation
        self.path = path
        self.reason = reason
        self.number = number
    }

    /// The errno `number`, with strerror's text as the reason.
    package init(_ operation: Operation, path: String, number: Int32) {
        self.init(operation, path: path, reason: String(cString: strerror(number)), number: number)
    }
}

/// Files fieldlog found not to be what they claim (a link, a FIFO, a device, one larger than it may be):
/// skipped, and each told once per process on standard error (the service's goes to journald).
package enum RefusedFiles {
    private static let told = Mutex(Set<String>())

    /// Tells of `error` once per path; a file that is simply gone (an evicted thumbnail) is not worth a word.
    package static func report(_ error: FileIOError) {
        guard error.number != ENOENT, told.withLock({ $0.insert(error.path).inserted }) else { return }
        _ = FileIO.writeAll("fieldlog: skipped \(error.path): \(error.reason)\n".utf8, to: STDERR_FILENO)
    }
}

/// A file's identity, type and size, as `stat(2)` gives them.
package struct FileStatus: Sendable, Equatable {
    package var device: UInt64
    package var inode: UInt64
    package var isRegular: Bool
    package var size: Int64

    init(_ status: stat) {
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
        isRegular = (status.st_mode & S_IFMT) == S_IFREG
        size = Int64(status.st_size)
    }

    /// The same file: same device and inode.
    package func isSameFile(as other: FileStatus) -> Bool { device == other.device && inode == other.inode }
}
