import FieldLogTestSupport
import Foundation
import LivePage
import Logging
import Recording
import ServiceLifecycle
import Synchronization
import Testing
import WalkJournal
import WalkModel

/// The live page served in-process on loopback against an attacker on the same network: downloads that are
/// never read, event streams held open, connections opened non-stop. The attacker connects from 127.0.0.1,
/// the phone from 127.0.0.2, as two devices on the Pi's Wi-Fi have two addresses.
@Suite(.serialized)
struct LivePageBoundsTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var cache: String { directory + "/cache" }
    static let phone = "127.0.0.2"
    static let browserAvailable = FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")

    /// A walk of `fixes` track points and `milestones` milestones, each with a photo whose thumbnail (of
    /// `thumbnailBytes`) is cached; open, as while it is recorded.
    func writeWalk(fixes: Int, milestones: Int, thumbnailBytes: Int = 0) throws -> String {
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        let store = JournalStore(directory: state)
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let id = try PendingWalks.write(
            start: 1_795_000_000, origin: (55.95, -3.2), milestones: milestones, fixes: fixes, open: true, in: store)
        guard thumbnailBytes > 0 else { return id }
        let photos = (0..<milestones).map { index in
            let candidate = PhotoCandidate(
                id: "77\(index)", title: "View \(index)", ownerName: "Test Walker", ownerID: "1@N1",
                license: "CC BY 2.0",
                pageURL: nil, latitude: 55.95, longitude: -3.2, imageURL: "https://example.org/\(index).jpg")
            try? Data((0..<thumbnailBytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) })
                .write(to: URL(fileURLWithPath: cache + "/flickr-77\(index).jpg"))
            return JournalCodec.encode(
                .photo(
                    MilestonePhoto(
                        milestone: index, source: "flickr",
                        outcome: .found(candidate, distance: 10, cacheKey: "flickr-77\(index)"))))
        }
        let handle = try #require(FileHandle(forWritingAtPath: store.path(for: id)))
        handle.seekToEndOfFile()
        handle.write(Data((photos.joined(separator: "\n") + "\n").utf8))
        handle.closeFile()
        return id
    }

    /// The live page of walk `id` on a free port until `body` returns.
    func serving(
        _ id: String?, configure: (inout WebService.Configuration) -> Void = { _ in },
        _ body: (UInt16) async throws -> Void
    ) async throws {
        let port = Harness.freePort()
        var configuration = WebService.Configuration(host: "127.0.0.1", port: Int(port))
        configure(&configuration)
        let logger = Logger(label: "live-page-bounds")
        let service = WebService(
            configuration: configuration, store: JournalStore(directory: state), cacheDirectory: cache,
            currentWalk: { id },
            status: {
                LiveStatus(recording: RecordingStatus(), gpsd: .connected, lastFixWall: nil, photos: nil)
            },
            logger: logger)
        let group = ServiceGroup(services: [service], logger: logger)
        let running = Task { try await group.run() }
        let deadline = Date().addingTimeInterval(10)
        while !Harness.accepts(port: port), Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        do {
            try await body(port)
        } catch {
            await group.triggerGracefulShutdown()
            throw error
        }
        await group.triggerGracefulShutdown()
        try await running.value
    }

    /// This process's resident memory, in KiB.
    static func residentKB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        return status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? 0
    }

    /// Seconds to a phone's whole `GET /` (0 status if unanswered).
    static func phonePage(port: UInt16) -> (seconds: Double, status: Int) {
        let started = Date()
        let answer = RawHTTP.get("/", port: port, readFor: 5, from: phone)
        return (Date().timeIntervalSince(started), answer.body.contains("</html>") ? answer.status : 0)
    }

    /// Seconds to the head of a phone's `/events`, and its status.
    static func phoneEvents(port: UInt16) -> (seconds: Double, status: Int) {
        let started = Date()
        guard let stream = try? RawHTTP.Stream(path: "/events", port: port, from: phone) else { return (5, 0) }
        defer { stream.close() }
        return (Date().timeIntervalSince(started), RawHTTP.split(stream.head + "\r\n\r\n").status)
    }

    /// 64 clients ask for the exports of a walk whose journal is several MiB and never read a byte. Before:
    /// each held its own copy of the whole answer, hundreds of MB. Now they share one rendering and hold a
    /// chunk each, the phone is still answered, and after `stallTime` they are cut off.
    @Test func downloadsNobodyReadsHoldNoCopyOfTheExport() async throws {
        let id = try writeWalk(fixes: 40_000, milestones: 60, thumbnailBytes: 48 << 10)
        let journalBytes =
            try FileManager.default.attributesOfItem(atPath: JournalStore(directory: state).path(for: id))[.size]
            as! Int
        #expect(journalBytes > 5 << 20, "journal of \(journalBytes) bytes")
        try await serving(id) { port in
            let json = RawHTTP.get("/walk.json", port: port)
            let html = RawHTTP.get("/walk.html", port: port)
            let page = RawHTTP.get("/", port: port)
            #expect(
                json.status == 200 && html.status == 200 && page.status == 200, "\(json.head) \(html.head) \(page.head)"
            )
            #expect(json.body.utf8.count > 4 << 20 && html.body.utf8.count > 2 << 20)
            let before = Self.residentKB()

            var greedy: [Int32] = []
            defer { greedy.forEach { close($0) } }
            let attackStarted = Date()
            for index in 0..<64 {
                let fd = try RawHTTP.connect(port: port, receiveBuffer: 4096)
                let request = "GET /walk.\(index % 2 == 0 ? "json" : "html") HTTP/1.1\r\nHost: x\r\n\r\n"
                _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                greedy.append(fd)
            }
            var peak = before
            for _ in 0..<30 {
                peak = max(peak, Self.residentKB())
                try await Task.sleep(for: .milliseconds(100))
            }
            var pages: [(Double, Int)] = []
            var events: [(Double, Int)] = []
            for _ in 0..<5 {
                pages.append(Self.phonePage(port: port))
                events.append(Self.phoneEvents(port: port))
                peak = max(peak, Self.residentKB())
            }
            let growthMB = Double(peak - before) / 1024
            #expect(growthMB < 64, "resident memory grew by \(growthMB) MB")
            #expect(pages.filter { $0.1 == 200 && $0.0 < 2 }.count >= 4, "phone's GET /: \(pages)")
            #expect(events.filter { $0.1 == 200 && $0.0 < 2 }.count >= 4, "phone's /events: \(events)")

            // Cut off once no byte was taken for `stallTime` (20 s): what they still get is what was in flight.
            try await Task.sleep(for: .seconds(max(0, 25 - Date().timeIntervalSince(attackStarted))))
            let ended = greedy.prefix(8).filter { fd in
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                let deadline = Date().addingTimeInterval(3)
                while Date() < deadline {
                    let count = buffer.withUnsafeMutableBytes {
                        recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
                    }
                    if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { return true }
                    if count < 0 { usleep(20_000) }
                }
                return false
            }.count
            #expect(ended == 8, "\(ended) of 8 stalled downloads cut off after 25 s")
            print(
                """
                64 downloads never read (journal \(journalBytes >> 20) MiB, walk.json \(json.body.utf8.count >> 10) KiB, \
                walk.html \(html.body.utf8.count >> 10) KiB, page \(page.body.utf8.count >> 10) KiB): resident \
                \(before / 1024) MB before, peak \(peak / 1024) MB (+\(String(format: "%.1f", growthMB)) MB); phone GET / \
                \(pages.map { String(format: "%.2f", $0.0) }) s, /events \(events.map { String(format: "%.2f", $0.0) }) s
                """)
        }
    }

    /// 32, then 64, event streams held open by one address; a phone's stream is answered 200 at once. Before:
    /// 503 until a held stream's 15-minute lifetime ran out.
    @Test func heldEventStreamsDoNotLockAPhoneOut() async throws {
        let id = try writeWalk(fixes: 100, milestones: 5)
        try await serving(id) { port in
            for held in [32, 64] {
                let streams = try (0..<held).map { _ in try RawHTTP.Stream(path: "/events", port: port) }
                defer { streams.forEach { $0.close() } }
                #expect(streams.filter { $0.head.hasPrefix("HTTP/1.1 200") }.count == 32)
                // Another stream from the address holding them all is refused.
                #expect(RawHTTP.get("/events", port: port, readFor: 2).status == 503)
                let probes = (0..<5).map { _ in Self.phoneEvents(port: port) }
                #expect(
                    probes.filter { $0.status == 200 && $0.seconds < 2 }.count >= 4,
                    "\(held) held: phone's /events \(probes)")
                print(
                    "\(held) event streams held: phone's /events \(probes.map { "\($0.status) in \(String(format: "%.3f", $0.seconds)) s" })"
                )
            }
        }
    }

    /// Connections opened non-stop from one address, never sending a byte, while a phone sends `GET /` 20 ms,
    /// then 100 ms, after connecting. Before: the phone's connection, idle until its head arrived, was the one
    /// closed to make room.
    @Test func aChurnOfConnectionsDoesNotCloseAPhonesRequest() async throws {
        let id = try writeWalk(fixes: 100, milestones: 5)
        try await serving(id) { port in
            final class Stop: Sendable { let now = Atomic<Bool>(false) }
            let stop = Stop()
            let churners = (0..<2).map { _ in
                Thread {
                    var open: [Int32] = []
                    while !stop.now.load(ordering: .relaxed) {
                        if let fd = try? RawHTTP.connect(port: port, timeout: 1) { open.append(fd) }
                        if open.count > 200 { close(open.removeFirst()) }
                    }
                    open.forEach { close($0) }
                }
            }
            churners.forEach { $0.start() }
            defer { stop.now.store(true, ordering: .relaxed) }
            try await Task.sleep(for: .seconds(1))
            var results: [String] = []
            for wait in [20, 100] {
                var answered = 0
                for _ in 0..<5 {
                    let started = Date()
                    let fd = try RawHTTP.connect(port: port, from: Self.phone)
                    usleep(useconds_t(wait * 1000))
                    let request = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    let answer = RawHTTP.read(fd, for: 5)
                    close(fd)
                    let seconds = Date().timeIntervalSince(started)
                    if answer.status == 200 && answer.body.contains("</html>") && seconds < 2 { answered += 1 }
                    results.append("\(wait) ms: \(answer.status) in \(String(format: "%.2f", seconds)) s")
                }
                #expect(answered >= 4, "\(results)")
            }
            print("phone's GET / under a churn of connections: \(results)")
        }
    }

    /// The page opened while its event stream is refused (503: every place taken by its own address): the
    /// status line says it is reconnecting, and once a place is free, milestones arrive without a reload.
    /// Before: EventSource gave up on the 503 and the page stayed as it was.
    @Test(.enabled(if: browserAvailable, "needs chromium (scripts/install-deps --tests)"))
    func thePageReconnectsAfterARefusedStream() async throws {
        let id = try writeWalk(fixes: 20, milestones: 1)
        try await serving(id, configure: { $0.maxSubscribers = 1 }) { port in
            let held = try RawHTTP.Stream(path: "/events", port: port)
            #expect(held.head.hasPrefix("HTTP/1.1 200"))
            let browser = try Child(
                "/usr/bin/python3",
                [
                    Harness.repository + "/Tests/browser/live_check.py", "http://127.0.0.1:\(port)/", "--cards", "3",
                    "--photos", "0", "--timeout", "60", "--ready", directory + "/page-open",
                ], in: directory)
            let deadline = Date().addingTimeInterval(120)
            while !FileManager.default.fileExists(atPath: directory + "/page-open"), Date() < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            try await Task.sleep(for: .seconds(3))
            held.close()
            // Two milestones more, appended as the recorder appends them.
            let handle = try #require(FileHandle(forWritingAtPath: JournalStore(directory: state).path(for: id)))
            handle.seekToEndOfFile()
            for index in 1...2 {
                let milestone = Milestone(
                    index: index, time: 1_795_000_100 + Double(index) * 70, latitude: 55.95,
                    longitude: -3.2 + Double(index) * 0.0016, distance: Double(index) * 100)
                handle.write(Data((JournalCodec.encode(.milestone(milestone)) + "\n").utf8))
            }
            handle.closeFile()
            let looked = await browser.wait(timeout: 150)
            #expect(looked.status == 0, "\(looked.stderr)")
            let seen = try JSONDecoder().decode(LivePageTests.LiveSeen.self, from: Data(looked.stdout.utf8))
            #expect(!seen.reloaded, "the page reloaded")
            let statuses = seen.timeline.map(\.status)
            #expect(statuses.contains { $0.contains("reconnecting…") }, "\(statuses)")
            #expect(seen.final.milestones == [2, 1, 0], "\(seen.timeline)")
            #expect(!(statuses.last ?? "").contains("reconnecting"), "\(statuses)")
            print("reconnecting page: \(seen.timeline.map { "\($0.t) s: \($0.milestones.count) cards, \($0.status)" })")
        }
    }
}
