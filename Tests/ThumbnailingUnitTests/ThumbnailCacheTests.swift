import FieldLogTestSupport
import Foundation
import Testing
import Thumbnailing

// The thumbnail cache on real directories: limits, LRU order, restarts, what it refuses.

/// The error code `body` throws, or nil when it succeeds.
private func failure(_ body: () async throws(ThumbnailCacheError) -> Void) async -> ThumbnailCacheError.Code? {
    do {
        try await body()
        return nil
    } catch {
        return error.code
    }
}

private func bytes(_ count: Int, _ fill: UInt8 = 0xAB) -> [UInt8] {
    [UInt8](repeating: fill, count: count)
}

/// Names in `directory`, sorted.
private func listing(_ directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
}

/// The bytes of the `.jpg` files actually in `directory`.
private func bytesOnDisk(_ directory: String) -> Int {
    listing(directory).filter { $0.hasSuffix(".jpg") }.reduce(0) { total, name in
        let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size]) as? Int
        return total + (size ?? 0)
    }
}

/// A small deterministic generator (xorshift64*), so a failure replays the same way.
private struct Generator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 2_685_821_657_736_338_717
    }
}

@Test func neverExceedsTheLimitOverManyStores() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let limit = 20_000
    let cache = try ThumbnailCache(directory: directory, maxBytes: limit)
    var random = Generator(state: 0x5EED_F1E1_D10C)
    let pool = (0..<40).map { "photo-\($0)" }
    for round in 0..<400 {
        let key = pool.randomElement(using: &random)!
        // Mostly thumbnail-sized, sometimes the whole limit (which must evict everything else).
        let size = round % 97 == 0 ? limit : Int.random(in: 1...6_000, using: &random)
        try await cache.store(key: key, bytes: bytes(size, UInt8(round & 0xFF)))
        if Bool.random(using: &random) {
            try await cache.touch(pool.randomElement(using: &random)!)
        }
        let total = await cache.totalBytes
        #expect(total <= limit)
        #expect(await cache.contains(key))
        #expect(bytesOnDisk(directory) == total, "round \(round)")
    }
    #expect(listing(directory).allSatisfy { $0.hasSuffix(".jpg") || $0 == ThumbnailCache.markerName })
}

@Test func leastRecentlyUsedGoesFirstAndTouchedEntriesSurvive() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let cache = try ThumbnailCache(directory: directory, maxBytes: 1_000)
    try await cache.store(key: "a", bytes: bytes(300))
    try await cache.store(key: "b", bytes: bytes(300))
    try await cache.store(key: "c", bytes: bytes(300))
    #expect(try await cache.touch("a"))
    #expect(await cache.keys == ["b", "c", "a"])

    try await cache.store(key: "d", bytes: bytes(300))
    #expect(await cache.keys == ["c", "a", "d"])
    #expect(await !cache.contains("b"))
    #expect(!FileManager.default.fileExists(atPath: directory + "/b.jpg"))

    // Two evictions for one large entry, oldest first.
    try await cache.store(key: "e", bytes: bytes(600))
    #expect(await cache.keys == ["d", "e"])
    #expect(await cache.totalBytes == 900)

    // Replacing an entry counts its new size only, and makes it the most recent.
    try await cache.store(key: "d", bytes: bytes(100))
    #expect(await cache.keys == ["e", "d"])
    #expect(await cache.totalBytes == 700)
    #expect(bytesOnDisk(directory) == 700)
    #expect(await cache.path(for: "d") == directory + "/d.jpg")
    #expect(try Array(Data(contentsOf: URL(fileURLWithPath: directory + "/d.jpg"))) == bytes(100))

    #expect(try await !cache.touch("b"))
    #expect(try await cache.remove("e"))
    #expect(await cache.keys == ["d"])
    #expect(await cache.path(for: "e") == nil)
}

@Test func restartRebuildsEntriesAndOrderAndClearsLeftovers() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    do {
        let cache = try ThumbnailCache(directory: directory, maxBytes: 1_000)
        for key in ["a", "b", "c", "d"] {
            try await cache.store(key: key, bytes: bytes(200))
        }
        try await cache.touch("b")
        try await cache.touch("a")
        #expect(await cache.keys == ["c", "d", "b", "a"])
    }
    // What a crash and other programs leave: FileIO's temporary file of an interrupted store, junk names,
    // a link (it could point anywhere), and a subfolder (not ours: left alone).
    let manager = FileManager.default
    for name in [
        ".e.jpg.4242.tmp", "notes.txt", "bad name.jpg", "x.jpeg", "UPPER.JPG",
        "\(String(repeating: "k", count: 65)).jpg",
    ] {
        #expect(manager.createFile(atPath: directory + "/" + name, contents: Data(bytes(50))))
    }
    try manager.createSymbolicLink(atPath: directory + "/link.jpg", withDestinationPath: directory + "/a.jpg")
    try manager.createDirectory(atPath: directory + "/sub", withIntermediateDirectories: false)

    let cache = try ThumbnailCache(directory: directory, maxBytes: 1_000)
    #expect(await cache.keys == ["c", "d", "b", "a"])
    #expect(await cache.totalBytes == 800)
    #expect(listing(directory) == [ThumbnailCache.markerName, "a.jpg", "b.jpg", "c.jpg", "d.jpg", "sub"])

    // The order read back from disk decides the next eviction.
    try await cache.store(key: "e", bytes: bytes(600))
    #expect(await cache.keys == ["b", "a", "e"])
}

@Test func restartWithASmallerLimitEvictsTheOldest() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    do {
        let cache = try ThumbnailCache(directory: directory, maxBytes: 1_000)
        for key in ["a", "b", "c"] {
            try await cache.store(key: key, bytes: bytes(300))
        }
        try await cache.touch("a")
    }
    let cache = try ThumbnailCache(directory: directory, maxBytes: 650)
    #expect(await cache.keys == ["c", "a"])
    #expect(bytesOnDisk(directory) == 600)
}

@Test(arguments: [
    "../x", "a/b", "", String(repeating: "a", count: 65), "a.jpg", ".", "..", "a b", "ä", "a\u{0}b", "/etc/passwd",
])
func invalidKeysAreRejected(key: String) async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let cache = try ThumbnailCache(directory: directory, maxBytes: 1_000)
    #expect(
        await failure { () async throws(ThumbnailCacheError) in try await cache.store(key: key, bytes: bytes(10)) }
            == .invalidKey)
    #expect(await failure { () async throws(ThumbnailCacheError) in try await cache.touch(key) } == .invalidKey)
    #expect(await failure { () async throws(ThumbnailCacheError) in try await cache.remove(key) } == .invalidKey)
    #expect(await !cache.contains(key))
    #expect(await cache.path(for: key) == nil)
    #expect(listing(directory) == [ThumbnailCache.markerName])
}

@Test func longestValidKeyIsAccepted() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let cache = try ThumbnailCache(directory: directory, maxBytes: 1_000)
    let key = "Az09_-" + String(repeating: "x", count: 58)
    try await cache.store(key: key, bytes: bytes(10))
    #expect(await cache.path(for: key) == directory + "/" + key + ".jpg")
}

@Test func anEntryLargerThanTheWholeCacheIsRefused() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let cache = try ThumbnailCache(directory: directory, maxBytes: 100)
    try await cache.store(key: "small", bytes: bytes(40))
    #expect(
        await failure { () async throws(ThumbnailCacheError) in try await cache.store(key: "big", bytes: bytes(101)) }
            == .tooLarge)
    #expect(await cache.keys == ["small"])
    #expect(!FileManager.default.fileExists(atPath: directory + "/big.jpg"))
    // Exactly the limit fits, by evicting everything else.
    try await cache.store(key: "big", bytes: bytes(100))
    #expect(await cache.keys == ["big"])
    #expect(await cache.totalBytes == 100)
}

@Test func aDirectoryThatIsNotACacheIsLeftAlone() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    #expect(FileManager.default.createFile(atPath: directory + "/thesis.txt", contents: Data("keep".utf8)))
    let error = await failure { () async throws(ThumbnailCacheError) in
        _ = try ThumbnailCache(directory: directory, maxBytes: 100)
    }
    #expect(error == .notACache)
    #expect(listing(directory) == ["thesis.txt"])
}

@Test func createsMissingDirectoriesAndRefusesASecondUser() async throws {
    let root = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: root) }
    let directory = root + "/var/cache/fieldlog/"
    let cache = try ThumbnailCache(directory: directory, maxBytes: 100)
    #expect(cache.directory == root + "/var/cache/fieldlog")
    let second = await failure { () async throws(ThumbnailCacheError) in
        _ = try ThumbnailCache(directory: directory, maxBytes: 100)
    }
    #expect(second == .inUse)
    try await cache.store(key: "k", bytes: bytes(1))

    let file = root + "/file"
    #expect(FileManager.default.createFile(atPath: file, contents: nil))
    #expect(
        await failure { () async throws(ThumbnailCacheError) in _ = try ThumbnailCache(directory: file, maxBytes: 100) }
            == .cannotCreate)
    #expect(
        await failure { () async throws(ThumbnailCacheError) in
            _ = try ThumbnailCache(directory: root + "/z", maxBytes: 0)
        } == .invalidLimit)
}

@Test func errorsSayWhatToDo() {
    let error = ThumbnailCacheError(.notACache, path: "/home/me")
    #expect(error.description.contains("/home/me"))
    #expect(error.description.contains("--cache-dir"))
    #expect(ThumbnailCacheError(.invalidKey, path: "../x").description.contains("\"../x\""))
}

/// A link put in place of a cached file while the cache is open: using the entry must not change the times
/// of the file it points to (as root, any file on the system).
@Test func touchingAnEntryReplacedByALinkLeavesItsTargetAlone() async throws {
    let directory = Harness.temporaryDirectory()
    let cache = try ThumbnailCache(directory: directory + "/cache", maxBytes: 1 << 20)
    try await cache.store(key: "a", bytes: bytes(100))
    let outside = directory + "/outside.txt"
    try "not a thumbnail".write(toFile: outside, atomically: true, encoding: .utf8)
    let old = Date(timeIntervalSince1970: 1_000_000_000)
    try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: outside)
    try FileManager.default.removeItem(atPath: directory + "/cache/a.jpg")
    try FileManager.default.createSymbolicLink(atPath: directory + "/cache/a.jpg", withDestinationPath: outside)
    try await cache.touch("a")
    let modified = try FileManager.default.attributesOfItem(atPath: outside)[.modificationDate] as? Date
    #expect(modified == old, "the link's target was stamped: \(String(describing: modified))")
}
