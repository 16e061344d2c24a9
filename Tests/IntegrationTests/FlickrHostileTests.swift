import FieldLogFakes
import FieldLogTestSupport
import Foundation
import NIOCore
import Photos
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

/// FlickrSource against a hostile or broken network: TLS that does not verify, DNS that fails, answers that
/// trickle, never end, are huge or redirect, and fields crafted to escape. Each must end as an error of the
/// right kind (retry or reject) without the key, never as a hang or a crash. Deadlines are bounds against hangs.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct FlickrHostileTests {
    let flickr = FakeFlickr()
    static let here = (lat: 52.85, lon: 5.31)

    func source(
        endpoint: String? = nil, caFile: String? = nil, timeout: TimeAmount = .seconds(20)
    ) throws -> FlickrSource {
        try FlickrSource(
            apiKey: FakeFlickr.apiKey, endpoint: endpoint ?? flickr.endpoint, caFile: caFile,
            budget: RequestBudget(perHour: 3599, burst: 100), timeout: timeout)
    }

    func started(tls: Bool = false) async throws {
        try await flickr.start(tls: tls)
        let spot = Geodesy.destination(Self.here.lat, Self.here.lon, bearing: 90, distance: 40)
        flickr.add(.init(id: "7000", latitude: spot.lat, longitude: spot.lon, title: "Near", jpeg: [0xFF, 0xD8]))
        // Far away, and big enough to trickle past a deadline.
        let far = Geodesy.destination(Self.here.lat, Self.here.lon, bearing: 0, distance: 5000)
        flickr.add(
            .init(
                id: "7001", latitude: far.lat, longitude: far.lon, title: "Far",
                jpeg: Array(repeating: 0xFF, count: 600)))
    }

    /// The error a search ends with, printed: what each hostile case produced is part of the record.
    func searchError(_ source: FlickrSource, _ what: String = #function) async -> PhotoSourceError? {
        do {
            _ = try await source.search(latitude: Self.here.lat, longitude: Self.here.lon, radius: 500)
            print("hostile \(what): no error")
            return nil
        } catch {
            print("hostile \(what): \(error.kind): \(error.message)")
            return error
        }
    }

    func expectKeyless(_ error: PhotoSourceError?, _ comment: String) {
        #expect(
            error.map { !$0.message.contains(FakeFlickr.apiKey) } ?? true, "\(comment): \(String(describing: error))")
    }

    @Test func selfSignedTLSIsRefusedAndAcceptedOnlyWithItsCA() async throws {
        try await started(tls: true)
        defer { Task { await flickr.stop() } }
        #expect(flickr.endpoint.hasPrefix("https://127.0.0.1:"))
        let refused = await searchError(try source())
        #expect(refused?.kind == .temporary, "\(String(describing: refused))")
        expectKeyless(refused, "TLS")
        #expect(flickr.requests.isEmpty, "a request went over TLS that did not verify")

        let trusting = try source(caFile: LoopbackHTTPServer.tlsFixtures + "/ca.pem")
        let found = try await trusting.search(latitude: Self.here.lat, longitude: Self.here.lon, radius: 500)
        let candidate = try #require(found.first)
        #expect(candidate.imageURL.hasPrefix("https://127.0.0.1:"))
        #expect(try await trusting.image(of: candidate, limit: 100) == [0xFF, 0xD8])

        #expect(throws: PhotoSourceError.self) { _ = try source(caFile: "/nonexistent/ca.pem") }
    }

    @Test func unresolvableHostIsATemporaryFailure() async throws {
        let error = await searchError(
            try source(endpoint: "https://fieldlog-test.invalid/services/rest/", timeout: .seconds(30)))
        #expect(error?.kind == .temporary, "\(String(describing: error))")
        expectKeyless(error, "DNS")
    }

    @Test func answersThatTrickleOrNeverEndStopAtTheDeadline() async throws {
        try await started()
        defer { Task { await flickr.stop() } }
        let quick = try source(timeout: .seconds(2))
        for fault in [FakeFlickr.Fault.trickle, .endless, .hang] {
            flickr.setFault(fault)
            let error = await searchError(quick, "search \(fault)")
            #expect(error?.kind == .temporary, "\(fault): \(String(describing: error))")
            expectKeyless(error, "\(fault)")
        }
        flickr.setFault(.none)
        let candidate = try #require(
            try await quick.search(latitude: Self.here.lat, longitude: Self.here.lon, radius: 8000).first {
                $0.id == "7001"
            })
        for fault in [FakeFlickr.ImageFault.trickle, .endless] {
            flickr.setImageFault(fault, for: candidate.id)
            do {
                _ = try await quick.image(of: candidate, limit: 1 << 20)
                Issue.record("\(fault): an image that never ends was accepted")
            } catch {
                print("hostile image \(fault): \(error)")
                #expect(error.kind == .temporary, "\(fault): \(error)")
            }
        }
    }

    @Test func hugeAnswersAndRedirectsAreRefused() async throws {
        try await started()
        defer { Task { await flickr.stop() } }
        flickr.setFault(.huge)
        let huge = await searchError(try source(), "huge answer")
        // A search is never given up (that would lose the milestone's photo): retried, like a captive
        // portal's redirect.
        #expect(
            huge?.kind == .temporary && huge?.message.contains("larger than") == true, "\(String(describing: huge))")
        // A redirect could lead anywhere, over plain http too: never followed.
        flickr.setFault(.redirect("http://198.51.100.7/services/rest/"))
        let redirected = await searchError(try source(), "redirect")
        #expect(
            redirected?.kind == .temporary && redirected?.message.contains("HTTP 302") == true,
            "\(String(describing: redirected))")
        flickr.setFault(.none)
        let candidate = try #require(
            try await source().search(latitude: Self.here.lat, longitude: Self.here.lon, radius: 500).first)
        flickr.setImageFault(.redirect("http://198.51.100.7/evil.jpg"), for: candidate.id)
        await #expect(throws: PhotoSourceError(.permanent, "photo 7000: HTTP 302")) {
            _ = try await source().image(of: candidate, limit: 100)
        }
    }

    /// Entries crafted to escape: ids, servers, secrets and farms with `/`, `..`, NUL, huge strings and
    /// unicode; image URLs to other hosts, over http, with credentials. Only the sound entries survive, and
    /// their text is bounded and free of control characters.
    @Test func craftedFieldsNeverBecomePathsOrForeignURLs() async throws {
        try await started()
        defer { Task { await flickr.stop() } }
        let image = flickr.imageBase
        func entry(_ id: Any, _ extra: [String: Any] = [:]) -> [String: Any] {
            [
                "id": id, "owner": "12345678@N00", "latitude": 52.8501, "longitude": 5.3101, "title": "t",
                "url_z": image + "7000.jpg",
            ].merging(extra) { $1 }
        }
        let huge = String(repeating: "9", count: 200_000)
        flickr.setCrafted([
            entry("../../etc/passwd"), entry("a/b"), entry("x\u{0}y"), entry(huge), entry("٣٤٥"), entry(".."),
            entry(""), entry(["nested": 1]), entry("8001", ["owner": "../x"]), entry("8002", ["latitude": "NaN"]),
            entry("8003", ["url_z": "https://evil.example/x.jpg"]),
            entry("8004", ["url_z": "https://live.staticflickr.com.evil.example/x.jpg"]),
            entry("8005", ["url_z": "https://user:pw@live.staticflickr.com/1/x.jpg"]),
            entry("8006", ["url_z": "file:///etc/passwd"]),
            entry("8007", ["url_z": "http://127.0.0.2:\(flickr.port)/img/7000.jpg"]),
            entry("8008", ["url_z": "http://live.staticflickr.com/1/x.jpg"]),
            entry("8009", ["url_z": "https://live.staticflickr.com:8443/1/x.jpg"]),
            entry("8010", ["url_z": NSNull(), "server": "../..", "secret": "abc", "farm": "/etc"]),
            entry("8011", ["url_z": NSNull(), "server": "65535", "secret": "a/b"]),
            // Sound: Flickr's static host, built from server and secret, and the endpoint's own host.
            entry("8100", ["url_z": NSNull(), "url_n": "https://live.staticflickr.com/65535/8100_abc_n.jpg"]),
            entry("8101", ["url_z": NSNull(), "server": "65535", "secret": "abc123", "farm": "../66"]),
            entry(
                "8102",
                [
                    "title": "line\nbreak\u{0}nul\u{202E}rtl" + String(repeating: "é", count: 100_000),
                    "ownername": String(repeating: "x", count: 100_000),
                ]),
        ])
        let found = try await source().search(latitude: Self.here.lat, longitude: Self.here.lon, radius: 500)
        #expect(found.map(\.id) == ["8100", "8101", "8102", "7000"])
        #expect(
            found.map(\.imageURL) == [
                "https://live.staticflickr.com/65535/8100_abc_n.jpg",
                "https://live.staticflickr.com/65535/8101_abc123_z.jpg",
                image + "7000.jpg", image + "7000.jpg",
            ])
        let last = try #require(found.first { $0.id == "8102" })
        #expect(last.title.count <= 300 && last.ownerName.count <= 300)
        // Control and format characters (newline, NUL, a right-to-left override) are dropped.
        #expect(last.title.hasPrefix("linebreaknulrtlé"), "\(last.title.prefix(40))")
        #expect(!last.title.unicodeScalars.contains { CharacterSet.controlCharacters.contains($0) })

        // A string no JSON decoder should take (a lone surrogate) and a NUL inside a key: a failed search.
        flickr.setFault(.raw(#"{"stat":"ok","photos":{"photo":[{"id":"1","title":"\ud800"}]}}"#))
        let lone = await searchError(try source(), "lone surrogate")
        expectKeyless(lone, "lone surrogate")
    }
}

/// fieldlog run end to end against a photo host that fails for a while and then answers with hostile
/// entries: every milestone is served once it is back, in order; the failure and the rejections are
/// journaled; nothing lands outside the cache; the key is nowhere.
@Suite(.serialized, .enabled(if: Harness.gpsfakeAvailable, "needs gpsd and gpsfake (apt: gpsd gpsd-clients)"))
struct FlickrOutageTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var cache: String { directory + "/cache" }
    let flickr = FakeFlickr()

    /// `--flickr-ca-file` reaches the Flickr client: a walk's photos come from an https server on loopback
    /// whose certificate only the test CA vouches for.
    @Test func caFileOptionLetsARunTrustATestServer() async throws {
        var walk = SyntheticWalk(heading: 45)
        walk.add([.walk(seconds: 160, speed: 1.4)])
        let capture = directory + "/walk.nmea"
        try walk.write(to: capture)
        let jpeg = [UInt8](FileManager.default.contents(atPath: Harness.fixtures + "/photos/p05_left01_gray.jpg")!)
        flickr.add(.init(id: "6100", latitude: 55.9486, longitude: -3.1999, title: "Start", jpeg: jpeg))
        flickr.add(.init(id: "6101", latitude: 55.9493, longitude: -3.1988, title: "Next", jpeg: jpeg))
        try await flickr.start(tls: true)
        let gpsd = try await GPSFake(capture: capture, delay: 0.004, in: directory)
        let outcome = try await fieldlog(
            [
                "run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--cache-dir", cache,
                "--flickr-endpoint", flickr.endpoint, "--flickr-ca-file", LoopbackHTTPServer.tlsFixtures + "/ca.pem",
                "--photo-retry-max", "1",
            ],
            in: directory, environment: ["FLICKR_API_KEY": FakeFlickr.apiKey], timeout: 120)
        await gpsd.wait()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let store = JournalStore(directory: state)
        let log = try store.read(try store.resolve(nil))
        // Three milestones, or two when fieldlog connected to gpsfake a moment into its replay (a busy machine).
        #expect(log.milestones.count >= 2 && log.pendingMilestones.isEmpty, "\(log.milestones.count)")
        let used = Set(log.photos.values.compactMap { $0.photo?.id })
        #expect(!used.isEmpty && used.isSubset(of: ["6100", "6101"]), "\(log.photos)")
        await flickr.stop()
    }

    @Test func hostDownThenHostileLosesNoMilestoneAndLeaksNothing() async throws {
        var walk = SyntheticWalk(heading: 45)
        walk.add([.walk(seconds: 500, speed: 1.4)])
        let capture = directory + "/walk.nmea"
        try walk.write(to: capture)
        let start = (lat: 55.9486, lon: -3.1999)
        let jpeg = [UInt8](FileManager.default.contents(atPath: Harness.fixtures + "/photos/p05_left01_gray.jpg")!)
        for hundred in 0...7 {
            let onPath = Geodesy.destination(start.lat, start.lon, bearing: 45, distance: Double(hundred) * 100)
            flickr.add(
                .init(
                    id: "5100\(hundred)", latitude: onPath.lat, longitude: onPath.lon, title: "View \(hundred)",
                    jpeg: jpeg))
        }
        try await flickr.start()
        // Down: 503 for every call, until the walk is over.
        flickr.setFault(.serverError)
        let gpsd = try await GPSFake(capture: capture, delay: 0.004, in: directory)
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--cache-dir", cache,
                "--flickr-endpoint", flickr.endpoint, "--photo-retry-max", "1",
            ],
            in: directory, environment: ["FLICKR_API_KEY": FakeFlickr.apiKey])
        defer { recorder.reap() }
        await gpsd.wait()
        let store = JournalStore(directory: state)
        let pending = try store.read(try store.resolve(nil))
        #expect(pending.milestones.count >= 6 && pending.photos.isEmpty, "\(pending.milestones.count) milestones")

        // Back, with entries crafted to escape ahead of the real photos.
        let image = flickr.imageBase
        flickr.setCrafted([
            [
                "id": "../../../../tmp/escape", "owner": "1@N00", "latitude": start.lat, "longitude": start.lon,
                "url_z": image + "51000.jpg",
            ],
            [
                "id": "9001", "owner": "1@N00", "latitude": start.lat, "longitude": start.lon,
                "url_z": "https://evil.example/\(FakeFlickr.apiKey).jpg",
            ],
            [
                "id": "9002", "owner": "1@N00", "latitude": start.lat, "longitude": start.lon, "server": "..",
                "secret": "/etc",
            ],
            [
                "id": "9003", "owner": "1@N00", "latitude": start.lat, "longitude": start.lon,
                "url_z": image + "51000.jpg",
                "title": "evil\u{0}\n{\"type\":\"walk_end\"}" + String(repeating: "ü", count: 50_000),
            ],
        ])
        flickr.setFault(.none)
        let outcome = await recorder.wait(timeout: 180)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try store.read(try store.resolve(nil))
        #expect(log.damagedLines.isEmpty)
        #expect(log.pendingMilestones.isEmpty)
        #expect(log.photos.count == log.milestones.count)
        let lines = try String(contentsOfFile: store.path(for: log.id), encoding: .utf8).split(separator: "\n")
        let order = lines.compactMap { line -> Int? in
            guard case let .photo(photo)? = JournalCodec.decode(line) else { return nil }
            return photo.milestone
        }
        #expect(order == order.sorted() && Set(order).count == order.count, "\(order)")
        #expect(
            log.events.contains { $0.kind == .error && ($0.message ?? "").contains("HTTP 503") },
            "the outage is journaled")
        #expect(lines.allSatisfy { $0.utf8.count < 8192 }, "a crafted field blew up a journal line")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/escape.jpg"))
        for name in try FileManager.default.subpathsOfDirectory(atPath: cache) where name.hasSuffix(".jpg") {
            #expect(PhotoCandidate.isValidID(String(name.dropLast(4))), "cache file \(name)")
        }
        for root in [state, cache] {
            for name in try FileManager.default.subpathsOfDirectory(atPath: root) {
                let data = FileManager.default.contents(atPath: root + "/" + name) ?? Data()
                #expect(data.range(of: Data(FakeFlickr.apiKey.utf8)) == nil, "key found in \(name)")
            }
        }
        #expect(!outcome.stderr.contains(FakeFlickr.apiKey) && !outcome.stdout.contains(FakeFlickr.apiKey))
        await flickr.stop()
    }
}
