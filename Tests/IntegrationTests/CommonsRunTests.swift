import FieldLogFakes
import FieldLogTestSupport
import Foundation
import NIOCore
import Photos
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

/// `fieldlog run` as a new user runs it, with no Flickr key and no photo folder: photos from (a fake)
/// Commons for every milestone, with their attribution in tail and the exports; and the walk being
/// recorded served first, however many older walks wait.
@Suite(
    .serialized, .timeLimit(.minutes(4)),
    .enabled(if: Harness.gpsfakeAvailable, "needs gpsd and gpsfake (apt: gpsd gpsd-clients)"))
struct CommonsRunTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var cache: String { directory + "/cache" }
    let commons = FakeCommons()
    static let start = (lat: 55.9486, lon: -3.1999)

    /// Files beside every 100 m of a walk north-east from `start`.
    func filesAlong(from start: (lat: Double, lon: Double), bearing: Double, count: Int, firstID: Int) {
        for hundred in 0..<count {
            let onPath = Geodesy.destination(start.lat, start.lon, bearing: bearing, distance: Double(hundred) * 100)
            let beside = Geodesy.destination(onPath.lat, onPath.lon, bearing: bearing + 90, distance: 30)
            commons.add(
                .init(
                    pageID: firstID + hundred, latitude: beside.lat, longitude: beside.lon,
                    name: "Street \(hundred), Edinburgh.jpg",
                    taken: "2021-0\(1 + hundred % 9)-0\(1 + hundred % 7) 10:00:00",
                    jpeg: PhotoTests.jpeg))
        }
    }

    @Test func withNoKeyAndNoFolderEveryMilestoneGetsACommonsPhotoWithAttribution() async throws {
        try await commons.start()
        defer { Task { await commons.stop() } }
        var walk = SyntheticWalk(heading: 45)
        walk.add([.walk(seconds: 900, speed: 1.4)])
        let capture = directory + "/walk.nmea"
        try walk.write(to: capture)
        filesAlong(from: Self.start, bearing: 45, count: 13, firstID: 1000)
        let gpsd = try await GPSFake(capture: capture, delay: 0.002, in: directory)
        // No settings file, no key: the defaults choose Commons.
        let outcome = try await fieldlog(
            [
                "run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--cache-dir", cache,
                "--commons-endpoint", commons.endpoint, "--contact", "walker@example.org", "--photo-retry-max", "2",
            ],
            in: directory, environment: ["FIELDLOG_CONFIG": "/dev/null", "FLICKR_API_KEY": ""])
        await gpsd.wait()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let store = JournalStore(directory: state)
        let log = try store.read(try store.resolve(nil))
        #expect(log.milestones.count >= 12)
        #expect(log.pendingMilestones.isEmpty)
        let records = log.milestones.compactMap { log.photos[$0.index] }
        #expect(records.allSatisfy { $0.source == "commons" && $0.photo != nil && $0.why != nil })
        #expect(Set(records.compactMap { $0.photo?.id }).count == records.count)
        #expect(commons.userAgents.allSatisfy { $0.hasPrefix("fieldlog/") && $0.hasSuffix("(walker@example.org)") })
        #expect(commons.requests.allSatisfy { $0.hasPrefix("/w/api.php?") || $0.hasPrefix("/thumb/") })

        let tail = try await fieldlog(["tail", "--state-dir", state, "-n", "40"], in: directory)
        #expect(tail.stdout.contains("by Ann Example (CC BY-SA 4.0)"), "\(tail.stdout)")
        let html = directory + "/walk.html"
        let export = try await fieldlog(["export", "--state-dir", state, "--cache-dir", cache, html], in: directory)
        #expect(export.status == 0, "\(export.stderr)")
        let page = try String(contentsOfFile: html, encoding: .utf8)
        #expect(page.contains("Ann Example") && page.contains("CC BY-SA 4.0"))
        #expect(page.contains("href=\"https://commons.wikimedia.org/wiki/File:Street_0"))
        #expect(page.components(separatedBy: "data:image/jpeg;base64,").count - 1 == records.count)
    }

    /// Offline (nothing listens where Commons should be): `--once` still ends, `PhotoService.defaultFinishWait`
    /// after gpsd has ended, leaving the milestones pending for the next run and saying how many.
    @Test func offlineAReplayEndsWithinTheWaitAndLeavesItsMilestonesPending() async throws {
        var walk = SyntheticWalk(heading: 45)
        walk.add([.walk(seconds: 300, speed: 1.4)])
        let capture = directory + "/short.nmea"
        try walk.write(to: capture)
        let gpsd = try await GPSFake(capture: capture, delay: 0.002, in: directory)
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--cache-dir", cache,
                "--commons-endpoint", "http://127.0.0.1:\(Harness.freePort())/w/api.php",
            ],
            in: directory, environment: ["FIELDLOG_CONFIG": "/dev/null", "FLICKR_API_KEY": ""])
        await gpsd.wait()
        let gpsdEnded = Date()
        let wait = Double(PhotoService.defaultFinishWait.components.seconds)
        let outcome = await recorder.wait(timeout: wait + 60)
        let after = Date().timeIntervalSince(gpsdEnded)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(after < wait + 10, "ended \(after) s after gpsd")
        let store = JournalStore(directory: state)
        let log = try store.read(try store.resolve(nil))
        #expect(log.milestones.count >= 4)
        #expect(log.pendingMilestones.count == log.milestones.count)
        #expect(
            outcome.stderr.contains("\(log.pendingMilestones.count) milestones still wait for a photo"),
            "\(outcome.stderr)")
    }

    /// The time from start-up until the new walk's first fix is journaled, and until all of its first eight
    /// milestones have photos, with `olderWalks` walks waiting in the state directory, and with the previous
    /// walk interrupted (then closed by the new walk's first fix) or none.
    /// The live page is on meanwhile: once the photos are there, it must show them with their attribution.
    func liveWalk(olderWalks: Int, previous: Bool) async throws -> (firstFix: Double, photos: Double, served: Int) {
        let runDirectory = directory + "/history-\(olderWalks)"
        let store = JournalStore(directory: runDirectory + "/state")
        try store.prepare()
        let t0 = 1_780_000_000.0
        // Older walks far away (nothing near them), each with three milestones waiting and 300 fixes.
        for walk in 0..<olderWalks {
            try PendingWalks.write(
                start: t0 - 86_400 * Double(olderWalks - walk), origin: (10, 10 + Double(walk) * 0.01), milestones: 3,
                fixes: 300, in: store)
        }
        // The previous walk, interrupted with its milestones waiting; fixes come two hours later: it is closed.
        if previous {
            try PendingWalks.write(start: t0, origin: (11, 11), milestones: 3, fixes: 10, open: true, in: store)
        }
        // What start-up once waited for before recording began: the index built from every journal.
        let indexing = Date()
        _ = try WalkIndex.summaries(in: store, save: false)
        print("walk index of \(olderWalks + (previous ? 1 : 0)) walks built in \(Date().timeIntervalSince(indexing)) s")
        let resumed = t0 + 7_200
        let liveID = store.newWalkID(startingAt: resumed)
        let gpsd = try await FakeGPSD.start { _ in
            var lines: [String] = []
            for second in 0..<560 {
                let at = Geodesy.destination(
                    Self.start.lat, Self.start.lon, bearing: 90, distance: Double(second) * 1.4)
                lines.append(FakeGPSD.tpv(time: Timestamp.format(resumed + Double(second)), lat: at.lat, lon: at.lon))
            }
            return FakeGPSD.Script(lines: lines, interval: .milliseconds(5), closeAtEnd: false)
        }
        defer { Task { await gpsd.stop() } }
        let http = Harness.freePort()
        let began = Date()
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", store.directory, "--cache-dir", runDirectory + "/cache",
                "--photo-sources", "commons", "--commons-endpoint", commons.endpoint, "--http", "127.0.0.1:\(http)",
            ],
            in: runDirectory)
        var firstFix: Double?
        var photos: Double?
        var served = 0
        while Date().timeIntervalSince(began) < 90, photos == nil, recorder.isRunning {
            if FileManager.default.fileExists(atPath: store.path(for: liveID)), let log = try? store.read(liveID) {
                if firstFix == nil, !log.points.isEmpty { firstFix = Date().timeIntervalSince(began) }
                served = log.milestones.prefix(8).filter { log.photos[$0.index]?.photo != nil }.count
                if served == 8 { photos = Date().timeIntervalSince(began) }
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let page = RawHTTP.get("/", port: http, readFor: 10).body
        #expect(page.contains("by Ann Example"), "the live page shows the author")
        #expect(
            page.contains(
                "<a href=\"https://creativecommons.org/licenses/by-sa/4.0\" rel=\"license noopener noreferrer\">CC BY-SA 4.0</a>"
            ))
        #expect(page.contains("href=\"https://commons.wikimedia.org/wiki/File:Street_"))
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 30)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        return (firstFix ?? .infinity, photos ?? .infinity, served)
    }

    @Test func theWalkBeingRecordedIsServedFirstHoweverManyWalksWait() async throws {
        try await commons.start()
        defer { Task { await commons.stop() } }
        filesAlong(from: Self.start, bearing: 90, count: 9, firstID: 2000)
        let alone = try await liveWalk(olderWalks: 0, previous: false)
        let behind = try await liveWalk(olderWalks: 300, previous: true)
        print("live walk, no history: first fix after \(alone.firstFix) s, 8 photos after \(alone.photos) s")
        print(
            "live walk, 300 older walks waiting: first fix after \(behind.firstFix) s, 8 photos after \(behind.photos) s"
        )
        #expect(alone.served == 8 && behind.served == 8, "\(alone) \(behind)")
        // The first fix does not wait for the older walks (their index, their photos); the margin is for a
        // machine loaded by other tests, and well below what serving the older walks first takes.
        #expect(behind.firstFix <= alone.firstFix + 1.5)
        #expect(behind.photos <= alone.photos + 2)
        #expect(try JournalStore(directory: directory + "/history-300/state").walkIDs().count == 302)
    }
}
