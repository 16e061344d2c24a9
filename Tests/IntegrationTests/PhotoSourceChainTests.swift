import FieldLogFakes
import FieldLogTestSupport
import Foundation
import Logging
import NIOCore
import Photos
import Recording
import Testing
import Thumbnailing
import WalkJournal
import WalkModel

/// Sources in order of preference: the parse and the defaults of `--photo-sources`, and a photo service
/// with Flickr then Commons (both fakes on loopback, real thumbnails by libjpeg) falling through when
/// Flickr's key is rejected or Flickr finds nothing.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PhotoSourceChainTests {
    let directory = Harness.temporaryDirectory()
    let flickr = FakeFlickr()
    let commons = FakeCommons()
    static let origin = (lat: 52.37, lon: 4.89)

    @Test func theListIsParsedStrictlyAndTheDefaultsFollowWhatIsConfigured() {
        #expect(PhotoSourceChain.parse("flickr,commons").names == ["flickr", "commons"])
        #expect(PhotoSourceChain.parse(" Commons , local ").names == ["commons", "local"])
        #expect(PhotoSourceChain.parse("none").names == [])
        #expect(PhotoSourceChain.parse("flickr,none").problem != nil)
        #expect(PhotoSourceChain.parse("flickr,flickr").problem != nil)
        #expect(PhotoSourceChain.parse("wikipedia").problem?.contains("\"wikipedia\"") == true)
        #expect(PhotoSourceChain.parse("flickr,,commons").problem != nil)
        #expect(PhotoSourceChain.defaultNames(hasPhotosDirectory: true, hasFlickrKey: true) == ["local"])
        #expect(PhotoSourceChain.defaultNames(hasPhotosDirectory: false, hasFlickrKey: true) == ["flickr", "commons"])
        #expect(PhotoSourceChain.defaultNames(hasPhotosDirectory: false, hasFlickrKey: false) == ["commons"])
        let commons = PhotoSourceChain.Member(
            name: "commons", source: NothingSource(), maxRadius: CommonsSource.maxRadius)
        #expect(commons.radii == [100, 500, 2_000, 8_000, 10_000])
        #expect(PhotoSourceChain.Member(name: "flickr", source: NothingSource()).radii == PhotoService.radii)
    }

    /// A closed walk of `milestones` milestones waiting for photos, Commons files beside each of the first
    /// `withPhotos`, and a service over `sources`, run until it is idle.
    func serve(milestones: Int, withPhotos: Int, flickrKey: String = FakeFlickr.apiKey) async throws -> WalkLog {
        try await flickr.start()
        try await commons.start()
        let store = JournalStore(directory: directory + "/state")
        try store.prepare()
        let id = try PendingWalks.write(start: 1_780_000_000, origin: Self.origin, milestones: milestones, in: store)
        for index in 0..<withPhotos {
            let spot = Geodesy.destination(Self.origin.lat, Self.origin.lon, bearing: 90, distance: Double(index) * 100)
            let beside = Geodesy.destination(spot.lat, spot.lon, bearing: 0, distance: 25)
            commons.add(
                .init(
                    pageID: 500 + index, latitude: beside.lat, longitude: beside.lon, name: "View \(index).jpg",
                    taken: "2020-0\(1 + index % 9)-01 12:00:00", jpeg: PhotoTests.jpeg))
        }
        let recorder = try WalkRecorder(store: store, limits: WalkLimits(), logger: quietLogger)
        let sources: [PhotoSourceChain.Member] = [
            .init(
                name: "flickr",
                source: try FlickrSource(
                    apiKey: flickrKey, endpoint: flickr.endpoint, budget: RequestBudget(perHour: 360_000, burst: 100))),
            .init(
                name: "commons",
                source: try CommonsSource(
                    endpoint: commons.endpoint, budget: RequestBudget(perHour: 360_000, burst: 100),
                    userAgent: CommonsSource.userAgent(version: "test", contact: nil)),
                maxRadius: CommonsSource.maxRadius),
        ]
        let service = PhotoService(
            sources: sources, journal: recorder, store: store,
            thumbnails: try ThumbnailCache(directory: directory + "/cache"), thumbnailer: Thumbnailer(),
            logger: quietLogger, maxBackoff: 2)
        service.finishWhenIdle()
        try await service.run()
        await flickr.stop()
        await commons.stop()
        return try store.read(id)
    }

    @Test func aRejectedKeyFallsThroughToCommonsWithFullAttribution() async throws {
        let log = try await serve(milestones: 4, withPhotos: 4, flickrKey: "not-the-key")
        #expect(log.pendingMilestones.isEmpty)
        let records = log.milestones.compactMap { log.photos[$0.index] }
        #expect(records.count == 4)
        #expect(records.allSatisfy { $0.source == "commons" })
        for record in records {
            let photo = try #require(record.photo)
            #expect(photo.ownerName == "Ann Example")
            #expect(photo.license == "CC BY-SA 4.0")
            #expect(photo.licenseURL == "https://creativecommons.org/licenses/by-sa/4.0")
            #expect(photo.pageURL?.hasPrefix("https://commons.wikimedia.org/wiki/File:View_") == true)
            #expect(record.why?.contains("candidate") == true, "\(String(describing: record.why))")
        }
        #expect(log.events.contains { $0.kind == .photoSourceUnavailable && ($0.message ?? "").hasPrefix("flickr: ") })
        #expect(flickr.requests.count == 1, "a rejected key is not asked again")
        #expect(!log.events.contains { ($0.message ?? "").contains(FakeFlickr.apiKey) })
    }

    @Test func flickrFindingNothingFallsThroughAndNothingAnywhereIsSaidOnce() async throws {
        let log = try await serve(milestones: 3, withPhotos: 2)
        #expect(log.pendingMilestones.isEmpty)
        #expect(log.photos[0]?.source == "commons")
        #expect(log.photos[1]?.source == "commons")
        // Milestone 2 has nothing but files already used.
        let last = try #require(log.photos[2])
        #expect(last.outcome == .noneNearby(radius: CommonsSource.maxRadius))
        #expect(last.source == "commons")
        #expect(last.why == "none within 31 km on flickr; none within 10 km on commons")
        // Flickr was asked at every radius for every milestone before Commons was.
        #expect(flickr.requests.count == 3 * PhotoService.radii.count)
    }

    /// Flickr's own hints at work: a nearer city-level photo and a nearer indoor one lose to a street-level
    /// outdoor one; of a burst by one owner the walk shows one shot, and another owner's photo serves the next
    /// milestone although the burst is nearer to it.
    @Test func flickrPicksStreetLevelOutdoorPhotosAndOneShotOfABurst() async throws {
        try await flickr.start()
        defer { Task { await flickr.stop() } }
        let store = JournalStore(directory: directory + "/state")
        try store.prepare()
        let id = try PendingWalks.write(start: 1_780_000_000, origin: Self.origin, milestones: 3, in: store)
        // `metres` from milestone `index`, towards `bearing`.
        let spot = { (index: Int, bearing: Double, metres: Double) in
            let milestone = Geodesy.destination(
                Self.origin.lat, Self.origin.lon, bearing: 90, distance: Double(index) * 100)
            return Geodesy.destination(milestone.lat, milestone.lon, bearing: bearing, distance: metres)
        }
        let city = spot(0, 0, 5), inside = spot(0, 0, 10), street = spot(0, 0, 60)
        flickr.add(
            .init(
                id: "71", latitude: city.lat, longitude: city.lon, title: "Amsterdam", owner: "1@N01", accuracy: 11,
                jpeg: PhotoTests.jpeg))
        flickr.add(
            .init(
                id: "72", latitude: inside.lat, longitude: inside.lon, title: "Kitchen", owner: "2@N01", context: 1,
                jpeg: PhotoTests.jpeg))
        flickr.add(
            .init(
                id: "73", latitude: street.lat, longitude: street.lon, title: "Canal", owner: "3@N01", context: 2,
                jpeg: PhotoTests.jpeg))
        // Five shots two seconds apart, halfway between milestones 1 and 2.
        let burst = spot(1, 90, 50)
        for shot in 0..<5 {
            flickr.add(
                .init(
                    id: "80\(shot)", latitude: burst.lat, longitude: burst.lon, title: "Bridge", owner: "4@N01",
                    taken: "2024-05-18 10:00:0\(shot * 2)", jpeg: PhotoTests.jpeg))
        }
        let other = spot(2, 0, 60)
        flickr.add(
            .init(
                id: "90", latitude: other.lat, longitude: other.lon, title: "Houseboat", owner: "5@N01",
                jpeg: PhotoTests.jpeg))
        let service = PhotoService(
            sources: [
                .init(
                    name: "flickr",
                    source: try FlickrSource(
                        apiKey: FakeFlickr.apiKey, endpoint: flickr.endpoint,
                        budget: RequestBudget(perHour: 360_000, burst: 100)))
            ],
            journal: try WalkRecorder(store: store, limits: WalkLimits(), logger: quietLogger), store: store,
            thumbnails: try ThumbnailCache(directory: directory + "/cache"), thumbnailer: Thumbnailer(),
            logger: quietLogger, maxBackoff: 2)
        service.finishWhenIdle()
        try await service.run()
        let log = try store.read(id)
        #expect(log.photos[0]?.photo?.id == "73")
        #expect(
            log.photos[0]?.why?.hasPrefix("nearest street-level of 3 candidates, 3 owners") == true,
            "\(String(describing: log.photos[0]?.why))")
        #expect(log.photos[1]?.photo?.id == "800")
        #expect(log.photos[2]?.photo?.id == "90", "not a second shot of the burst")
    }
}

/// A source with nothing anywhere.
private struct NothingSource: PhotoSource {
    func search(latitude: Double, longitude: Double, radius: Double) async throws(PhotoSourceError) -> [PhotoCandidate]
    { [] }
    func image(of candidate: PhotoCandidate, limit: Int) async throws(PhotoSourceError) -> [UInt8] { [] }
}
