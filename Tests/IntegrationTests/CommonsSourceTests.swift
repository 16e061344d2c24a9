import FieldLogFakes
import FieldLogTestSupport
import Foundation
import NIOCore
import Photos
import Testing
import Thumbnailing
import WalkModel

/// CommonsSource against a fake Commons on loopback: the answer's shape, hostile metadata, files that must
/// be skipped, and the API's ways of saying "later". Each ends as a photo, a skip with its reason, or a
/// retry; never a crash, a hang, markup in a field, or a request to a host not allowed.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct CommonsSourceTests {
    let commons = FakeCommons()
    static let here = (lat: 51.5007, lon: -0.1246)
    static let userAgent = CommonsSource.userAgent(version: "9.9.9", contact: "walker@example.org")

    func source(timeout: TimeAmount = .seconds(20)) throws -> CommonsSource {
        try CommonsSource(
            endpoint: commons.endpoint, budget: RequestBudget(perHour: 360_000, burst: 100), userAgent: Self.userAgent,
            thumbnailSize: 320, timeout: timeout)
    }

    func file(
        _ id: Int, metres: Double, bearing: Double = 90, _ change: (inout FakeCommons.File) -> Void = { _ in }
    ) -> FakeCommons.File {
        let spot = Geodesy.destination(Self.here.lat, Self.here.lon, bearing: bearing, distance: metres)
        var file = FakeCommons.File(
            pageID: id, latitude: spot.lat, longitude: spot.lon, name: "Spot \(id).jpg", jpeg: [0xFF, 0xD8, 0xFF])
        change(&file)
        return file
    }

    func search(_ source: CommonsSource, radius: Double = 500) async -> Result<[PhotoCandidate], PhotoSourceError> {
        do {
            return .success(try await source.search(latitude: Self.here.lat, longitude: Self.here.lon, radius: radius))
        } catch {
            return .failure(error)
        }
    }

    @Test func theNotesAnswerDecodesToAPhotoAndASkippedPNG() async throws {
        let bytes = try [UInt8](
            Data(contentsOf: URL(fileURLWithPath: Harness.fixtures + "/commons/geosearch-note.json")))
        let source = try CommonsSource(budget: RequestBudget(), userAgent: Self.userAgent)
        let found = try await source.decodeSearch(bytes)
        #expect(found.map(\.id) == ["90001", "90002"])
        let bridge = found[0]
        #expect(bridge.title == "Old stone bridge, Millbrook")
        #expect(bridge.ownerName == "Ann Example")
        #expect(bridge.ownerID == "User:Ann_Example")
        #expect(bridge.license == "CC BY-SA 4.0")
        #expect(bridge.licenseURL == "https://creativecommons.org/licenses/by-sa/4.0")
        #expect(bridge.pageURL == "https://commons.wikimedia.org/wiki/File:Old_stone_bridge,_Millbrook.jpg")
        #expect(bridge.imageURL.hasPrefix("https://upload.wikimedia.org/wikipedia/commons/thumb/"))
        #expect(bridge.taken == "2019-05-04 10:21:33")
        #expect(bridge.skipReason == nil)
        #expect(found[1].skipReason == "image/png, not a JPEG")
    }

    @Test func searchAsksAsWikimediaWantsAndFindsFilesWithinTheRadius() async throws {
        try await commons.start()
        defer { Task { await commons.stop() } }
        commons.add(file(1, metres: 40))
        commons.add(file(2, metres: 300))
        commons.add(file(3, metres: 1500))
        let found = try await source().search(latitude: Self.here.lat, longitude: Self.here.lon, radius: 500)
        #expect(Set(found.map(\.id)) == ["1", "2"])
        #expect(found.allSatisfy { $0.skipReason == nil && $0.imageURL.contains("/thumb/") })
        let request = try #require(commons.requests.last)
        for parameter in [
            "generator=geosearch", "ggsnamespace=6", "ggsradius=500", "ggslimit=50", "prop=imageinfo%7Ccoordinates",
            "iiurlwidth=500", "iiprop=url%7Csize%7Cmime%7Cextmetadata", "maxlag=5", "formatversion=2", "coprimary=all",
        ] {
            #expect(request.contains(parameter), "\(parameter) missing: \(request)")
        }
        #expect(commons.userAgents.last == "fieldlog/9.9.9 (walker@example.org)")
        // Commons refuses a radius above 10 km: the source never asks for one.
        let wide = try await source().search(latitude: Self.here.lat, longitude: Self.here.lon, radius: 31_000)
        #expect(wide.count == 3)
        #expect(commons.requests.last?.contains("ggsradius=10000") == true)
        // Nothing within 10 km is an empty answer, not an error.
        #expect(try await source().search(latitude: -45, longitude: 170, radius: 10_000).isEmpty)
    }

    @Test func hostileOrIncompleteMetadataBecomesPlainTextOrASkip() async throws {
        try await commons.start()
        defer { Task { await commons.stop() } }
        commons.add(
            file(1, metres: 20) {
                $0.artist =
                    #"<script>alert("x")</script><b onclick="evil()">Bob</b> &amp; <img src=x onerror=alert(2)>&lt;Co&gt; &#233;"#
                $0.objectName = "<a href=\"javascript:alert(1)\">Tower</a>\u{202E}\u{0007}"
            })
        commons.add(file(2, metres: 30) { $0.mime = "image/png" })
        commons.add(file(3, metres: 40) { $0.mime = "image/svg+xml" })
        commons.add(file(4, metres: 50) { $0.mime = "image/tiff" })
        commons.add(file(5, metres: 60) { $0.license = nil })
        commons.add(file(6, metres: 70) { $0.artist = nil })
        commons.add(
            file(7, metres: 80) {
                $0.width = 300
                $0.size = 60 << 20
            })  // its own "thumbnail"
        commons.add(file(8, metres: 90) { $0.thumbURL = "https://evil.example.com/thumb/8.jpg" })
        commons.add(file(9, metres: 100) { $0.nonFree = "true" })
        commons.add(
            file(10, metres: 110) {
                $0.width = 8000
                $0.size = 90 << 20
            })  // huge, with a thumbnail
        commons.add(
            file(11, metres: 120) {
                $0.artist = nil
                $0.attributionRequired = "false"
                $0.license = "Public domain"
            })
        let source = try source()
        let found = try await source.search(latitude: Self.here.lat, longitude: Self.here.lon, radius: 500)
        let byID = Dictionary(uniqueKeysWithValues: found.map { ($0.id, $0) })
        let hostile = try #require(byID["1"])
        #expect(hostile.ownerName == "Bob & <Co> é")
        #expect(hostile.title == "Tower")
        #expect(hostile.skipReason == nil)
        for text in found.flatMap({ [$0.title, $0.ownerName, $0.ownerID, $0.license, $0.skipReason ?? ""] }) {
            #expect(
                !text.contains("script") && !text.contains("onerror") && !text.contains("<b")
                    && !text.contains("\u{7}"), "\(text)")
        }
        #expect(byID["2"]?.skipReason == "image/png, not a JPEG")
        #expect(byID["3"]?.skipReason == "image/svg+xml, not a JPEG")
        #expect(byID["4"]?.skipReason == "image/tiff, not a JPEG")
        #expect(byID["5"]?.skipReason == "no licence in its metadata")
        #expect(byID["6"]?.skipReason == "no author in its metadata")
        #expect(byID["7"]?.skipReason?.hasPrefix("no thumbnail, and the original is") == true)
        #expect(byID["8"]?.skipReason == "image on another host (evil.example.com)")
        #expect(byID["9"]?.skipReason == "not a free licence")
        #expect(byID["10"]?.skipReason == nil)
        #expect(byID["10"]?.imageURL.contains("/thumb/10/500px-") == true, "a standard width, never the original")
        #expect(byID["11"]?.skipReason == nil)
        #expect(byID["11"]?.ownerName == "unknown author")
        // An image URL to another host is never fetched, whatever a caller does.
        let before = commons.requests.count
        do {
            _ = try await source.image(of: try #require(byID["8"]), limit: 1 << 20)
            Issue.record("an image from another host was fetched")
        } catch {
            #expect((error as? PhotoSourceError)?.kind == .permanent)
        }
        #expect(commons.requests.count == before)
        #expect(try await source.image(of: try #require(byID["10"]), limit: 1 << 20) == [0xFF, 0xD8, 0xFF])
        #expect(!commons.requests.contains { $0.hasPrefix("/orig/") }, "an original was fetched")
    }

    @Test func lagAndRateLimitsAreRetriedAfterTheTimeCommonsAsksFor() async throws {
        try await commons.start()
        defer { Task { await commons.stop() } }
        commons.add(file(1, metres: 40))
        let source = try source()
        for fault in [FakeCommons.Fault.maxlag(retryAfter: 1), .rateLimited(retryAfter: 1)] {
            commons.setFault(fault, times: 1)
            guard case let .failure(error) = await search(source) else {
                Issue.record("\(fault): no error")
                continue
            }
            #expect(error.kind == .temporary, "\(fault): \(error)")
            // The next request waits for Retry-After, and then succeeds.
            let found = try await source.search(latitude: Self.here.lat, longitude: Self.here.lon, radius: 500)
            #expect(found.map(\.id) == ["1"])
            let times = commons.requestTimes.suffix(2)
            #expect(times.last!.timeIntervalSince(times.first!) >= 0.95, "\(fault): asked again too soon")
        }
    }

    @Test func brokenAnswersAreRetriedAndARefusalStopsTheAsking() async throws {
        try await commons.start()
        defer { Task { await commons.stop() } }
        commons.add(file(1, metres: 40))
        let quick = try source(timeout: .seconds(2))
        for fault in [FakeCommons.Fault.serverError, .malformedJSON, .huge, .hang, .trickle, .endless] {
            commons.setFault(fault)
            let started = Date()
            guard case let .failure(error) = await search(quick) else {
                Issue.record("\(fault): no error")
                continue
            }
            #expect(error.kind == .temporary, "\(fault): \(error)")
            #expect(Date().timeIntervalSince(started) < 10, "\(fault) took too long")
        }
        commons.setFault(.hugeErrorPage)
        if case let .failure(error) = await search(quick) {
            #expect(
                error.message.hasSuffix("HTTP 503"), "an error page too long to read still says its status: \(error)")
        } else {
            Issue.record("a 503 with a long page: no error")
        }
        commons.setFault(.forbidden)
        guard case let .failure(error) = await search(quick) else {
            Issue.record("403: no error")
            return
        }
        #expect(error.kind == .fatal, "a refused User-Agent is not retried: \(error)")
        #expect(commons.userAgents.allSatisfy { $0 == Self.userAgent })
    }

    @Test func selfSignedTLSIsRefusedAndAcceptedOnlyWithItsCA() async throws {
        try await commons.start(tls: true)
        defer { Task { await commons.stop() } }
        commons.add(file(1, metres: 40) { $0.jpeg = PhotoTests.jpeg })
        // The client keeps trying a handshake that fails until the deadline: a short one.
        guard case let .failure(refused) = await search(try source(timeout: .seconds(2))) else {
            Issue.record("a certificate that does not verify was accepted")
            return
        }
        #expect(refused.kind == .temporary)
        #expect(commons.requests.isEmpty, "a request went over TLS that did not verify")
        let trusting = try CommonsSource(
            endpoint: commons.endpoint, caFile: LoopbackHTTPServer.tlsFixtures + "/ca.pem",
            budget: RequestBudget(perHour: 360_000, burst: 100),
            userAgent: Self.userAgent)
        let found = try await trusting.search(latitude: Self.here.lat, longitude: Self.here.lon, radius: 500)
        let candidate = try #require(found.first)
        #expect(candidate.imageURL.hasPrefix("https://127.0.0.1:"))
        let jpeg = try await trusting.image(of: candidate, limit: 1 << 20)
        #expect(try Thumbnailer(size: 64).thumbnail(of: jpeg).width == 64, "a real JPEG, decoded by libjpeg")
        #expect(throws: PhotoSourceError.self) {
            _ = try CommonsSource(caFile: "/nonexistent/ca.pem", budget: RequestBudget(), userAgent: "fieldlog/1")
        }
    }

    @Test func endpointMustBeHTTPSExceptOnLoopbackAndTheUserAgentIsClean() throws {
        for endpoint in ["http://commons.wikimedia.org/w/api.php", "ftp://127.0.0.1/", "not a url"] {
            #expect(throws: PhotoSourceError.self) {
                try CommonsSource(endpoint: endpoint, budget: RequestBudget(), userAgent: "fieldlog/1")
            }
        }
        _ = try CommonsSource(budget: RequestBudget(), userAgent: "fieldlog/1")
        let agent = CommonsSource.userAgent(version: "1.2", contact: "me@example.org\r\nX-Injected: 1")
        #expect(!agent.contains("\r") && !agent.contains("\n"))
        #expect(agent.hasPrefix("fieldlog/1.2 (me@example.org"))
        #expect(CommonsSource.userAgent(version: "1.2", contact: nil).hasPrefix("fieldlog/1.2 ("))
    }
}
