import CDispatch
import FieldLogTestSupport
import Foundation
import Recording
import Testing
import WalkJournal
import WalkModel

/// Files in the cache and the state directory that are not what their names claim: a link to a
/// file outside, a FIFO, a huge sparse file. Each is skipped: nothing served or exported, nothing hangs,
/// the recorder lives and SIGTERM ends it. And `fieldlog export` writes only regular files.
@Suite(.serialized)
struct TamperedFilesTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var cache: String { directory + "/cache" }
    static let id = "20261118T094640Z"
    static let start = Timestamp.parse("2026-11-18T09:46:40Z")!
    /// A file outside the cache that a link in it points to.
    static let secret = "SECRET-7c1f-not-a-thumbnail\n"

    /// A walk whose milestones 0 to 3 have photos cached as `good`, `evil`, `fifo` and `sparse`.
    func writeWalk() throws {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        var records: [JournalRecord] = [.walkStart(id: Self.id, time: Self.start, every: 100)]
        for (index, key) in ["good", "evil", "fifo", "sparse"].enumerated() {
            let time = Self.start + Double(index) * 70
            records.append(
                .point(
                    TrackPoint(
                        fix: Fix(time: time, latitude: 55.95 + Double(index) * 0.001, longitude: -3.2), segment: 0,
                        distance: Double(index) * 100)))
            records.append(
                .milestone(
                    Milestone(
                        index: index, time: time, latitude: 55.95 + Double(index) * 0.001, longitude: -3.2,
                        distance: Double(index) * 100)))
            let candidate = PhotoCandidate(
                id: key, title: "Photo \(key)", ownerName: "Ann", ownerID: "1@N00", license: "CC BY 2.0", pageURL: nil,
                latitude: 55.95, longitude: -3.2, imageURL: "https://example.invalid/\(key).jpg")
            records.append(
                .photo(
                    MilestonePhoto(
                        milestone: index, source: "local", outcome: .found(candidate, distance: 10, cacheKey: key))))
        }
        let lines = records.map { JournalCodec.encode($0) + "\n" }.joined()
        try lines.write(toFile: state + "/walk-\(Self.id).jsonl", atomically: true, encoding: .utf8)
    }

    /// The cache as a tamperer leaves it: one real thumbnail, a link to a file outside, a FIFO, 64 GB of holes.
    func tamperCache() throws {
        try Data(PhotoTests.jpeg).write(to: URL(fileURLWithPath: cache + "/good.jpg"))
        try Self.secret.write(toFile: directory + "/secret.txt", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(
            atPath: cache + "/evil.jpg", withDestinationPath: directory + "/secret.txt")
        #expect(mkfifo(cache + "/fifo.jpg", 0o644) == 0)
        try Self.sparse(cache + "/sparse.jpg", bytes: 64 << 30)
    }

    static func sparse(_ path: String, bytes: Int) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(fd) }
        guard fd >= 0, ftruncate(fd, off_t(bytes)) == 0 else { throw POSIXError(.EIO) }
    }

    /// A recorder with the live page and no gpsd (it keeps trying): only the page and the state are exercised.
    func serve(port: UInt16) throws -> Child {
        try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", "127.0.0.1:\(Harness.freePort())", "--state-dir", state, "--cache-dir", cache,
                "--http", "127.0.0.1:\(port)",
            ], in: directory)
    }

    /// Base64 of the secret, as an export would embed it.
    static var secretInline: String { Data(secret.utf8).base64EncodedString() }

    @Test func cacheEntriesThatAreNotThumbnailsAreNeitherServedNorExported() async throws {
        try writeWalk()
        let port = Harness.freePort()
        let serving = try serve(port: port)
        defer { serving.reap() }
        #expect(await waitUntil { Harness.accepts(port: port) })
        // Planted while it runs: start-up's cleanup of the cache is past.
        try tamperCache()

        var slowest = 0.0
        func timedGet(_ path: String) -> RawHTTP.Answer {
            let started = Date()
            let answer = RawHTTP.get(path, port: port, readFor: 10)
            slowest = max(slowest, Date().timeIntervalSince(started))
            return answer
        }
        for key in ["evil", "fifo", "sparse"] {
            let answer = timedGet("/thumbnails/\(key)")
            #expect(answer.status == 404, "/thumbnails/\(key): \(answer.head)")
            #expect(!answer.body.contains("SECRET"))
        }
        #expect(timedGet("/thumbnails/good").status == 200)
        let live = timedGet("/walk.html")
        #expect(live.status == 200 && !live.body.contains(Self.secretInline), "\(live.head)")
        #expect(live.body.components(separatedBy: "data:image/jpeg;base64,").count - 1 == 1)
        let page = timedGet("/")
        #expect(
            page.status == 200 && page.body.contains("/thumbnails/good") && !page.body.contains("/thumbnails/evil")
                && !page.body.contains("/thumbnails/fifo") && !page.body.contains("/thumbnails/sparse"))
        #expect(slowest < 5, "slowest answer \(slowest) s")
        // The process that served them: the live page's, which the recorder started.
        let pagePid = try #require(StatusFile.read(directory: state)?.helpers?.first { $0.name == "live-page" }?.pid)
        let peak = LivePageTests.peakMemoryKB(pagePid) ?? 0
        #expect(peak > 0 && peak < 150_000, "peak \(peak) KiB")

        let stopping = Date()
        serving.signal(SIGTERM)
        let stopped = await serving.wait(timeout: 30)
        #expect(stopped.status == 0, "\(stopped.stderr)")
        // On its own, the page not killed: a page stuck reading the FIFO would be, after the supervisor's
        // 8 s. The time's margin is for a CI machine loaded by the other suites (15.8 s seen there once).
        let stopSeconds = Date().timeIntervalSince(stopping)
        #expect(!stopped.stderr.contains("did not stop within"), "\(stopped.stderr.suffix(2000))")
        #expect(stopSeconds < 25, "stopped after \(stopSeconds) s: \(stopped.stderr.suffix(2000))")
        #expect(stopped.stderr.contains("skipped \(cache)/evil.jpg"), "\(stopped.stderr)")

        // `fieldlog export` of the same walk and cache: the good thumbnail only, promptly.
        let exporting = Date()
        let exported = try await fieldlog(
            ["export", "--state-dir", state, "--cache-dir", cache, directory + "/walk.html"], in: directory, timeout: 30
        )
        let exportSeconds = Date().timeIntervalSince(exporting)
        #expect(exported.status == 0, "\(exported.stderr)")
        let html = (try? String(contentsOfFile: directory + "/walk.html", encoding: .utf8)) ?? ""
        #expect(
            !html.contains(Self.secretInline) && html.components(separatedBy: "data:image/jpeg;base64,").count - 1 == 1)
        #expect(exportSeconds < 10)
        #expect(exported.stderr.contains("fifo.jpg") && exported.stderr.contains("sparse.jpg"), "\(exported.stderr)")
        print(
            "tampered cache: answers within \(String(format: "%.2f", slowest)) s, peak \(peak / 1024) MB, stop \(String(format: "%.2f", stopSeconds)) s, export \(String(format: "%.2f", exportSeconds)) s"
        )
    }

    /// A command of `fieldlog` under a 4 GiB address space, so that one that would read a huge file fails
    /// rather than take the machine's memory.
    func bounded(_ arguments: [String]) async throws -> (Outcome, Double) {
        let started = Date()
        let outcome = try await Child(
            "/usr/bin/prlimit", ["--as=\(4 << 30)", "--", Harness.fieldlog] + arguments, in: directory
        ).wait(timeout: 20)
        return (outcome, Date().timeIntervalSince(started))
    }

    @Test func tamperedStateFilesHangNothing() async throws {
        try writeWalk()
        // A FIFO named as the newest journal, a FIFO index and a FIFO status.
        #expect(mkfifo(state + "/walk-20991231T000000Z.jsonl", 0o644) == 0)
        #expect(mkfifo(state + "/" + WalkIndex.fileName, 0o644) == 0)
        #expect(mkfifo(state + "/" + StatusFile.fileName, 0o644) == 0)
        var slowest = 0.0
        for arguments in [["walks"], ["status"], ["tail", "-n", "3"]] {
            let (outcome, seconds) = try await bounded(arguments + ["--state-dir", state])
            slowest = max(slowest, seconds)
            #expect(
                outcome.status == 0 && seconds < 10,
                "\(arguments): \(outcome.status) in \(seconds) s: \(outcome.stderr)")
            #expect(outcome.stderr.contains("walk-20991231T000000Z.jsonl: not a regular file"), "\(outcome.stderr)")
        }
        // A 20 GB sparse index.
        unlink(state + "/" + WalkIndex.fileName)
        try Self.sparse(state + "/" + WalkIndex.fileName, bytes: 20 << 30)
        let (walks, seconds) = try await bounded(["walks", "--state-dir", state])
        slowest = max(slowest, seconds)
        #expect(
            walks.status == 0 && walks.stdout.contains(Self.id) && seconds < 10,
            "\(walks.status) in \(seconds) s: \(walks.stderr)")

        // The recorder starts beside the FIFO journal, serves the page, and ends on SIGTERM.
        let port = Harness.freePort()
        let serving = try serve(port: port)
        defer { serving.reap() }
        // (The page's process starts beside the recorder: seconds on a machine loaded by other tests.)
        #expect(
            await waitUntil(timeout: 60) { Harness.accepts(port: port) || !serving.isRunning },
            "the recorder never served its page")
        #expect(RawHTTP.get("/", port: port, readFor: 10).body.contains("data-milestone=\"3\""))
        serving.signal(SIGTERM)
        let stopped = await serving.wait(timeout: 15)
        #expect(stopped.status == 0, "\(stopped.stderr)")
        print("tampered state: walks, status, tail within \(String(format: "%.2f", slowest)) s each")
    }

    @Test func exportWritesOnlyRegularFiles() async throws {
        try writeWalk()
        let fifo = directory + "/out-fifo.json"
        #expect(mkfifo(fifo, 0o644) == 0)
        let folder = directory + "/out-dir.json"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var targets = [(fifo, Glibc.S_IFIFO, "is a FIFO"), (folder, S_IFDIR, "is a directory")]
        // A character device like /dev/full (1, 7), made here, never the real one.
        let device = directory + "/out-full.json"
        if mknod(device, S_IFCHR | 0o666, dev_t((1 << 8) | 7)) == 0 { targets.append((device, S_IFCHR, "is a device")) }
        for (target, type, message) in targets {
            let outcome = try await fieldlog(["export", "--state-dir", state, target], in: directory, timeout: 20)
            #expect(outcome.status != 0, "\(target): exit \(outcome.status)")
            #expect(
                outcome.stderr.contains(message) && outcome.stderr.split(separator: "\n").count == 1,
                "\(outcome.stderr)")
            var info = stat()
            #expect(lstat(target, &info) == 0 && info.st_mode & S_IFMT == type, "\(target) was replaced")
        }
        // Standard output is still written, whatever it is.
        let piped = try await fieldlog(
            ["export", "--state-dir", state, "--format", "json", "-"], in: directory, timeout: 20)
        #expect(piped.status == 0 && piped.stdout.contains("\"milestones\""), "\(piped.stderr)")
    }
}
