import Glibc
import SystemIO
import WalkModel

/// The thumbnail cache's files as readers outside the cache read them (the live page, `fieldlog export`):
/// only names that are valid cache keys, so no request can reach another file, and only regular files no
/// larger than a thumbnail can be (`maxBytes`), opened without following a link or waiting on a FIFO: a
/// link to `/etc/shadow`, a FIFO or a 64 GB sparse file put in the cache is skipped and told of once, never
/// served or exported. The cache may evict a file at any moment; then it is simply not found.
package struct ThumbnailFiles: Sendable {
    /// The photo worker's output limit: no thumbnail the thumbnailer makes is larger.
    package static let maxBytes = PhotoWorkLimits().maxOutput

    package let directory: String

    package init(directory: String) {
        self.directory = directory
    }

    package func contains(_ key: String) -> Bool {
        guard PhotoCandidate.isValidID(key) else { return false }
        let parent = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard parent >= 0 else { return false }
        defer { close(parent) }
        return isThumbnail(key + ".jpg", in: parent)
    }

    package func read(_ key: String) -> [UInt8]? {
        guard PhotoCandidate.isValidID(key) else { return nil }
        do {
            return try FileIO.readRegular(key + ".jpg", in: directory, maxBytes: Self.maxBytes)
        } catch {
            RefusedFiles.report(error)
            return nil
        }
    }

    /// The thumbnail opened for reading, with its size (the caller closes the descriptor); a file evicted
    /// meanwhile stays readable through it.
    package func opened(_ key: String) -> (descriptor: Int32, size: Int)? {
        guard PhotoCandidate.isValidID(key) else { return nil }
        do {
            return try FileIO.openRegular(key + ".jpg", in: directory, maxBytes: Self.maxBytes)
        } catch {
            RefusedFiles.report(error)
            return nil
        }
    }

    /// The keys cached now (regular files `KEY.jpg`): one directory listing for a page of cards, not an
    /// open per card.
    package func listing() -> Set<String> {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var keys: Set<String> = []
        while let item = readdir(stream) {
            let name = withUnsafeBytes(of: item.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name.hasSuffix(".jpg") else { continue }
            let key = String(name.dropLast(4))
            if PhotoCandidate.isValidID(key), isThumbnail(name, in: dirfd(stream)) { keys.insert(key) }
        }
        return keys
    }

    /// Whether `name` is a regular file a thumbnail could be, without following a link; what is not is told of.
    private func isThumbnail(_ name: String, in parent: Int32) -> Bool {
        var status = stat()
        guard fstatat(parent, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else { return false }
        let reason =
            status.st_mode & S_IFMT != S_IFREG
            ? "not a regular file"
            : status.st_size > Self.maxBytes
                ? "\(status.st_size) bytes, more than the \(Self.maxBytes) it may hold" : nil
        guard let reason else { return true }
        RefusedFiles.report(FileIOError(.read, path: directory + "/" + name, reason: reason, number: EINVAL))
        return false
    }
}
