import Glibc
import SystemIO
import WalkModel

/// The bounded on-device store of milestone thumbnails: one `<key>.jpg` per entry in one directory, least
/// recently used entries evicted so that the files never add up to more than `maxBytes`.
///
/// The directory is the truth: `init` rebuilds the index from it (sizes from disk, use order from mtimes,
/// which `store` and `touch` keep strictly increasing), so the LRU order survives a restart, and it clears
/// what a crash left behind. A marker file, also held under an exclusive `flock` while the cache is open,
/// keeps two processes from sharing the directory and keeps the cleanup away from a directory that is not
/// a cache (`--cache-dir ~` must not empty a home directory).
package actor ThumbnailCache {
    package static let defaultDirectory = "/var/cache/fieldlog"
    package static let defaultMaxBytes = 64 << 20
    /// Marks a directory as a thumbnail cache; held locked while one is open.
    package static let markerName = ".fieldlog-thumbnails"

    package nonisolated let directory: String
    package nonisolated let maxBytes: Int
    private var index: Index
    private let lockDescriptor: Int32

    /// Opens the cache in `directory` (created if needed) and rebuilds its index from the files there.
    package init(directory: String, maxBytes: Int = ThumbnailCache.defaultMaxBytes) throws(ThumbnailCacheError) {
        guard maxBytes > 0 else {
            throw ThumbnailCacheError(.invalidLimit, path: directory, reason: "--cache-max must be above 0")
        }
        let directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        do {
            try FileIO.makeDirectories(directory)
        } catch {
            throw ThumbnailCacheError(.cannotCreate, path: error.path, reason: error.reason)
        }
        let descriptor = try Self.claim(directory)
        do {
            index = try Index.rebuild(directory: directory, maxBytes: maxBytes)
        } catch {
            close(descriptor)
            throw error
        }
        self.directory = directory
        self.maxBytes = maxBytes
        lockDescriptor = descriptor
    }

    deinit {
        close(lockDescriptor)
    }

    // MARK: - Queries

    /// The bytes of all entries' files.
    package var totalBytes: Int { index.totalBytes }

    /// Keys from least to most recently used.
    package var keys: [String] { index.keysByUse }

    package func contains(_ key: String) -> Bool {
        index.entries[key] != nil
    }

    /// The file of a cached entry, or nil when `key` is not cached (or not a valid key).
    package func path(for key: String) -> String? {
        index.entries[key] != nil ? index.filePath(key) : nil
    }

    // MARK: - Changes

    /// Stores `bytes` under `key`, replacing an entry with that key, after evicting least recently used
    /// entries until everything fits. The file appears whole or not at all (written beside it, synced,
    /// renamed).
    package func store(key: String, bytes: [UInt8]) throws(ThumbnailCacheError) {
        try Self.validate(key)
        let path = index.filePath(key)
        guard bytes.count <= maxBytes else {
            throw ThumbnailCacheError(
                .tooLarge, path: path, reason: "\(bytes.count) bytes, the cache holds at most \(maxBytes)")
        }
        let previous = index.entries[key]?.size ?? 0
        // Room first, so the directory never holds more than maxBytes (plus the one temporary file).
        try index.evict(toFit: index.totalBytes - previous + bytes.count, sparing: key)
        do {
            try FileIO.replace(path, with: bytes, durable: true)
        } catch {
            throw ThumbnailCacheError(.cannotWrite, path: path, reason: error.reason)
        }
        // The rename (and the evictions before it) last through a power cut only once the directory is
        // synced; without this a photo journaled right after could lose its thumbnail.
        try Self.syncDirectory(directory)
        index.totalBytes += bytes.count - previous
        let tick = index.nextTick()
        index.entries[key] = Entry(size: bytes.count, tick: tick)
        index.stamp(path)
    }

    /// Marks `key` as just used, so it is evicted last; recorded in its mtime, so the order survives a
    /// restart. Returns false when `key` is not cached.
    @discardableResult
    package func touch(_ key: String) throws(ThumbnailCacheError) -> Bool {
        try Self.validate(key)
        guard index.entries[key] != nil else { return false }
        let path = index.filePath(key)
        guard index.stamp(path) else {
            // Deleted behind our back: forget it.
            index.forget(key)
            return false
        }
        let tick = index.nextTick()
        index.entries[key]?.tick = tick
        return true
    }

    /// Removes `key` (e.g. a thumbnail found to be unusable). Returns false when it was not cached.
    @discardableResult
    package func remove(_ key: String) throws(ThumbnailCacheError) -> Bool {
        try Self.validate(key)
        guard index.entries[key] != nil else { return false }
        try index.unlinkEntry(key)
        return true
    }

    /// Removes every thumbnail, for a full disk whose space the walk journal needs more. Returns the bytes
    /// freed. The journal keeps each photo's metadata; exports say the thumbnail is no longer cached.
    @discardableResult
    package func removeAll() -> Int {
        let before = index.totalBytes
        for key in index.keysByUse {
            try? index.unlinkEntry(key)
        }
        return before - index.totalBytes
    }

    /// Whether `path` is on the same filesystem as the cache, so that removing thumbnails frees space there.
    package nonisolated func sharesFilesystem(with path: String) -> Bool {
        var mine = stat()
        var theirs = stat()
        return stat(directory, &mine) == 0 && stat(path, &theirs) == 0 && mine.st_dev == theirs.st_dev
    }

    // MARK: - Internals

    private struct Entry {
        var size: Int
        /// Use order within this process: higher is more recent.
        var tick: UInt64
    }

    /// What is in the directory, in use order.
    private struct Index {
        let directory: String
        let maxBytes: Int
        var entries: [String: Entry] = [:]
        var totalBytes = 0
        private var clock: UInt64 = 0
        /// The mtime of the most recent use, in nanoseconds since 1970; each use gets a later one.
        private var lastStamp: Int64 = 0

        init(directory: String, maxBytes: Int) {
            self.directory = directory
            self.maxBytes = maxBytes
        }

        var keysByUse: [String] {
            entries.sorted { $0.value.tick < $1.value.tick }.map(\.key)
        }

        func filePath(_ key: String) -> String {
            directory + "/" + key + ".jpg"
        }

        mutating func nextTick() -> UInt64 {
            clock += 1
            return clock
        }

        mutating func forget(_ key: String) {
            if let entry = entries.removeValue(forKey: key) {
                totalBytes -= entry.size
            }
        }

        mutating func unlinkEntry(_ key: String) throws(ThumbnailCacheError) {
            let path = filePath(key)
            guard unlink(path) == 0 || errno == ENOENT else {
                throw ThumbnailCacheError(.cannotWrite, path: path, errno: errno)
            }
            forget(key)
        }

        /// Evicts least recently used entries other than `spared` until `needed` bytes fit.
        mutating func evict(toFit needed: Int, sparing spared: String?) throws(ThumbnailCacheError) {
            var excess = needed - maxBytes
            guard excess > 0 else { return }
            for key in keysByUse where key != spared {
                let size = entries[key]?.size ?? 0
                try unlinkEntry(key)
                excess -= size
                if excess <= 0 { return }
            }
        }

        /// Sets the file's mtime to a moment later than any use before it: the kernel's coarse file
        /// timestamps would tie uses a few milliseconds apart, and a clock set back (a device that boots
        /// at 1970 until GPS time arrives) would reverse the order. Returns false if the file is gone.
        @discardableResult
        mutating func stamp(_ path: String) -> Bool {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let nanoseconds = max(Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec), lastStamp + 1_000)
            lastStamp = nanoseconds
            var time = timespec()
            time.tv_sec = time_t(nanoseconds / 1_000_000_000)
            time.tv_nsec = Int(nanoseconds % 1_000_000_000)
            let times = [time, time]
            // Not through a link put in place of the file: that would stamp whatever it points to.
            return utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW) == 0
        }

        /// Reads the directory: removes temporary files a crash left, files and links whose names are
        /// not `<valid key>.jpg`, and entries past the limit (least recently modified first).
        static func rebuild(directory: String, maxBytes: Int) throws(ThumbnailCacheError) -> Index {
            guard let stream = opendir(directory) else {
                throw ThumbnailCacheError(.cannotRead, path: directory, errno: errno)
            }
            var found: [(key: String, size: Int, stamp: Int64)] = []
            var junk: [String] = []
            while let item = readdir(stream) {
                let name = withUnsafeBytes(of: item.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if name == "." || name == ".." || name == markerName { continue }
                let path = directory + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }
                let type = info.st_mode & S_IFMT
                if type == S_IFDIR { continue }  // not ours to delete; never counted
                let key = String(name.dropLast(4))
                if type == S_IFREG, name.hasSuffix(".jpg"), PhotoCandidate.isValidID(key) {
                    let stamp = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
                    found.append((key, Int(info.st_size), stamp))
                } else {
                    junk.append(path)  // temporary files of an interrupted store, links, stray names
                }
            }
            closedir(stream)
            for path in junk where unlink(path) != 0 && errno != ENOENT {
                throw ThumbnailCacheError(.cannotWrite, path: path, errno: errno)
            }
            var index = Index(directory: directory, maxBytes: maxBytes)
            found.sort { ($0.stamp, $0.key) < ($1.stamp, $1.key) }
            for item in found {
                let tick = index.nextTick()
                index.entries[item.key] = Entry(size: item.size, tick: tick)
                index.totalBytes += item.size
                index.lastStamp = max(index.lastStamp, item.stamp)
            }
            try index.evict(toFit: index.totalBytes, sparing: nil)
            return index
        }
    }

    package static func validate(_ key: String) throws(ThumbnailCacheError) {
        guard PhotoCandidate.isValidID(key) else {
            throw ThumbnailCacheError(.invalidKey, path: key, reason: nil)
        }
    }

    private static func syncDirectory(_ directory: String) throws(ThumbnailCacheError) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ThumbnailCacheError(.cannotWrite, path: directory, errno: errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw ThumbnailCacheError(.cannotWrite, path: directory, errno: errno) }
    }

    /// Takes the directory for this process: creates the marker in an empty directory, refuses a
    /// non-empty one without it, and locks the marker. Returns the marker's descriptor.
    private static func claim(_ directory: String) throws(ThumbnailCacheError) -> Int32 {
        let marker = directory + "/" + markerName
        var descriptor = open(marker, O_RDWR | O_CLOEXEC)
        if descriptor < 0 && errno == ENOENT {
            guard try isEmpty(directory) else {
                throw ThumbnailCacheError(.notACache, path: directory, reason: nil)
            }
            descriptor = open(marker, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        }
        guard descriptor >= 0 else { throw ThumbnailCacheError(.cannotCreate, path: marker, errno: errno) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let number = errno
            close(descriptor)
            if number == EWOULDBLOCK {
                throw ThumbnailCacheError(.inUse, path: directory, reason: nil)
            }
            throw ThumbnailCacheError(.cannotCreate, path: marker, errno: number)
        }
        return descriptor
    }

    private static func isEmpty(_ directory: String) throws(ThumbnailCacheError) -> Bool {
        guard let stream = opendir(directory) else {
            throw ThumbnailCacheError(.cannotRead, path: directory, errno: errno)
        }
        defer { closedir(stream) }
        while let item = readdir(stream) {
            let isDot = withUnsafeBytes(of: item.pointee.d_name) { raw in
                raw[0] == UInt8(ascii: ".") && (raw[1] == 0 || (raw[1] == UInt8(ascii: ".") && raw[2] == 0))
            }
            if !isDot { return false }
        }
        return true
    }
}

/// Why the thumbnail cache could not do something, worded for the person who has to fix it.
package struct ThumbnailCacheError: Error, CustomStringConvertible, Sendable, Equatable {
    package struct Code: Equatable, Sendable {
        fileprivate let text: String
        package static let cannotCreate = Code(text: "cannot create")
        package static let cannotRead = Code(text: "cannot read")
        package static let cannotWrite = Code(text: "cannot write")
        package static let notACache = Code(text: "not a cache")
        package static let inUse = Code(text: "in use")
        package static let invalidKey = Code(text: "invalid key")
        package static let tooLarge = Code(text: "too large")
        package static let invalidLimit = Code(text: "invalid limit")
    }

    package let code: Code
    /// The file or directory concerned; for `invalidKey`, the key.
    package let path: String
    package let reason: String?

    package init(_ code: Code, path: String, reason: String? = nil) {
        self.code = code
        self.path = path
        self.reason = reason
    }

    package init(_ code: Code, path: String, errno number: Int32) {
        self.init(code, path: path, reason: String(cString: strerror(number)))
    }

    package var description: String {
        switch code {
        case .notACache:
            return "\(path) is not empty and is not a fieldlog thumbnail cache (no \(ThumbnailCache.markerName));"
                + " choose an empty or new directory for --cache-dir"
        case .inUse:
            return "the thumbnail cache \(path) is in use by another fieldlog process; give each its own --cache-dir"
        case .invalidKey:
            return "invalid thumbnail cache key \(String(path.prefix(80)).debugDescription)"
                + " (letters, digits, _ and -, at most 64)"
        case .tooLarge:
            return "thumbnail \(path) is too large for the cache: \(reason ?? "")"
        default:
            return "\(code.text) \(path)" + (reason.map { ": \($0)" } ?? "")
        }
    }
}
