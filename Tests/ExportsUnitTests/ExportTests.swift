import Exports
import Foundation
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

// Walks built in code, through the same records a journal holds.

private let start = Timestamp.parse("2026-11-18T09:46:40Z")!

private func point(
    _ seconds: Double, _ latitude: Double, _ longitude: Double, segment: Int = 0, distance: Double = 0,
    altitude: Double? = nil, error: Double? = nil, speed: Double? = nil, course: Double? = nil
) -> JournalRecord {
    let fix = Fix(
        time: start + seconds, latitude: latitude, longitude: longitude, altitude: altitude,
        horizontalError: error, speed: speed, track: course)
    return .point(TrackPoint(fix: fix, segment: segment, distance: distance))
}

private func milestone(
    _ index: Int, _ seconds: Double, _ latitude: Double, _ longitude: Double, distance: Double
)
    -> JournalRecord
{
    .milestone(
        Milestone(index: index, time: start + seconds, latitude: latitude, longitude: longitude, distance: distance))
}

private func walk(_ records: [JournalRecord], id: String = "20261118T094640Z", every: Double = 1000) -> WalkLog {
    var log = WalkLog(id: id)
    log.apply(.walkStart(id: id, time: start, every: every))
    records.forEach { log.apply($0) }
    return log
}

/// Two segments, altitude on some fixes, a milestone at the start and one at 1000 m, closed.
private let closedWalk = walk([
    point(0, 47.3769, 8.5417, distance: 0, altitude: 408.5, error: 3.2, speed: 1.42, course: 359.5),
    milestone(0, 0, 47.3769, 8.5417, distance: 0),
    point(1, 47.3779, 8.5417, distance: 111.19, altitude: 409),
    .segment(SegmentBreak(index: 1, time: start + 100, gap: 99)),
    point(100, 47.3869, 8.5417, segment: 1, distance: 1000.25),
    milestone(1, 100, 47.3869, 8.5417, distance: 1000.25),
    point(101, 47.3879, 8.5417, segment: 1, distance: 1111.44),
    .walkEnd(time: start + 102.5, distance: 1111.44),
])

private func text(_ log: WalkLog, _ format: ExportFormat) -> String {
    String(decoding: try! WalkExport.render(log, as: format), as: UTF8.self)
}

private func object(_ log: WalkLog, _ format: ExportFormat) throws -> [String: Any] {
    let data = Data(try WalkExport.render(log, as: format))
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

private func decimal(_ value: Double, digits: Int) -> String {
    var buffer = ByteWriter(capacity: 16)
    buffer.appendDecimal(value, digits: digits)
    return String(decoding: buffer.bytes, as: UTF8.self)
}

// MARK: - Shared

@Test func formatComesFromPathExtension() {
    #expect(ExportFormat(path: "walk.json") == .json)
    #expect(ExportFormat(path: "/home/me/walk.2026.GPX") == .gpx)
    #expect(ExportFormat(path: "../walk.geojson") == .geojson)
    #expect(ExportFormat(path: "walk.kml") == nil)
    #expect(ExportFormat(path: "walk") == nil)
    #expect(ExportFormat(path: "walk.") == nil)
    #expect(ExportFormat(path: ".json") == nil)
    #expect(ExportFormat(path: "exports.json/walk") == nil)
}

@Test(arguments: [
    (0.00001, 7, "0.00001"), (-0.00001, 7, "-0.00001"), (0.0000001, 7, "0.0000001"),
    (12.5, 2, "12.5"), (3.0, 2, "3"), (0.1 + 0.2, 2, "0.3"), (-0.00000001, 7, "0"), (-0.0, 2, "0"),
    (179.9999999, 7, "179.9999999"), (-180.0, 7, "-180"), (1.005, 1, "1"), (86_400_000.75, 2, "86400000.75"),
    (1e300, 2, "100000000000"),
])
func decimalsArePlainWithoutExponent(value: Double, digits: Int, expected: String) {
    #expect(decimal(value, digits: digits) == expected)
}

// MARK: - journal.json

@Test func jsonHasTheSchemaKeysAndValues() throws {
    let json = try object(closedWalk, .json)
    let walk = try #require(json["walk"] as? [String: Any])
    #expect(walk["id"] as? String == "20261118T094640Z")
    #expect(walk["started"] as? String == "2026-11-18T09:46:40Z")
    #expect(walk["ended"] as? String == "2026-11-18T09:48:22.5Z")
    #expect(walk["open"] as? Bool == false)
    #expect(walk["distance_m"] as? Double == 1111.44)
    #expect(walk["every_m"] as? Double == 1000)

    let track = try #require(json["track"] as? [[String: Any]])
    #expect(track.count == 4)
    #expect(Set(track[0].keys) == ["time", "lat", "lon", "alt", "eph", "speed", "course", "segment"])
    #expect(track[0]["time"] as? String == "2026-11-18T09:46:40Z")
    #expect(track[0]["lat"] as? Double == 47.3769)
    #expect(track[0]["lon"] as? Double == 8.5417)
    #expect(track[0]["alt"] as? Double == 408.5)
    #expect(track[0]["eph"] as? Double == 3.2)
    #expect(track[0]["speed"] as? Double == 1.42)
    #expect(track[0]["course"] as? Double == 359.5)
    #expect(track[0]["segment"] as? Int == 0)
    #expect(Set(track[2].keys) == ["time", "lat", "lon", "segment"])
    #expect(track[2]["segment"] as? Int == 1)

    let milestones = try #require(json["milestones"] as? [[String: Any]])
    #expect(milestones.count == 2)
    #expect(
        Set(milestones[1].keys) == ["index", "time", "lat", "lon", "distance_m", "starred", "photo", "photo_status"])
    #expect(milestones[1]["photo_status"] as? String == "pending")
    #expect(milestones[1]["index"] as? Int == 1)
    #expect(milestones[1]["time"] as? String == "2026-11-18T09:48:20Z")
    #expect(milestones[1]["lat"] as? Double == 47.3869)
    #expect(milestones[1]["distance_m"] as? Double == 1000.25)
    #expect(milestones[1]["photo"] is NSNull)
}

@Test func jsonOpenWalkEndsAtItsLastFix() throws {
    let log = walk([point(0, 1, 2), point(5, 1.0001, 2, distance: 11.1)])
    let walk = try #require(try object(log, .json)["walk"] as? [String: Any])
    #expect(walk["open"] as? Bool == true)
    #expect(walk["ended"] as? String == "2026-11-18T09:46:45Z")
    #expect(walk["distance_m"] as? Double == 11.1)
}

@Test func jsonEscapesStrings() throws {
    let id = "a\"b\\c\n\u{1}é"
    let walk = try #require(try object(walk([], id: id), .json)["walk"] as? [String: Any])
    #expect(walk["id"] as? String == id)
}

@Test func jsonWritesSmallNumbersPlain() {
    let json = text(walk([point(0, -0.00001, 0.00001)]), .json)
    #expect(json.contains("\"lat\":-0.00001,\"lon\":0.00001,"))
    #expect(!json.contains("e-"))
}

// MARK: - GPX

private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

/// xmllint's verdict on `gpx` against the official schema: nil when valid, else its complaint.
private func schemaErrors(_ gpx: [UInt8]) throws -> String? {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("fieldlog-\(UUID().uuidString).gpx")
    try Data(gpx).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try #require(xmllint))
    process.arguments = [
        "--noout", "--nonet", "--schema", fixtures.appendingPathComponent("gpx-1.1.xsd").path, file.path,
    ]
    let errors = Pipe()
    process.standardError = errors
    try process.run()
    let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return process.terminationStatus == 0 ? nil : message
}

private let xmllint = ["/usr/bin/xmllint", "/bin/xmllint"].first { FileManager.default.isExecutableFile(atPath: $0) }

@Test(.enabled(if: xmllint != nil, "needs xmllint (apt: libxml2-utils)"))
func gpxValidatesAgainstTheOfficialSchema() throws {
    #expect(try schemaErrors(try WalkExport.render(closedWalk, as: .gpx)) == nil)
    #expect(try schemaErrors(try WalkExport.render(photographed, as: .gpx)) == nil, "milestone photos linked")
    #expect(try schemaErrors(try WalkExport.render(starredWalk, as: .gpx)) == nil, "favourites marked")
    // Text to escape, a longitude of exactly 180° (GPX wants [-180, 180)), tiny numbers, no milestones.
    let awkward = walk(
        [point(0, 0.00001, 180, altitude: -0.5), point(1, -0.00001, -179.9999999, distance: 1)], id: "<a&b>'\"")
    #expect(try schemaErrors(try WalkExport.render(awkward, as: .gpx)) == nil)
    #expect(try schemaErrors(try WalkExport.render(walk([]), as: .gpx)) == nil)
}

@Test func gpxWritesSmallNumbersPlain() {
    let gpx = text(walk([point(0, 51.5, 0.00001, altitude: 0.04)]), .gpx)
    #expect(gpx.contains("<trkpt lat=\"51.5\" lon=\"0.00001\"><ele>0.04</ele>"))
}

@Test func gpxHasOneTrksegPerSegmentAndMilestonesAsWaypoints() {
    let gpx = text(closedWalk, .gpx)
    #expect(gpx.components(separatedBy: "<trkseg>").count - 1 == 2)
    #expect(gpx.components(separatedBy: "<trk>").count - 1 == 1)
    #expect(gpx.components(separatedBy: "<trkpt ").count - 1 == 4)
    #expect(gpx.contains("<name>Milestone 1</name><desc>1000.25 m walked</desc></wpt>"))
    #expect(gpx.contains("<time>2026-11-18T09:46:40Z</time>\n</metadata>"))
    // Waypoints come before the track, as the schema requires.
    #expect(gpx.range(of: "<wpt ")!.lowerBound < gpx.range(of: "<trk>")!.lowerBound)
}

// MARK: - GeoJSON

private func trackGeometry(_ log: WalkLog) throws -> [String: Any] {
    let features = try #require(try object(log, .geojson)["features"] as? [[String: Any]])
    return try #require(features.first?["geometry"] as? [String: Any])
}

@Test func geoJSONIsAFeatureCollectionWithLonLatPositions() throws {
    let collection = try object(closedWalk, .geojson)
    #expect(collection["type"] as? String == "FeatureCollection")
    let features = try #require(collection["features"] as? [[String: Any]])
    #expect(features.count == 3)

    let properties = try #require(features[0]["properties"] as? [String: Any])
    #expect(properties["id"] as? String == "20261118T094640Z")
    #expect(properties["distance_m"] as? Double == 1111.44)
    #expect(properties["every_m"] as? Double == 1000)
    #expect(properties["started"] as? String == "2026-11-18T09:46:40Z")
    #expect(properties["ended"] as? String == "2026-11-18T09:48:22.5Z")
    let track = try #require(features[0]["geometry"] as? [String: Any])
    #expect(track["type"] as? String == "MultiLineString")
    let parts = try #require(track["coordinates"] as? [[[Double]]])
    #expect(parts == [[[8.5417, 47.3769], [8.5417, 47.3779]], [[8.5417, 47.3869], [8.5417, 47.3879]]])

    let milestone = try #require(features[2]["geometry"] as? [String: Any])
    #expect(milestone["type"] as? String == "Point")
    #expect(milestone["coordinates"] as? [Double] == [8.5417, 47.3869])
    let milestoneProperties = try #require(features[2]["properties"] as? [String: Any])
    #expect(milestoneProperties["index"] as? Int == 1)
    #expect(milestoneProperties["time"] as? String == "2026-11-18T09:48:20Z")
    #expect(milestoneProperties["distance_m"] as? Double == 1000.25)
    #expect(milestoneProperties["photo"] is NSNull)
}

@Test func geoJSONOneSegmentIsALineString() throws {
    let geometry = try trackGeometry(walk([point(0, 10, 20), point(1, 10.5, 20.5, distance: 70_000)]))
    #expect(geometry["type"] as? String == "LineString")
    #expect(geometry["coordinates"] as? [[Double]] == [[20, 10], [20.5, 10.5]])
}

@Test func geoJSONSplitsAtTheAntimeridian() throws {
    let eastward = walk([
        point(0, 65.9, 179.999), point(1, 66, 179.9995, distance: 22), point(2, 66.001, -179.9995, distance: 66),
        point(3, 66.002, -179.999, distance: 88),
    ])
    let geometry = try trackGeometry(eastward)
    #expect(geometry["type"] as? String == "MultiLineString")
    let parts = try #require(geometry["coordinates"] as? [[[Double]]])
    #expect(parts.count == 2)
    #expect(parts[0].first == [179.999, 65.9])
    #expect(parts[0].last == [180, 66.0005])
    #expect(parts[1].first == [-180, 66.0005])
    #expect(parts[1].last == [-179.999, 66.002])
    #expect(parts.joined().allSatisfy { (-180...180).contains($0[0]) && (-90...90).contains($0[1]) })

    let westward = try trackGeometry(walk([point(0, -17, -179.9999), point(1, -17.0003, 179.9997, distance: 44)]))
    let westParts = try #require(westward["coordinates"] as? [[[Double]]])
    #expect(westParts == [[[-179.9999, -17], [-180, -17.000075]], [[180, -17.000075], [179.9997, -17.0003]]])
}

@Test func geoJSONDropsSinglePointLines() throws {
    // Segment 1 is a single fix: no LineString can hold it, so the track is segment 0 alone.
    let log = walk([
        point(0, 1, 1), point(1, 1, 1.0001, distance: 11), point(200, 1, 1.01, segment: 1, distance: 1100),
    ])
    let geometry = try trackGeometry(log)
    #expect(geometry["type"] as? String == "LineString")
    #expect(geometry["coordinates"] as? [[Double]] == [[1, 1], [1.0001, 1]])
    // A walk with no line at all is a feature without a location.
    let features = try #require(try object(walk([point(0, 1, 1)]), .geojson)["features"] as? [[String: Any]])
    #expect(features[0]["geometry"] is NSNull)
}

// MARK: - Size

/// A day at 1 Hz renders whole in every format (speed is measured in the benchmarks, not here).
@Test func aDayLongWalkExportsWhole() throws {
    let records = (0..<86_400).map { (second: Int) -> JournalRecord in
        let step = Double(second)
        return point(
            step + 0.2, 47 + step * 1e-5, 8 + step * 1e-5, segment: second / 3600, distance: step * 1.4,
            altitude: 400.25, error: 4.5)
    }
    let log = walk(records)
    #expect(text(log, .gpx).components(separatedBy: "<trkpt ").count - 1 == 86_400)
    #expect(text(log, .gpx).components(separatedBy: "<trkseg>").count - 1 == 24)
    let track = try #require(try object(log, .json)["track"] as? [[String: Any]])
    #expect(track.count == 86_400)
    let features = try #require(try object(log, .geojson)["features"] as? [[String: Any]])
    let geometry = try #require(features.first?["geometry"] as? [String: Any])
    #expect((geometry["coordinates"] as? [[[Double]]])?.count == 24)
}

// MARK: - Photos

private let photographed: WalkLog = {
    var log = closedWalk
    let candidate = PhotoCandidate(
        id: "53012345678", title: "Lake & <hills>", ownerName: "Ann Example", ownerID: "12345678@N00",
        license: "CC BY 2.0", pageURL: "https://www.flickr.com/photos/12345678@N00/53012345678/",
        latitude: 47.377, longitude: 8.5418, imageURL: "https://live.staticflickr.com/65535/53012345678_abc_z.jpg")
    log.apply(
        .photo(
            MilestonePhoto(
                milestone: 0, source: "flickr",
                outcome: .found(candidate, distance: 12.5, cacheKey: "flickr-53012345678"))))
    log.apply(.photo(MilestonePhoto(milestone: 1, source: "flickr", outcome: .noneNearby(radius: 31_000))))
    return log
}()

@Test func jsonCarriesPhotoAttributionAndWhetherItIsCached() throws {
    for cached in [true, false] {
        let data = Data(try WalkExport.render(photographed, as: .json, isCached: { _ in cached }))
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let milestones = try #require(root["milestones"] as? [[String: Any]])
        let photo = try #require(milestones[0]["photo"] as? [String: Any])
        #expect(photo["title"] as? String == "Lake & <hills>")
        #expect(photo["owner"] as? String == "Ann Example")
        #expect(photo["license"] as? String == "CC BY 2.0")
        #expect(photo["page"] as? String == "https://www.flickr.com/photos/12345678@N00/53012345678/")
        #expect(photo["distance_m"] as? Double == 12.5)
        #expect(photo["cached"] as? Bool == cached)
        #expect(milestones[0]["photo_status"] as? String == "found")
        #expect(milestones[1]["photo"] is NSNull)
        #expect(milestones[1]["photo_status"] as? String == "none_nearby")
    }
}

/// (gpxValidatesAgainstTheOfficialSchema validates it.)
@Test func gpxLinksMilestonePhotosToTheirPage() throws {
    let gpx = text(photographed, .gpx)
    #expect(
        gpx.contains(
            "<link href=\"https://www.flickr.com/photos/12345678@N00/53012345678/\"><text>Lake &amp; &lt;hills&gt;</text></link>"
        ))
}

@Test func geoJSONMilestonesCarryThePhoto() throws {
    let root = try object(photographed, .geojson)
    let features = try #require(root["features"] as? [[String: Any]])
    let first = try #require(features.first { ($0["properties"] as? [String: Any])?["index"] as? Int == 0 })
    let photo = try #require((first["properties"] as? [String: Any])?["photo"] as? [String: Any])
    #expect(photo["id"] as? String == "53012345678")
}

// MARK: - Favourites and the HTML page

private let starredWalk: WalkLog = {
    var log = photographed
    log.apply(.star(milestone: 1, starred: true, wall: 1_779_443_256))
    log.apply(.star(milestone: 0, starred: true, wall: 1_779_443_257))
    log.apply(.star(milestone: 0, starred: false, wall: 1_779_443_258))
    return log
}()

@Test func favouritesAreMarkedInEveryExport() throws {
    #expect(starredWalk.starred == [1], "the last mark for a milestone counts")
    let milestones = try #require(try object(starredWalk, .json)["milestones"] as? [[String: Any]])
    #expect(milestones.map { $0["starred"] as? Bool } == [false, true])
    let features = try #require(try object(starredWalk, .geojson)["features"] as? [[String: Any]])
    let starred = features.compactMap { ($0["properties"] as? [String: Any])?["starred"] as? Bool }
    #expect(starred == [false, true])
    let gpx = text(starredWalk, .gpx)
    #expect(gpx.components(separatedBy: "<sym>Favorite</sym><type>favourite</type>").count - 1 == 1)
    let html = text(starredWalk, .html)
    #expect(html.contains("<article class=\"card starred\" data-milestone=\"1\""))
    #expect(html.contains("<article class=\"card\" data-milestone=\"0\""))
}

@Test func htmlIsOnePageThatLoadsNothingAndEscapesEverything() throws {
    var log = closedWalk
    let hostile = PhotoCandidate(
        id: "1", title: "<script>alert(\"x\")</script>", ownerName: "O'Brien & \"Co\"", ownerID: "1@N00",
        license: "CC BY 2.0", pageURL: "javascript:alert(1)", latitude: 47.377, longitude: 8.5418,
        imageURL: "https://live.staticflickr.com/1/1_a_z.jpg")
    log.apply(
        .photo(
            MilestonePhoto(milestone: 0, source: "flickr", outcome: .found(hostile, distance: 3, cacheKey: "flickr-1")))
    )
    let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xD9]
    let html = String(
        decoding: try WalkExport.render(log, as: .html, isCached: { _ in true }, thumbnail: { _ in jpeg }),
        as: UTF8.self)
    #expect(html.hasPrefix("<!DOCTYPE html>"))
    #expect(html.contains("Content-Security-Policy\" content=\"default-src 'none'; img-src data:"))
    #expect(!html.lowercased().contains("<script"))
    #expect(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"))
    #expect(html.contains("O&apos;Brien &amp; &quot;Co&quot;"))
    #expect(!html.contains("javascript:"), "only https photo pages are linked")
    #expect(html.contains("src=\"data:image/jpeg;base64,/9j/2Q==\""))
    // Nothing fetched from anywhere: the only URLs are the SVG namespace and links to photo pages.
    #expect(!html.contains("src=\"http") && !html.contains("url(") && !html.contains("@import"))
    #expect(html.components(separatedBy: "<svg").count - 1 == 1)
    #expect(html.components(separatedBy: "data-milestone=").count - 1 == log.milestones.count)
}

@Test func htmlSaysWhyAMilestoneHasNoPhoto() {
    var log = photographed
    log.apply(.milestone(Milestone(index: 2, time: start + 200, latitude: 47.39, longitude: 8.5417, distance: 2000)))
    // 0: found but evicted from the cache; 1: none nearby; 2: pending.
    let html = text(log, .html)
    #expect(html.contains("Thumbnail no longer in the cache."))
    #expect(html.contains("No photo: none taken within 31 km."))
    #expect(html.contains("No photo yet: still being looked for."))
    #expect(
        html.contains(
            "<a href=\"https://www.flickr.com/photos/12345678@N00/53012345678/\" rel=\"noopener noreferrer\">photo page</a>"
        ))
    // Newest first.
    let order = ["data-milestone=\"2\"", "data-milestone=\"1\"", "data-milestone=\"0\""].map {
        html.range(of: $0)!.lowerBound
    }
    #expect(order == order.sorted())
}

@Test func htmlTrackOfADayIsSimplifiedToWhatAScreenShows() throws {
    // A day of fixes wandering a few metres around a 120 km path: 86,400 points, a few thousand drawn.
    var random = SplitMix(seed: 3)
    let records = (0..<86_400).map { (second: Int) -> JournalRecord in
        let step = Double(second)
        return point(
            step, 47 + step * 1e-5 + random.next(in: -2e-5..<2e-5), 8 + sin(step / 2000) * 0.05,
            segment: second / 3600, distance: step * 1.4)
    }
    // A milestone every 100 s, one of them a favourite: markers that would overlap are left out, never it.
    let milestones = stride(from: 0, to: 86_400, by: 100).enumerated().map { index, second in
        JournalRecord.milestone(
            Milestone(
                index: index, time: start + Double(second), latitude: 47 + Double(second) * 1e-5,
                longitude: 8 + sin(Double(second) / 2000) * 0.05, distance: Double(second) * 1.4))
    }
    var log = walk(records + milestones)
    log.apply(.star(milestone: 500, starred: true, wall: 1_779_443_306))
    let html = text(log, .html)
    let svg = try #require(html.range(of: "<svg").map { html[$0.lowerBound...] }?.prefix { $0 != "\u{0}" })
    let markers = svg.components(separatedBy: "<g class=\"ms").count - 1
    #expect(markers > 10 && markers < 200, "\(markers) of 864 milestone markers drawn")
    #expect(svg.contains("<g class=\"ms starred\"><title>Milestone 500</title>"))
    #expect(html.components(separatedBy: "data-milestone=").count - 1 == 864, "every milestone has its card")
    let vertices = svg.components(separatedBy: "L").count + svg.components(separatedBy: "M").count
    #expect(vertices < 10_000, "\(vertices) vertices drawn")
    #expect(svg.components(separatedBy: "class=\"seg\"").count - 1 == 24)
    #expect(svg.components(separatedBy: "class=\"gap\"").count - 1 == 23)
}

@Test func thePageFileHasEverySlotOnceInPageOrder() {
    // Page/page.html is edited by hand: a slot lost, doubled or misspelt would show on every page.
    let slots = PageTemplate.page.parts.compactMap { part -> PageTemplate.Slot? in
        if case let .slot(slot) = part { slot } else { nil }
    }
    #expect(slots == PageTemplate.Slot.allCases)
    let html = text(closedWalk, .html)
    #expect(html.contains("<style>\n" + String(decoding: PageTemplate.style, as: UTF8.self) + "</style>"))
    #expect(!html.contains("{{") && !html.contains("}}"))
}
