import FieldLogFakes
import FieldLogTestSupport
import Foundation
import Testing
import Thumbnailing
import WalkJournal
import WalkModel
import WalkSimulation

/// Milestone photos end to end: gpsfake replays a walk, fieldlog asks a fake Flickr on loopback.
@Suite(.serialized, .enabled(if: Harness.gpsfakeAvailable, "needs gpsd and gpsfake (apt: gpsd gpsd-clients)"))
struct PhotoTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var cache: String { directory + "/cache" }
    let flickr = FakeFlickr()

    /// A real photo (640 px wide) from the demo's folder, as a fake Flickr serves it.
    static let jpeg: [UInt8] = {
        let folder = Harness.repository + "/demo/photos"
        let name = try! FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".jpg") }
            .sorted()[0]
        return [UInt8](FileManager.default.contents(atPath: folder + "/" + name)!)
    }()

    /// A straight walk north-east of 1250 m, and one photo 30 m beside every hundred metres of it.
    func walkWithPhotos() throws -> (capture: String, walk: SyntheticWalk) {
        var walk = SyntheticWalk(heading: 45)
        walk.add([.walk(seconds: 900, speed: 1.4)])
        let capture = directory + "/walk.nmea"
        try walk.write(to: capture)
        let start = (lat: 55.9486, lon: -3.1999)
        for hundred in 0...12 {
            let onPath = Geodesy.destination(start.lat, start.lon, bearing: 45, distance: Double(hundred) * 100)
            let beside = Geodesy.destination(onPath.lat, onPath.lon, bearing: 135, distance: 30)
            flickr.add(
                .init(
                    id: "5100\(hundred)", latitude: beside.lat, longitude: beside.lon,
                    title: "View \(hundred)", jpeg: Self.jpeg))
        }
        return (capture, walk)
    }

    func run(_ capture: String, extra: [String] = [], key: String = FakeFlickr.apiKey) async throws -> Outcome {
        let gpsd = try await GPSFake(capture: capture, delay: 0.002, in: directory)
        let outcome = try await fieldlog(
            [
                "run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--cache-dir", cache,
                "--flickr-endpoint", flickr.endpoint, "--photo-retry-max", "2",
            ] + extra,
            in: directory, environment: ["FLICKR_API_KEY": key])
        await gpsd.wait()
        return outcome
    }

    func walkLog() throws -> WalkLog {
        let store = JournalStore(directory: state)
        return try store.read(try store.resolve(nil))
    }

    /// Every file fieldlog wrote, and what it printed, must be free of the key.
    func expectKeyNowhere(_ outcome: Outcome) throws {
        #expect(!outcome.stderr.contains(FakeFlickr.apiKey))
        #expect(!outcome.stdout.contains(FakeFlickr.apiKey))
        for root in [state, cache] {
            for name in try FileManager.default.subpathsOfDirectory(atPath: root) {
                let data = FileManager.default.contents(atPath: root + "/" + name) ?? Data()
                #expect(data.range(of: Data(FakeFlickr.apiKey.utf8)) == nil, "key found in \(name)")
            }
        }
    }

    @Test func everyMilestoneGetsADistinctPhotoDespiteBadImages() async throws {
        try await flickr.start()
        let (capture, _) = try walkWithPhotos()
        // Closer to some milestones than their good photo: images that must be skipped.
        for (index, fault) in [
            (2, FakeFlickr.ImageFault.notFound), (4, .truncated), (6, .bomb), (8, .png), (10, .html), (12, .corrupt),
        ] {
            let start = Geodesy.destination(55.9486, -3.1999, bearing: 45, distance: Double(index) * 100)
            let id = "6600\(index)"
            flickr.add(.init(id: id, latitude: start.lat, longitude: start.lon, title: "Bad \(index)", jpeg: Self.jpeg))
            flickr.setImageFault(fault, for: id)
        }
        flickr.setNumbersAsStrings(true)
        let outcome = try await run(capture, extra: ["--cache-max", "200000"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try walkLog()
        #expect(log.milestones.count >= 12)
        #expect(log.pendingMilestones.isEmpty, "pending: \(log.pendingMilestones.map(\.index))")
        let photos = log.milestones.compactMap { log.photos[$0.index]?.photo }
        #expect(photos.count == log.milestones.count)
        #expect(Set(photos.map(\.id)).count == photos.count, "a photo used twice")
        #expect(photos.allSatisfy { $0.id.hasPrefix("5100") })
        #expect(photos.first?.pageURL == "https://www.flickr.com/photos/12345678@N00/51000/")
        #expect(photos.first?.license == "CC BY 2.0")
        #expect(log.events.filter { $0.kind == .error }.count >= 6, "skipped images are journaled")
        // The cache holds real thumbnails, and stays under its limit.
        let files = try FileManager.default.contentsOfDirectory(atPath: cache).filter { $0.hasSuffix(".jpg") }
        let total = try files.reduce(0) {
            $0 + (try FileManager.default.attributesOfItem(atPath: cache + "/" + $1)[.size] as! Int)
        }
        #expect(total <= 200_000)
        let file = try #require(files.first)
        let thumbnail = try Thumbnailer(size: 320).thumbnail(
            of: [UInt8](FileManager.default.contents(atPath: cache + "/" + file)!))
        #expect(max(thumbnail.width, thumbnail.height) == 320)
        // The export tells which thumbnails the cache still holds: take one away.
        try FileManager.default.removeItem(atPath: cache + "/" + file)
        let export = try await fieldlog(
            ["export", "--state-dir", state, "--cache-dir", cache, "--format", "json", "-"], in: directory)
        #expect(export.status == 0, "\(export.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [String: Any])
        let exported = try #require(document["milestones"] as? [[String: Any]]).compactMap {
            $0["photo"] as? [String: Any]
        }
        #expect(exported.count == photos.count)
        for photo in exported {
            let key = try #require(photo["cache_key"] as? String)
            #expect(photo["cached"] as? Bool == (files.contains(key + ".jpg") && key + ".jpg" != file), "\(key)")
        }
        #expect(exported.contains { $0["cached"] as? Bool == true })
        #expect(exported.contains { $0["cached"] as? Bool == false })
        try expectKeyNowhere(outcome)
        #expect(flickr.requests.allSatisfy { !$0.contains("/img/") || !$0.contains(FakeFlickr.apiKey) })
        await flickr.stop()
    }

    /// A folder of real photos, each geotagged by exiftool 30 m beside its own hundred metres of the walk
    /// (`Tests/Fixtures/geotagged`; p10_hubble has Photoshop's APP12 "Ducky" before its EXIF), and one
    /// without any EXIF.
    @Test func everyMilestoneGetsItsOwnPhotoFromAFolderOfRealPhotos() async throws {
        var walk = SyntheticWalk(heading: 45)
        walk.add([.walk(seconds: 900, speed: 1.4)])
        let capture = directory + "/walk.nmea"
        try walk.write(to: capture)
        let fixtures = Harness.repository + "/Tests/Fixtures/geotagged"
        let names = try FileManager.default.contentsOfDirectory(atPath: fixtures).filter { $0.hasSuffix(".jpg") }
            .sorted()
        #expect(names.count == 36)
        let photos = directory + "/photos"
        try FileManager.default.createDirectory(atPath: photos, withIntermediateDirectories: true)
        for name in names {
            try FileManager.default.copyItem(atPath: fixtures + "/" + name, toPath: photos + "/" + name)
        }
        try FileManager.default.copyItem(
            atPath: Harness.repository + "/Tests/Fixtures/photos/p05_left01_gray.jpg", toPath: photos + "/left01.jpg")

        let gpsd = try await GPSFake(capture: capture, delay: 0.002, in: directory)
        let outcome = try await fieldlog(
            [
                "run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--cache-dir", cache,
                "--photos-dir", photos, "--photo-sources", "local",
            ],
            in: directory)
        await gpsd.wait()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("photos from \(photos): 36 geotagged, 1 no EXIF\n"), "\(outcome.stderr)")
        #expect(outcome.stderr.contains("photo left01.jpg not placed: no EXIF"))
        let log = try walkLog()
        #expect(log.milestones.count >= 12)
        for milestone in log.milestones {
            let own = names[Int((milestone.distance / 100).rounded())].dropLast(4)
            #expect(log.photos[milestone.index]?.photo?.id == String(own), "milestone \(milestone.index)")
        }
    }

    @Test func photosAreBackFilledInOrderWhenTheNetworkReturns() async throws {
        let (capture, _) = try walkWithPhotos()
        let port = Int(Harness.freePort())
        let gpsd = try await GPSFake(capture: capture, delay: 0.004, in: directory)
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--cache-dir", cache,
                "--flickr-endpoint", "http://127.0.0.1:\(port)/services/rest/", "--photo-retry-max", "1",
            ],
            in: directory, environment: ["FLICKR_API_KEY": FakeFlickr.apiKey])
        // Offline for the first half of the walk.
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline, ((try? walkLog())?.milestones.count ?? 0) < 6 {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try walkLog().photos.isEmpty)
        try await flickr.start(port: port)
        let outcome = await recorder.wait(timeout: 180)
        await gpsd.wait()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try walkLog()
        #expect(log.pendingMilestones.isEmpty)
        #expect(log.photos.count == log.milestones.count)
        // Served in milestone order: the journal's photo records come in index order.
        let lines = try String(contentsOfFile: JournalStore(directory: state).path(for: log.id), encoding: .utf8)
        let order = lines.split(separator: "\n").compactMap { line -> Int? in
            guard case let .photo(photo)? = JournalCodec.decode(line) else { return nil }
            return photo.milestone
        }
        #expect(order == order.sorted())
        try expectKeyNowhere(outcome)
        await flickr.stop()
    }

    @Test func milestonesLeftPendingAreServedAfterARestart() async throws {
        let (capture, _) = try walkWithPhotos()
        // First session: no photo source at all, so every milestone stays pending.
        let gpsd = try await GPSFake(capture: capture, delay: 0.002, in: directory)
        let first = try await fieldlog(["run", "--once", "--gpsd", gpsd.address, "--state-dir", state], in: directory)
        await gpsd.wait()
        #expect(first.status == 0, "\(first.stderr)")
        let pending = try walkLog().pendingMilestones.count
        #expect(pending >= 12)
        // Second session, with Flickr: a few more fixes of the same walk, and the backlog is served in order.
        try await flickr.start()
        var more = SyntheticWalk(start: Timestamp.parse("2024-05-18T08:16:00Z")!, latitude: 55.9563, longitude: -3.1862)
        more.add([.walk(seconds: 20, speed: 1.4)])
        let tail = directory + "/more.nmea"
        try more.write(to: tail)
        let outcome = try await run(tail)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try walkLog()
        #expect(try JournalStore(directory: state).walkIDs().count == 1, "the walk was resumed")
        #expect(log.pendingMilestones.isEmpty)
        // The backlog and whatever milestone the new fixes reached.
        #expect(log.photos.count == log.milestones.count)
        #expect(log.photos.count >= pending)
        try expectKeyNowhere(outcome)
        await flickr.stop()
    }

    @Test func anEmptyKeyFileMeansNoPhotoSource() async throws {
        // systemd's unit gives the key credential an empty default until a key is installed.
        let credentials = directory + "/credentials"
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: credentials + "/flickr-api-key", contents: Data("\n".utf8)))
        let gpsd = try await GPSFake(capture: Harness.capture("bu303-moving"), in: directory)
        let outcome = try await fieldlog(
            [
                "run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--cache-dir", cache,
                "--api-key-file", "flickr-api-key",
            ],
            in: directory, environment: ["CREDENTIALS_DIRECTORY": credentials])
        await gpsd.wait()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("no photo source"))
    }

    /// As the systemd unit runs it: settings from a configuration file, the key from the credential.
    @Test func configFileAndServiceCredentialDriveARun() async throws {
        try await flickr.start()
        let (capture, walk) = try walkWithPhotos()
        let credentials = directory + "/credentials"
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        #expect(
            FileManager.default.createFile(
                atPath: credentials + "/flickr-api-key", contents: Data((FakeFlickr.apiKey + "\n").utf8)))
        let gpsd = try await GPSFake(capture: capture, delay: 0.002, in: directory)
        let config = directory + "/fieldlog.conf"
        try """
        # as an administrator would write it
        gpsd: \(gpsd.address)
        state-dir: \(state)
        cache-dir: \(cache)
        flickr-endpoint: \(flickr.endpoint)
        photo-retry-max: 2
        every: 200
        """.write(toFile: config, atomically: true, encoding: .utf8)
        // The command line wins over the file; an empty $FLICKR_API_KEY is no key.
        let outcome = try await fieldlog(
            ["run", "--once", "--every", "250"], in: directory,
            environment: ["FIELDLOG_CONFIG": config, "CREDENTIALS_DIRECTORY": credentials, "FLICKR_API_KEY": ""])
        await gpsd.wait()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try walkLog()
        #expect(log.points.last?.fix.time == walk.time)
        #expect(log.every == 250)
        #expect(log.milestones.count == Int(log.distance / 250) + 1)
        #expect(log.photos.count == log.milestones.count, "the credential's key reached Flickr")
        try expectKeyNowhere(outcome)
        let walks = try await fieldlog(["walks"], in: directory, environment: ["FIELDLOG_CONFIG": config])
        #expect(walks.status == 0, "\(walks.stderr)")
        #expect(walks.stdout.contains(log.id), "walks reads the state-dir of the file")
        await flickr.stop()
    }

    @Test func invalidKeyStopsAskingAndSaysSoButTheWalkGoesOn() async throws {
        try await flickr.start()
        let (capture, walk) = try walkWithPhotos()
        let outcome = try await run(capture, key: "not-the-key")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let log = try walkLog()
        #expect(log.points.last?.fix.time == walk.time, "the walk is recorded to its end")
        #expect(log.photos.isEmpty)
        #expect(log.events.contains { $0.kind == .photoSourceUnavailable && ($0.message ?? "").contains("code 100") })
        #expect(outcome.stderr.contains("API key"))
        #expect(flickr.requests.count == 1, "one refusal is enough")
        await flickr.stop()
    }
}
