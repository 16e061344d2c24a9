import FieldLogTestSupport
import Foundation
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

/// fieldlog links FoundationEssentials only, never full Foundation and its ICU tables: scripts/verify-foundation
/// (which scripts/test runs after the build, and deploy/build-deb on the shipped binary) says so, and fails a
/// binary that does link them.
struct LeanBinaryTests {
    let directory = Harness.temporaryDirectory()
    static let verify = Harness.repository + "/scripts/verify-foundation"
    static let swiftc =
        ((ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { $0 + "/swiftc" }
        + ["/opt/swift/usr/bin/swiftc"]).first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test func fieldlogLinksNoFoundationAndNoICU() async throws {
        let outcome = try await Child(Self.verify, [Harness.fieldlog], in: directory).wait(timeout: 60)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("no full Foundation, no ICU"))
    }

    @Test(.enabled(if: swiftc != nil, "needs swiftc"))
    func aBinaryThatImportsFoundationFailsTheCheck() async throws {
        try "import Foundation\nprint(Date(), NSString(string: \"x\").length)\n"
            .write(toFile: directory + "/main.swift", atomically: true, encoding: .utf8)
        let built = try await Child(
            Self.swiftc!, [directory + "/main.swift", "-o", directory + "/uses-foundation"], in: directory
        ).wait(timeout: 300)
        try #require(built.status == 0, "\(built.stderr)")
        let outcome = try await Child(Self.verify, [directory + "/uses-foundation"], in: directory).wait(timeout: 60)
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("needs libFoundation.so"), "\(outcome.stderr)")
        #expect(outcome.stderr.contains("holds Foundation's types"), "\(outcome.stderr)")
    }

    /// libdispatch, once started, wakes the process every second for good. fieldlog runs Swift concurrency on
    /// SwiftNIO's event loops, sleeps on their timers (sleepOnEventLoop) and waits for its signals on a thread
    /// of its own, so a recorder with the live page and a photo folder never starts it. (With Flickr it does:
    /// SwiftNIO resolves host names on libdispatch's queues.) SIGINT stops it as SIGTERM does.
    @Test(.enabled(if: Harness.gpsfakeAvailable, "needs gpsd and gpsfake"))
    func aRecorderNeverStartsLibdispatch() async throws {
        // From where the demo's first photo was taken: the folder's photos are decoded as milestones pass them.
        var walk = SyntheticWalk(latitude: 52.850430, longitude: 5.313230, heading: 300)
        walk.add([.walk(seconds: 220, speed: 1.4)])
        try walk.write(to: directory + "/walk.nmea")
        let gpsd = try await GPSFake(capture: directory + "/walk.nmea", delay: 0.02, in: directory)
        let state = directory + "/state"
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", state, "--http", "127.0.0.1:\(Harness.freePort())",
                "--photos-dir", Harness.repository + "/demo/photos", "--cache-dir", directory + "/cache",
            ],
            in: directory)
        defer { recorder.reap() }
        let deadline = Date().addingTimeInterval(30)
        let store = JournalStore(directory: state)
        func photos() -> Int {
            guard let id = try? store.walkIDs().first, let walk = try? store.read(id) else { return 0 }
            return walk.photos.values.filter { $0.photo != nil }.count
        }
        while Date() < deadline, photos() < 2 {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(photos() >= 2, "photos were fetched and decoded")
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(recorder.pid)/task")) ?? []
        let threads = tasks.compactMap {
            try? String(contentsOfFile: "/proc/\(recorder.pid)/task/\($0)/comm", encoding: .utf8)
        }
        .map { $0.trimmingCharacters(in: .newlines) }
        #expect(threads.contains("gpsd-reader"), "\(threads)")
        // libdispatch's threads are named after its root queues: "com.apple.root.default-qos.overcommit".
        #expect(!threads.contains { $0.contains("qos") || $0.contains("dispatch") }, "\(threads)")
        recorder.signal(SIGINT)
        let outcome = await recorder.wait(timeout: 15)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("signal 2: shutting down"), "\(outcome.stderr)")
        await gpsd.wait()
    }
}
