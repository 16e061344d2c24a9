import FieldLogFakes
import Foundation
import NIOCore
import Photos
import Testing
import WalkModel

/// FlickrSource against a fake Flickr on loopback, fault by fault.
@Suite(.serialized)
struct FlickrSourceTests {
    let flickr = FakeFlickr()
    static let here = (lat: 52.85, lon: 5.31)

    /// A generous deadline: the test machine may be busy; only the hanging server should meet it.
    func source(key: String = FakeFlickr.apiKey, timeout: TimeAmount = .seconds(20)) throws -> FlickrSource {
        try FlickrSource(
            apiKey: key, endpoint: flickr.endpoint, budget: RequestBudget(perHour: 3599, burst: 100),
            timeout: timeout)
    }

    func started() async throws -> FakeFlickr {
        try await flickr.start()
        for (index, metres) in [40.0, 300, 1500, 9000].enumerated() {
            let spot = Geodesy.destination(Self.here.lat, Self.here.lon, bearing: 90, distance: metres)
            flickr.add(
                .init(
                    id: "700\(index)", latitude: spot.lat, longitude: spot.lon, title: "At \(Int(metres)) m",
                    jpeg: [0xFF, 0xD8]))
        }
        return flickr
    }

    func searchError(_ fault: FakeFlickr.Fault) async throws -> PhotoSourceError? {
        flickr.setFault(fault)
        do {
            let timeout: TimeAmount = fault == .hang ? .seconds(1) : .seconds(20)
            _ = try await source(timeout: timeout).search(
                latitude: Self.here.lat, longitude: Self.here.lon, radius: 500)
            return nil
        } catch {
            return error as? PhotoSourceError
        }
    }

    @Test func searchFindsPhotosWithinTheRadiusWithAttribution() async throws {
        _ = try await started()
        defer { Task { await flickr.stop() } }
        for numbersAsStrings in [false, true] {
            flickr.setNumbersAsStrings(numbersAsStrings)
            let found = try await source().search(latitude: Self.here.lat, longitude: Self.here.lon, radius: 2000)
            #expect(found.map(\.id) == ["7000", "7001", "7002"])
            let first = try #require(found.first)
            #expect(first.license == "CC BY 2.0")
            #expect(first.ownerName == "Test Walker")
            #expect(first.pageURL == "https://www.flickr.com/photos/12345678@N00/7000/")
            #expect(first.imageURL.hasSuffix("/img/7000.jpg"))
            #expect(abs(Geodesy.distance(Self.here.lat, Self.here.lon, first.latitude, first.longitude) - 40) < 1)
        }
        let request = try #require(flickr.requests.last)
        for parameter in [
            "has_geo=1", "media=photos", "content_types=0", "safe_search=1", "min_taken_date=",
            "radius=2.000000", "format=json", "nojsoncallback=1", "url_z",
        ] {
            #expect(request.contains(parameter), "\(parameter) missing")
        }
        #expect(!request.contains("sort="), "radial queries come nearest first only without sort")
        // An empty answer has "total": "".
        #expect(try await source().search(latitude: -45, longitude: 170, radius: 100).isEmpty)
    }

    @Test func failuresAreClassifiedAndNeverShowTheKey() async throws {
        _ = try await started()
        defer { Task { await flickr.stop() } }
        let expected: [(FakeFlickr.Fault, PhotoSourceError.Kind)] = [
            (.serverError, .temporary), (.rateLimited, .temporary), (.hang, .temporary),
            (.malformedJSON, .temporary), (.statFail(105), .temporary), (.statFail(10), .temporary),
            (.statFail(100), .fatal), (.statFail(112), .fatal),
        ]
        for (fault, kind) in expected {
            let error = try await searchError(fault)
            #expect(error?.kind == kind, "\(fault): \(String(describing: error))")
            let message = error?.message ?? ""
            #expect(message.contains(FakeFlickr.apiKey) == false)
        }
        flickr.setFault(.none)
        let badKey = try await { () async throws -> PhotoSourceError? in
            do {
                _ = try await source(key: "wrong").search(
                    latitude: Self.here.lat, longitude: Self.here.lon, radius: 500)
                return nil
            } catch { return error as? PhotoSourceError }
        }()
        #expect(badKey?.kind == .fatal)
        #expect(badKey?.message.contains("API key") == true)
        // The key is found by its scalars, also where a combining mark or "\r\n" joins it to a neighbour.
        let redacting = try source()
        for text in [
            FakeFlickr.apiKey + "\u{301}", "\r" + FakeFlickr.apiKey + "\n", "x" + FakeFlickr.apiKey + FakeFlickr.apiKey,
        ] {
            let redacted = redacting.redact(text)
            #expect(Array(redacted.utf8).firstRange(of: Array(FakeFlickr.apiKey.utf8)) == nil, "\(redacted)")
            #expect(Array(redacted.utf8).firstRange(of: Array("<redacted>".utf8)) != nil, "\(redacted)")
        }
    }

    @Test func imagesFailPermanentlyOrTemporarilyAsTheyShould() async throws {
        _ = try await started()
        defer { Task { await flickr.stop() } }
        let candidate = try #require(
            try await source().search(latitude: Self.here.lat, longitude: Self.here.lon, radius: 100).first)
        #expect(try await source().image(of: candidate, limit: 100) == [0xFF, 0xD8])
        flickr.setImageFault(.notFound, for: candidate.id)
        await #expect(throws: PhotoSourceError(.permanent, "photo 7000: HTTP 404")) {
            _ = try await source().image(of: candidate, limit: 100)
        }
        flickr.setImageFault(.bomb, for: candidate.id)
        do {
            _ = try await source().image(of: candidate, limit: 10)
            Issue.record("a body over the limit was accepted")
        } catch {
            #expect((error as? PhotoSourceError)?.kind == .permanent)
        }
    }

    /// The benchmarks' mode (`fieldlog-fakes flickr`): a photo 20 m north-east of any point, ten minutes after
    /// the last one found, its image the one JPEG given.
    @Test func everySearchFindsAPhotoNearItsPointWhenAsked() async throws {
        try await flickr.start()
        defer { Task { await flickr.stop() } }
        flickr.placePhotoNearEverySearch(jpeg: [0xFF, 0xD8, 0xFF, 0xD9])
        var found: [PhotoCandidate] = []
        for (lat, lon) in [(52.85, 5.31), (-33.9, 151.2)] {
            let answer = try await source().search(latitude: lat, longitude: lon, radius: 100)
            #expect(answer.count == 1)
            let photo = try #require(answer.first)
            #expect(abs(Geodesy.distance(lat, lon, photo.latitude, photo.longitude) - 20) < 5)
            #expect(photo.latitude > lat && photo.longitude > lon)
            #expect(photo.title == String(format: "Near %.4f, %.4f", lat, lon))
            #expect(try await source().image(of: photo, limit: 100) == [0xFF, 0xD8, 0xFF, 0xD9])
            found.append(photo)
        }
        #expect(found.map(\.id) == ["5285000531000", "339000015120000"])
        #expect(found.map(\.taken) == ["2024-05-18 09:10:00", "2024-05-18 09:20:00"])
        await #expect(throws: PhotoSourceError.self) {
            _ = try await source(key: "wrong").search(latitude: 52.85, longitude: 5.31, radius: 100)
        }
    }

    @Test func endpointMustBeHTTPSExceptOnLoopback() throws {
        for endpoint in ["http://api.flickr.com/services/rest/", "ftp://127.0.0.1/", "not a url"] {
            #expect(throws: PhotoSourceError.self) {
                try FlickrSource(apiKey: "k", endpoint: endpoint, budget: RequestBudget())
            }
        }
        _ = try FlickrSource(apiKey: "k", endpoint: "https://api.flickr.com/services/rest/", budget: RequestBudget())
        _ = try FlickrSource(apiKey: "k", endpoint: "http://127.0.0.1:8080/rest/", budget: RequestBudget())
    }
}
