import FieldLogTestSupport
import Foundation
import Photos
import Testing
import Thumbnailing

// Power cuts on a real directory through reliability/powercut/layer.py, a FUSE layer that keeps only what
// was fsynced (file data) and what a directory fsync made durable (names). Needs root, /dev/fuse and Debian's
// python3-fusepy; reliability/powercut/run installs it and runs hundreds of such cuts on the real daemon.

private enum PowerCutLayer {
    static let script = Harness.repository + "/reliability/powercut/layer.py"
    static let available =
        getuid() == 0 && access("/dev/fuse", R_OK | W_OK) == 0
        && FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/fusepy.py")
}

/// BACKING seen through the layer at `path`; `cut` unmounts and leaves BACKING as a power cut would.
private final class PowerCutMount {
    let path: String
    private let report: String
    private let layer: Child

    init(backing: String, in directory: String) async throws {
        path = directory + "/mnt"
        report = directory + "/report"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: report, withIntermediateDirectories: true)
        layer = try Child("/usr/bin/python3", [PowerCutLayer.script, backing, path, report], in: directory)
        let deadline = Date().addingTimeInterval(10)
        while !Self.isMounted(path) && layer.isRunning && Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(Self.isMounted(path), "layer.py did not mount: \(layer.isRunning ? "" : layer.reap().stderr)")
    }

    private static func isMounted(_ path: String) -> Bool {
        var inner = stat()
        var outer = stat()
        return stat(path, &inner) == 0 && stat(path + "/..", &outer) == 0 && inner.st_dev != outer.st_dev
    }

    /// Cuts the power: nothing unsynced survives.
    func cut() async {
        _ = FileManager.default.createFile(atPath: report + "/cut", contents: Data("drop 1\n".utf8))
        let umount = try? Child("/usr/bin/umount", [path], in: report)
        let outcome = await umount?.wait(timeout: 30)
        #expect(outcome?.status == 0, "umount: \(outcome?.stderr ?? "")")
        let exit = await layer.wait(timeout: 60)
        #expect(exit.status == 0, "layer.py: \(exit.stderr)")
    }
}

@Test(.enabled(if: PowerCutLayer.available))
func aStoredThumbnailSurvivesAPowerCut() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let backing = directory + "/backing"
    // The cache directory exists before, as /var/cache/fieldlog does on a device.
    try FileManager.default.createDirectory(atPath: backing + "/cache", withIntermediateDirectories: true)
    let mount = try await PowerCutMount(backing: backing, in: directory)
    let thumbnail = [UInt8](repeating: 0x5A, count: 3_000)
    do {
        let cache = try ThumbnailCache(directory: mount.path + "/cache", maxBytes: 10_000)
        try await cache.store(key: "local-first", bytes: thumbnail)
        try await cache.store(key: "local-second", bytes: thumbnail)
        try await cache.store(key: "local-third", bytes: thumbnail)
        // Evicts local-first: the eviction must last through the cut too, or the cache would come back
        // above its limit.
        try await cache.store(key: "local-fourth", bytes: thumbnail)
    }
    await mount.cut()
    let names = try FileManager.default.contentsOfDirectory(atPath: backing + "/cache").sorted()
    #expect(names == [".fieldlog-thumbnails", "local-fourth.jpg", "local-second.jpg", "local-third.jpg"])
    let survived = FileManager.default.contents(atPath: backing + "/cache/local-fourth.jpg").map { [UInt8]($0) }
    #expect(survived.map { $0 == thumbnail } == true, "local-fourth.jpg is not the thumbnail stored")
}
