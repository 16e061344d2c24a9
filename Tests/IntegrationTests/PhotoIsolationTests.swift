import Exports
import FieldLogTestSupport
import Foundation
import Photos
import Testing
import Thumbnailing
import WalkJournal
import WalkModel

// Photos are decoded in `fieldlog photo-worker`, a child process under memory, CPU and time limits: the
// worst a photo can do is fail itself.

private func fixture(_ path: String) throws -> [UInt8] {
    try Array(Data(contentsOf: URL(fileURLWithPath: Harness.fixtures + "/photos/" + path)))
}

/// The 45-megapixel (8192x5504) progressive 4:4:4 JPEG, with the EXIF of demo/photos' seeding photo.
private let largePhoto = "large/seeding_by_Clements_Engelhardt.jpg"

/// An executable script standing in for the worker.
private func script(_ body: String, in directory: String) throws -> String {
    let path = directory + "/worker.sh"
    try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    chmod(path, 0o755)
    return path
}

private func rejection(_ body: () async throws -> Thumbnail) async -> ThumbnailError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error as? ThumbnailError
    }
}

@Test func isolatedThumbnailIsTheInProcessOneByteForByte() async throws {
    let worker = IsolatedThumbnailer(executable: Harness.fieldlog, size: 320)
    for name in ["p13_aloeL.jpg", "p27_life_orient6.jpg", "p05_left01_gray.jpg"] {
        let photo = try fixture(name)
        let isolated = try await worker.thumbnail(of: photo)
        #expect(isolated == (try Thumbnailer(size: 320).thumbnail(of: photo)), "\(name)")
    }
}

@Test func workerReportsWhyAPhotoIsRejected() async throws {
    let worker = IsolatedThumbnailer(executable: Harness.fieldlog, size: 320)
    #expect(await rejection { try await worker.thumbnail(of: []) }?.code == .empty)
    #expect(
        await rejection { try await worker.thumbnail(of: try fixture("a07_bomb_header_65000.jpg")) }?.code == .tooLarge)
    #expect(await rejection { try await worker.thumbnail(of: try fixture("a06_corrupt_dht.jpg")) }?.code == .corrupt)
}

@Test func workerRefusesArgumentsItDoesNotTake() async throws {
    let directory = Harness.temporaryDirectory()
    for (arguments, message) in [
        (["--sise", "320"], "unknown argument '--sise'"), (["--size", "0"], "--size takes a positive number"),
        (["--cpu"], "--cpu takes a positive number"), (["--size", "5000"], "--size is at most 4096"),
    ] {
        let outcome = try await fieldlog(["photo-worker"] + arguments, in: directory)
        #expect(outcome.status == 2, "\(arguments)")
        #expect(outcome.stderr.contains(message), "\(arguments): \(outcome.stderr)")
        #expect(outcome.stdout.isEmpty)
    }
}

@Test func largeProgressivePhotoIsRefusedWithinTheWorkersBudget() async throws {
    let photo = try fixture(largePhoto)
    let worker = IsolatedThumbnailer(executable: Harness.fieldlog, size: 320)
    let error = await rejection { try await worker.thumbnail(of: photo) }
    #expect(error?.code == .tooLarge, "\(String(describing: error))")
    // With libjpeg allowed more than the address space holds, the process limit stops it instead.
    var limits = PhotoWorkLimits()
    limits.decoderMemory = 1 << 30
    let unbounded = IsolatedThumbnailer(executable: Harness.fieldlog, size: 320, limits: limits)
    let stopped = await rejection { try await unbounded.thumbnail(of: photo) }
    // (libjpeg's allocation fails inside the worker's address space: a clean rejection, or the worker dies.)
    #expect([.tooLarge, .outOfMemory, .crashed].contains(stopped?.code), "\(String(describing: stopped))")
}

@Test func crashingWorkerFailsOnlyItsPhoto() async throws {
    let directory = Harness.temporaryDirectory()
    let worker = IsolatedThumbnailer(executable: try script("kill -SEGV $$", in: directory), size: 320)
    let error = await rejection { try await worker.thumbnail(of: try fixture("p13_aloeL.jpg")) }
    #expect(error?.code == .crashed)
    #expect(error?.message.contains("signal \(SIGSEGV)") == true, "\(String(describing: error))")
}

@Test func hungWorkerIsKilledAtItsTimeLimit() async throws {
    let directory = Harness.temporaryDirectory()
    var limits = PhotoWorkLimits()
    limits.wallSeconds = 1
    let worker = IsolatedThumbnailer(executable: try script("exec sleep 60", in: directory), size: 320, limits: limits)
    let error = await rejection { try await worker.thumbnail(of: try fixture("p13_aloeL.jpg")) }
    #expect(
        error?.code == .crashed && error?.message.contains("longer than 1 s") == true, "\(String(describing: error))")
}

@Test func photoAttemptedTwiceWithoutOutcomeIsSuspect() {
    var log = WalkLog(id: "w")
    for id in ["bad", "bad", "fine", "used", "used"] {
        log.apply(.event(JournalEvent(kind: .photoAttempt, wall: 0, message: id)))
    }
    let used = PhotoCandidate(
        id: "used", title: "", ownerName: "", ownerID: "", license: "", pageURL: nil, latitude: 0, longitude: 0,
        imageURL: "")
    log.apply(
        .photo(
            MilestonePhoto(milestone: 0, source: "local", outcome: .found(used, distance: 1, cacheKey: "local-used"))))
    #expect(log.suspectPhotoIDs == ["bad"])
}

/// `fieldlog run` with a 45-MP progressive photo nearest to a milestone, under the unit's own memory limit
/// (a cgroup with 256 MiB, when this machine lets the test make one): no death, the photo is rejected, and
/// every milestone gets a photo.
@Suite(.serialized, .enabled(if: Harness.gpsfakeAvailable, "needs gpsd and gpsfake (apt: gpsd gpsd-clients)"))
struct LargePhotoTests {
    let directory = Harness.temporaryDirectory()

    @Test func largePhotoNeitherKillsNorStopsTheRecorder() async throws {
        let photos = directory + "/photos"
        try FileManager.default.copyItem(atPath: Harness.repository + "/demo/photos", toPath: photos)
        try FileManager.default.removeItem(atPath: photos + "/seeding_by_Clements_Engelhardt.jpg")
        try FileManager.default.copyItem(
            atPath: Harness.fixtures + "/photos/" + largePhoto, toPath: photos + "/seeding_by_Clements_Engelhardt.jpg")
        let state = directory + "/state"
        let gpsd = try await GPSFake(capture: Harness.capture("bundg_zeus_9"), in: directory)
        let run = [
            Harness.fieldlog, "run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--photos-dir", photos,
            "--cache-dir", directory + "/cache",
        ]
        let cgroup = MemoryCgroup(limit: 256 << 20)
        let recorder = try Child(
            "/bin/sh", ["-c", (cgroup?.enterCommand ?? "") + "exec \"$@\"", "sh"] + run, in: directory)
        let outcome = await recorder.wait(timeout: 120)
        await gpsd.wait()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        if let cgroup {
            #expect(cgroup.oomKills == 0)
            #expect(cgroup.peakBytes < 256 << 20)
            cgroup.remove()
        }
        let store = JournalStore(directory: state)
        let log = try store.read(try #require(try store.walkIDs().first))
        // 418 m: five milestones, or four if fieldlog connected to gpsfake a little late on a busy machine.
        #expect(log.milestones.count >= 4)
        #expect(log.pendingMilestones.isEmpty)
        #expect(log.milestones.allSatisfy { log.photos[$0.index]?.photo != nil }, "\(log.photos)")
        #expect(!log.usedPhotoIDs.contains("seeding_by_Clements_Engelhardt"))
        #expect(
            log.events.contains { $0.kind == .error && $0.message?.contains("seeding_by_Clements_Engelhardt") == true })
        #expect(log.events.filter { $0.kind == .sessionStart }.count == 1, "the recorder never restarted")
    }
}

@Test func isolatedExifReadingFindsWhatInProcessReadingFinds() async throws {
    let demo = Harness.repository + "/demo/photos"
    let inProcess = try LocalPhotoSource(directory: demo)
    let isolated = try LocalPhotoSource(
        directory: demo, reader: .isolated(executable: Harness.fieldlog, limits: PhotoWorkLimits()))
    #expect(await isolated.candidates == (await inProcess.candidates))
    #expect(await isolated.lastScan == (await inProcess.lastScan))
}

@Test func exifWorkerDyingSkipsOnlyTheFileItWasReading() throws {
    let directory = Harness.temporaryDirectory()
    // Reports one file, then dies on the next, every time it is started.
    let worker = try script(
        #"printf '{"geotag":"geotagged","latitude":1,"longitude":2,"title":"t","artist":"a","copyright":"c","taken":""}\n'; kill -SEGV $$"#,
        in: directory)
    let records = ExifReading.isolated(executable: worker, limits: PhotoWorkLimits()).read([
        "/a.jpg", "/b.jpg", "/c.jpg",
    ])
    #expect(records.map(\.geotag) == [.geotagged, .unreadable, .geotagged])
    #expect(records[2].latitude == 1 && records[2].title == "t")
}

@Test func tailLeavesOutPhotoAttempts() {
    let formatter = TailFormatter()
    #expect(formatter.line(for: .event(JournalEvent(kind: .photoAttempt, wall: 0, message: "p1"))) == nil)
    #expect(
        formatter.line(for: .event(JournalEvent(kind: .storageFailed, wall: 0, message: "full")))?.contains(
            "storage failed: full") == true)
}
