#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The thumbnail cache's files as readers outside the cache read them (the live page, `fieldlog export`):
/// only names that are valid cache keys, so no request can reach another file. The cache may evict a file
/// at any moment; then it is simply not found.
public struct ThumbnailFiles: Sendable {
    public let directory: String

    public init(directory: String) {
        self.directory = directory
    }

    public func contains(_ key: String) -> Bool {
        guard PhotoCandidate.isValidID(key) else { return false }
        return access(directory + "/" + key + ".jpg", F_OK) == 0
    }

    public func read(_ key: String) -> [UInt8]? {
        guard PhotoCandidate.isValidID(key) else { return nil }
        return try? FileIO.readAll(directory + "/" + key + ".jpg")
    }

    /// The keys cached now (files `KEY.jpg`): one directory listing for a page of cards, not a stat per card.
    public func listing() -> Set<String> {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return Set(names.filter { $0.hasSuffix(".jpg") }.map { String($0.dropLast(4)) }.filter(PhotoCandidate.isValidID))
    }
}
