import FieldLogTestSupport
import Foundation
import Photos
import Testing
import Thumbnailing
import WalkModel

// The --photos-dir source on demo/photos (real photos, geotagged along the bundled walk) and on copies of
// them whose EXIF the tests write themselves.

private let demoPhotos = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("demo/photos").path

private let demoIDs: Set<String> = [
    "Bridge_by_Sander_Klootwijk", "seeding_by_Clements_Engelhardt", "Dragonfly_by_Bolly",
    "sunset_by_Aitzol_Berasategi", "Kleiber_by_Lukas_Baubkus", "friends_by_Aitzol_Berasategi",
    "picosdeeuropa_by_Aitzol_Berasategi", "aitzgorri_by_Aitzol_Berasategi",
]

/// The straight line of the bundled walk (bundg_zeus_9): start, and the point `metres` along it.
private let walkStart = (lat: 52.85014, lon: 5.3135817)
private func alongWalk(_ metres: Double) -> (lat: Double, lon: Double) {
    Geodesy.destination(walkStart.lat, walkStart.lon, bearing: 233.8, distance: metres)
}

private func kind(_ body: () async throws(PhotoSourceError) -> Void) async -> PhotoSourceError.Kind? {
    do {
        try await body()
        return nil
    } catch {
        return error.kind
    }
}

private func demoBytes(_ name: String) throws -> [UInt8] {
    try Array(Data(contentsOf: URL(fileURLWithPath: demoPhotos + "/" + name + ".jpg")))
}

// MARK: - The demo folder

@Test func indexesTheDemoPhotos() async throws {
    let source = try LocalPhotoSource(directory: demoPhotos)
    let scan = await source.lastScan
    #expect(scan.photos == 8)
    #expect(scan.skipped.isEmpty && scan.duplicates == 0)
    #expect(Set(await source.candidates.map(\.id)) == demoIDs)
    var total = 0
    for id in demoIDs {
        total += try demoBytes(id).count
    }
    #expect(total < 600_000)
}

@Test func readsPositionAndAttribution() async throws {
    let source = try LocalPhotoSource(directory: demoPhotos + "/")
    let candidates = await source.candidates
    let bridge = try #require(candidates.first { $0.id == "Bridge_by_Sander_Klootwijk" })
    #expect(abs(bridge.latitude - 52.850430) < 1e-6)
    #expect(abs(bridge.longitude - 5.313230) < 1e-6)
    #expect(bridge.title == "Bridge")
    #expect(bridge.ownerName == "Sander Klootwijk")
    #expect(bridge.ownerID == "Sander Klootwijk")
    #expect(bridge.license == "CC BY-SA 4.0")
    #expect(bridge.pageURL == nil)
    #expect(bridge.taken == "2018-08-20 09:47:40")
    #expect(bridge.imageURL == source.directory + "/Bridge_by_Sander_Klootwijk.jpg")
    #expect(source.directory.hasPrefix("/") && !source.directory.hasSuffix("/"))

    // A Windows XPTitle (UTF-16) when there is no ImageDescription.
    let picos = try #require(candidates.first { $0.id == "picosdeeuropa_by_Aitzol_Berasategi" })
    #expect(picos.title == "Picos de Europa")
    #expect(picos.license == "CC BY 4.0")
    let seeding = try #require(candidates.first { $0.id == "seeding_by_Clements_Engelhardt" })
    #expect(seeding.license == "CC0 1.0")
    // No DateTimeOriginal.
    let aitzgorri = try #require(candidates.first { $0.id == "aitzgorri_by_Aitzol_Berasategi" })
    #expect(aitzgorri.taken == nil)
    #expect(abs(aitzgorri.latitude - 52.849931) < 1e-6 && abs(aitzgorri.longitude - 5.305535) < 1e-6)
}

@Test(arguments: [
    (0.0, 50.0, ["Bridge_by_Sander_Klootwijk"]),
    (100, 50, ["seeding_by_Clements_Engelhardt"]),
    (200, 50, []),
    (200, 100, ["sunset_by_Aitzol_Berasategi", "Kleiber_by_Lukas_Baubkus"]),
    (300, 50, ["Kleiber_by_Lukas_Baubkus"]),
    (400, 50, ["picosdeeuropa_by_Aitzol_Berasategi"]),
])
func searchFindsThePhotosNearEachMilestoneNearestFirst(along: Double, radius: Double, expected: [String]) async throws {
    let source = try LocalPhotoSource(directory: demoPhotos)
    let point = alongWalk(along)
    let found = try await source.search(latitude: point.lat, longitude: point.lon, radius: radius)
    #expect(found.map(\.id) == expected)
}

@Test func searchAgreesWithDistancesEverywhere() async throws {
    let source = try LocalPhotoSource(directory: demoPhotos)
    let all = await source.candidates
    for along in stride(from: -100.0, through: 600, by: 25) {
        for radius in [0.0, 30, 120, 250, 1_000] {
            let point = alongWalk(along)
            let found = try await source.search(latitude: point.lat, longitude: point.lon, radius: radius)
            let distances = found.map { Geodesy.distance(point.lat, point.lon, $0.latitude, $0.longitude) }
            #expect(distances == distances.sorted())
            let expected = all.filter { Geodesy.distance(point.lat, point.lon, $0.latitude, $0.longitude) <= radius }
            #expect(Set(found.map(\.id)) == Set(expected.map(\.id)))
        }
    }
    #expect(try await source.search(latitude: .nan, longitude: 5.3, radius: 1e6).isEmpty)
    #expect(try await source.search(latitude: 52.85, longitude: 5.31, radius: -1).isEmpty)
    #expect(try await source.search(latitude: 52.85, longitude: 5.31, radius: 1e6).count == 8)
}

@Test func imageReadsTheFileWithinTheLimit() async throws {
    let source = try LocalPhotoSource(directory: demoPhotos)
    let bridge = try #require(await source.candidates.first { $0.id == "Bridge_by_Sander_Klootwijk" })
    let expected = try demoBytes("Bridge_by_Sander_Klootwijk")
    #expect(try await source.image(of: bridge, limit: expected.count) == expected)
    #expect(
        await kind { () async throws(PhotoSourceError) in
            _ = try await source.image(of: bridge, limit: expected.count - 1)
        } == .permanent)

    // Only indexed photos are read, whatever path a candidate carries.
    var stranger = bridge
    stranger.id = "passwd"
    stranger.imageURL = "/etc/passwd"
    #expect(
        await kind { () async throws(PhotoSourceError) in _ = try await source.image(of: stranger, limit: 1 << 20) }
            == .permanent)
}

@Test func aPhotoRemovedAfterIndexingIsAPermanentFailure() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try FileManager.default.copyItem(
        atPath: demoPhotos + "/Kleiber_by_Lukas_Baubkus.jpg", toPath: directory + "/Kleiber_by_Lukas_Baubkus.jpg")
    let source = try LocalPhotoSource(directory: directory)
    let kleiber = try #require(await source.candidates.first)
    try FileManager.default.removeItem(atPath: directory + "/Kleiber_by_Lukas_Baubkus.jpg")
    #expect(
        await kind { () async throws(PhotoSourceError) in _ = try await source.image(of: kleiber, limit: 1 << 20) }
            == .permanent)

    // Rescanning forgets it, and finds what was added.
    try FileManager.default.copyItem(
        atPath: demoPhotos + "/Dragonfly_by_Bolly.jpg", toPath: directory + "/dragonfly.jpg")
    let scan = try await source.rescan()
    #expect(scan.photos == 1)
    #expect(await source.candidates.map(\.id) == ["dragonfly"])
}

@Test func aMissingFolderIsFatal() async {
    let error = await kind { () async throws(PhotoSourceError) in
        _ = try LocalPhotoSource(directory: "/nonexistent/fieldlog-photos")
    }
    #expect(error == .fatal)
}

// MARK: - EXIF written by the tests

/// A TIFF/EXIF value: tag, type (2 ASCII, 1 BYTE, 4 LONG, 5 RATIONAL), count, and its bytes.
private struct Tag {
    var tag: UInt16
    var type: UInt16
    var count: UInt32
    var value: [UInt8]

    static func ascii(_ tag: UInt16, _ text: [UInt8]) -> Tag {
        Tag(tag: tag, type: 2, count: UInt32(text.count + 1), value: text + [0])
    }

    static func ascii(_ tag: UInt16, _ text: String) -> Tag { ascii(tag, Array(text.utf8)) }

    /// Degrees as degrees, minutes and seconds (seconds in millionths).
    static func degrees(_ tag: UInt16, _ value: Double) -> Tag {
        let whole = value.rounded(.towardZero)
        let minutes = ((value - whole) * 60).rounded(.towardZero)
        let seconds = ((value - whole) * 3600 - minutes * 60) * 1_000_000
        var bytes: [UInt8] = []
        for (numerator, denominator) in [(whole, 1.0), (minutes, 1.0), (seconds.rounded(), 1_000_000.0)] {
            bytes += le32(UInt32(numerator)) + le32(UInt32(denominator))
        }
        return Tag(tag: tag, type: 5, count: 3, value: bytes)
    }
}

private func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
private func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }

/// One IFD at `offset` with its out-of-line values right after it.
private func ifd(_ tags: [Tag], at offset: Int) -> [UInt8] {
    let tags = tags.sorted { $0.tag < $1.tag }
    var data: [UInt8] = []
    var table = le16(UInt16(tags.count))
    let dataStart = offset + 2 + 12 * tags.count + 4
    for tag in tags {
        table += le16(tag.tag) + le16(tag.type) + le32(tag.count)
        if tag.value.count <= 4 {
            table += tag.value + [UInt8](repeating: 0, count: 4 - tag.value.count)
        } else {
            table += le32(UInt32(dataStart + data.count))
            data += tag.value + (tag.value.count % 2 == 1 ? [0] : [])
        }
    }
    return table + le32(0) + data
}

private func ifdSize(_ tags: [Tag]) -> Int {
    ifd(tags, at: 0).count
}

/// An APPn segment.
private func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
    [0xFF, marker, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
}

/// A JPEG: a demo photo's image data behind an APP1 with exactly these tags (none without tags), and
/// `before`/`after` it.
private func jpeg(
    ifd0: [Tag] = [], exif: [Tag] = [], gps: [Tag] = [], before: [UInt8] = [], after: [UInt8] = []
) throws -> [UInt8] {
    var ifd0 = ifd0
    let pointerTags = (exif.isEmpty ? 0 : 1) + (gps.isEmpty ? 0 : 1)
    let ifd0Size = ifdSize(ifd0) + 12 * pointerTags
    let exifOffset = 8 + ifd0Size
    let gpsOffset = exifOffset + (exif.isEmpty ? 0 : ifdSize(exif))
    if !exif.isEmpty { ifd0.append(Tag(tag: 0x8769, type: 4, count: 1, value: le32(UInt32(exifOffset)))) }
    if !gps.isEmpty { ifd0.append(Tag(tag: 0x8825, type: 4, count: 1, value: le32(UInt32(gpsOffset)))) }
    var tiff: [UInt8] = Array("II".utf8) + le16(42) + le32(8)
    tiff += ifd(ifd0, at: 8)
    #expect(tiff.count == exifOffset)
    if !exif.isEmpty { tiff += ifd(exif, at: exifOffset) }
    if !gps.isEmpty { tiff += ifd(gps, at: gpsOffset) }
    let app1 = segment(0xE1, Array("Exif".utf8) + [0, 0] + tiff)
    return [0xFF, 0xD8] + before + (ifd0.isEmpty && exif.isEmpty && gps.isEmpty ? [] : app1) + after
        + (try imageData())
}

/// The Kleiber photo after SOI, without its APPn segments (its own EXIF).
private func imageData() throws -> [UInt8] {
    let bytes = try demoBytes("Kleiber_by_Lukas_Baubkus")
    var at = 2
    while bytes[at] == 0xFF, (0xE0...0xEF).contains(bytes[at + 1]) {
        at += 2 + Int(bytes[at + 2]) << 8 + Int(bytes[at + 3])
    }
    return Array(bytes[at...])
}

private func gps(_ lat: Double, _ latRef: String, _ lon: Double, _ lonRef: String) -> [Tag] {
    [.ascii(1, latRef), .degrees(2, lat), .ascii(3, lonRef), .degrees(4, lon)]
}

@Test func writtenExifCoversHemispheresDefaultsAndJunk() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    func write(_ name: String, _ bytes: [UInt8]) {
        #expect(FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(bytes)))
    }
    // South and west: negative coordinates; an editor-only Copyright; a title with a newline.
    write(
        "south-west.jpg",
        try jpeg(
            ifd0: [
                .ascii(0x010E, "Cape\nPoint"), .ascii(0x013B, "Ann Example"),
                .ascii(0x8298, Array(" ".utf8) + [0] + Array("CC BY 4.0".utf8)),
            ],
            exif: [.ascii(0x9003, "2024:12:31 23:59:58")],
            gps: gps(34.357, "S", 18.4975, "W")))
    // A position and nothing else: title from the file name, owner unknown, all rights reserved.
    write("bare_position.jpg", try jpeg(gps: gps(52.8, "N", 5.3, "E")))
    // A camera's default description, blank date.
    write(
        "IMG 0001.JPG",
        try jpeg(
            ifd0: [.ascii(0x010E, "OLYMPUS DIGITAL CAMERA")], exif: [.ascii(0x9003, "    :  :     :  :  ")],
            gps: gps(1, "N", 2, "E")))
    // Skipped, each for its reason.
    write("no-exif.jpg", try jpeg())
    write("text.jpg", Array("not a photo at all".utf8))
    write("no-gps.jpg", try jpeg(ifd0: [.ascii(0x013B, "Ann Example")]))
    write("no-ref.jpg", try jpeg(gps: [.degrees(2, 52.8), .ascii(3, "E"), .degrees(4, 5.3)]))
    write("void.jpg", try jpeg(gps: gps(52.8, "N", 5.3, "E") + [.ascii(9, "V")]))
    write("null-island.jpg", try jpeg(gps: gps(0, "N", 0, "E")))
    write("beyond-the-pole.jpg", try jpeg(gps: gps(95, "N", 5.3, "E")))
    write("west-of-west.jpg", try jpeg(gps: gps(52.8, "N", 181, "W")))
    var zero = Tag.degrees(2, 52.8)
    zero.value[4..<8] = [0, 0, 0, 0]
    write("zero-denominator.jpg", try jpeg(gps: [.ascii(1, "N"), zero, .ascii(3, "E"), .degrees(4, 5.3)]))
    write("truncated.jpg", Array(try jpeg(gps: gps(52.8, "N", 5.3, "E")).prefix(40)))
    var notTIFF = try jpeg(gps: gps(52.8, "N", 5.3, "E"))
    notTIFF[12...13] = [0x58, 0x58]  // "XX" where the TIFF header says its byte order
    write("not-tiff.jpg", notTIFF)
    // Not read: other extensions, hidden files, folders.
    write("notes.txt", Array("x".utf8))
    write(".hidden.jpg", try jpeg(gps: gps(52.8, "N", 5.3, "E")))
    try FileManager.default.createDirectory(atPath: directory + "/folder.jpg", withIntermediateDirectories: false)
    #expect(mkfifo(directory + "/pipe.jpg", 0o644) == 0)  // would block a plain open

    let source = try LocalPhotoSource(directory: directory)
    let scan = await source.lastScan
    #expect(scan.photos == 3)
    #expect(
        scan.skipped == [
            "no-exif.jpg": .noEXIF, "text.jpg": .noEXIF, "no-gps.jpg": .noGPS, "no-ref.jpg": .noGPS,
            "void.jpg": .gpsVoid, "null-island.jpg": .gpsVoid, "beyond-the-pole.jpg": .outOfRange,
            "west-of-west.jpg": .outOfRange, "zero-denominator.jpg": .outOfRange, "truncated.jpg": .exifUnreadable,
            "not-tiff.jpg": .exifUnreadable,
        ])
    #expect(
        scan.summary
            == "3 geotagged, 2 no EXIF, 2 EXIF unreadable, 2 no GPS, 2 GPS void, 3 out of range")
    let byTitle = Dictionary(uniqueKeysWithValues: await source.candidates.map { ($0.title, $0) })

    let cape = try #require(byTitle["Cape Point"])
    #expect(cape.id == "south-west")
    #expect(abs(cape.latitude + 34.357) < 1e-7 && abs(cape.longitude + 18.4975) < 1e-7)
    #expect(cape.ownerName == "Ann Example" && cape.ownerID == "Ann Example")
    #expect(cape.license == "CC BY 4.0")
    #expect(cape.taken == "2024-12-31 23:59:58")

    let bare = try #require(byTitle["bare_position"])
    #expect(bare.id == "bare_position")
    #expect(bare.ownerName == LocalPhotoSource.unknownOwner && bare.ownerID == "local")
    #expect(bare.license == "All rights reserved")
    #expect(bare.taken == nil)

    let camera = try #require(byTitle["IMG 0001"])
    #expect(camera.id.hasPrefix("IMG_0001-") && PhotoCandidate.isValidID(camera.id))
    #expect(camera.taken == nil)
    #expect(try await source.image(of: camera, limit: 1 << 20).count > 1000)
}

@Test func idsComeFromFileNamesAndAreAlwaysValid() {
    #expect(LocalPhotoSource.id(forFileName: "Bridge_by_Sander_Klootwijk.jpg") == "Bridge_by_Sander_Klootwijk")
    let names = [
        "IMG 1.JPG", "IMG_1.jpg", "IMG_1.jpeg", "IMG_1.JPG", "Ärger am Ufer.jpg", "....jpg", ".jpg",
        String(repeating: "long", count: 30) + ".jpg", String(repeating: "ü", count: 70) + ".jpeg", "a.b.c.jpg",
    ]
    let ids = names.map(LocalPhotoSource.id(forFileName:))
    #expect(ids.allSatisfy(PhotoCandidate.isValidID))
    #expect(Set(ids).count == names.count)
    #expect(ids[1] == "IMG_1")
    #expect(LocalPhotoSource.id(forFileName: "IMG 1.JPG") == ids[0])  // stable
}

@Test(arguments: [
    ("2018:08:20 09:47:40", "2018-08-20 09:47:40"), ("    :  :     :  :  ", nil), ("0000:00:00 00:00:00", nil),
    ("2018:08:20", nil), ("2018-08-20 09:47:40", nil), ("", nil),
])
func takenDatesAreWrittenAsFlickrDoes(exif: String, expected: String?) {
    #expect(LocalPhotoSource.taken(exif) == expected)
}

// MARK: - Real photos geotagged by exiftool

private let geotagged = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/geotagged").path

/// Where make-fixtures put photo `k`: 30 m south-east of the point k*100 m along the synthetic walk.
private func geotaggedPosition(_ k: Int) -> (lat: Double, lon: Double) {
    let along = Geodesy.destination(55.9486, -3.1999, bearing: 45, distance: Double(k) * 100)
    return Geodesy.destination(along.lat, along.lon, bearing: 135, distance: 30)
}

@Test func everyRealPhotoExiftoolGeotaggedIsPlaced() async throws {
    let source = try LocalPhotoSource(directory: geotagged)
    let scan = await source.lastScan
    #expect(scan.photos == 36, "\(scan.summary): \(scan.skipped)")
    #expect(scan.skipped.isEmpty)
    for (k, candidate) in await source.candidates.enumerated() {
        let expected = geotaggedPosition(k)
        let off = Geodesy.distance(candidate.latitude, candidate.longitude, expected.lat, expected.lon)
        #expect(off < 1, "\(candidate.id)")
    }
}

@Test func aDuckySegmentBeforeTheExifDoesNotHideThePosition() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let hubble = try Array(Data(contentsOf: URL(fileURLWithPath: geotagged + "/p10_hubble.jpg")))
    // The fixture's layout, as Photoshop's Save for Web writes it: SOI, APP0 JFIF, APP12 Ducky, APP1 Exif.
    #expect(hubble[20...21] == [0xFF, 0xEC] && Array(hubble[24...28]) == Array("Ducky".utf8))
    #expect(hubble[39...40] == [0xFF, 0xE1] && Array(hubble[43...46]) == Array("Exif".utf8))
    #expect(FileManager.default.createFile(atPath: directory + "/p10_hubble.jpg", contents: Data(hubble)))
    // The same in front of an EXIF the tests write, with a comment and an APP15 besides.
    let ducky = segment(0xEC, Array("Ducky".utf8) + [0, 1, 0, 4, 0, 0, 0, 85, 0, 0])
    let written = try jpeg(
        gps: gps(52.8, "N", 5.3, "E"), before: ducky + segment(0xFE, Array("made by hand".utf8)) + segment(0xEF, [1]))
    #expect(FileManager.default.createFile(atPath: directory + "/written.jpg", contents: Data(written)))

    let source = try LocalPhotoSource(directory: directory)
    #expect(await source.lastScan.photos == 2)
    let placed = Dictionary(uniqueKeysWithValues: await source.candidates.map { ($0.id, $0) })
    let hubblePlace = try #require(placed["p10_hubble"])
    let expected = geotaggedPosition(9)
    #expect(Geodesy.distance(hubblePlace.latitude, hubblePlace.longitude, expected.lat, expected.lon) < 1)
    let writtenPlace = try #require(placed["written"])
    #expect(abs(writtenPlace.latitude - 52.8) < 1e-7 && abs(writtenPlace.longitude - 5.3) < 1e-7)
}

/// An APP1 XMP packet with these properties of the EXIF schema, bound to `prefix`; each as an attribute of
/// rdf:Description, or with `elements` as an element.
private func xmp(_ properties: [(String, String)], prefix: String = "exif", elements: Bool = false) -> [UInt8] {
    let values = properties.map { name, value in
        elements ? "<\(prefix):\(name)>\(value)</\(prefix):\(name)>" : " \(prefix):\(name)=\"\(value)\""
    }.joined(separator: elements ? "\n" : "")
    let namespace = "http://ns.adobe.com/exif/1.0/"
    let description =
        elements
        ? "<rdf:Description rdf:about=\"\" xmlns:\(prefix)='\(namespace)'>\n\(values)\n</rdf:Description>"
        : "<rdf:Description rdf:about=\"\" xmlns:\(prefix)=\"\(namespace)\"\(values)/>"
    let packet = """
        <?xpacket begin='\u{FEFF}' id='W5M0MpCehiHzreSzNTczkc9d'?>
        <x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>
        \(description)
        </rdf:RDF></x:xmpmeta>
        <?xpacket end='w'?>
        """
    return segment(0xE1, Array("http://ns.adobe.com/xap/1.0/".utf8) + [0] + Array(packet.utf8))
}

@Test func anXMPOnlyPhotoIsPlaced() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    func write(_ name: String, _ bytes: [UInt8]) {
        #expect(FileManager.default.createFile(atPath: directory + "/" + name, contents: Data(bytes)))
    }
    // A real photo exiftool geotagged in XMP only (make-fixtures).
    try FileManager.default.copyItem(
        atPath: geotagged + "/xmp/p01_china_xmp.jpg", toPath: directory + "/p01_china_xmp.jpg")
    // Both forms of the XMP specification, as attributes and as elements, under another prefix too.
    write("minutes.jpg", try jpeg(before: xmp([("GPSLatitude", "51,30.123N"), ("GPSLongitude", "0,7.5W")])))
    let sydney = xmp([("GPSLatitude", "33,51,7.38S"), ("GPSLongitude", "151,12,54E")], prefix: "e", elements: true)
    write("seconds.jpg", try jpeg(before: sydney))
    // Where the EXIF has no position, after it; where it has one, the EXIF wins.
    let ten = xmp([("GPSLatitude", "10,0N"), ("GPSLongitude", "20,0E")])
    write("after-exif.jpg", try jpeg(ifd0: [.ascii(0x013B, "Ann Example")], after: ten))
    write("exif-wins.jpg", try jpeg(gps: gps(52.8, "N", 5.3, "E"), after: ten))
    // Not placed, and why: without an XMP position, what counts is that there is no EXIF.
    write("xmp-no-gps.jpg", try jpeg(before: xmp([("DateTimeOriginal", "2024-05-18T08:00:00")])))
    write("xmp-ref-only.jpg", try jpeg(before: xmp([("GPSLatitudeRef", "N"), ("GPSLongitude", "0,7.5W")])))
    let void = xmp([("GPSStatus", "V"), ("GPSLatitude", "51,30N"), ("GPSLongitude", "0,7W")])
    write("xmp-void.jpg", try jpeg(before: void))
    write("xmp-range.jpg", try jpeg(before: xmp([("GPSLatitude", "91,0N"), ("GPSLongitude", "0,7W")])))
    write("xmp-garbage.jpg", try jpeg(before: xmp([("GPSLatitude", "north"), ("GPSLongitude", "0,7W")])))
    write("xmp-swapped.jpg", try jpeg(before: xmp([("GPSLatitude", "51,30E"), ("GPSLongitude", "0,7N")])))

    let source = try LocalPhotoSource(directory: directory)
    let scan = await source.lastScan
    #expect(scan.photos == 5)
    #expect(
        scan.skipped == [
            "xmp-no-gps.jpg": .noEXIF, "xmp-ref-only.jpg": .noEXIF, "xmp-void.jpg": .gpsVoid,
            "xmp-range.jpg": .outOfRange, "xmp-garbage.jpg": .outOfRange, "xmp-swapped.jpg": .outOfRange,
        ])
    let placed = Dictionary(uniqueKeysWithValues: await source.candidates.map { ($0.id, ($0.latitude, $0.longitude)) })
    func near(_ id: String, _ lat: Double, _ lon: Double) -> Bool {
        guard let (a, b) = placed[id] else { return false }
        return abs(a - lat) < 1e-7 && abs(b - lon) < 1e-7
    }
    #expect(near("p01_china_xmp", 55.9486, -3.1999))
    // Degrees from degrees, minutes and seconds, typed: Swift 6.2's checker gives up on the literal sums inline.
    func degrees(_ d: Double, _ m: Double, _ s: Double = 0) -> Double { d + m / 60 + s / 3600 }
    #expect(near("minutes", degrees(51, 30.123), -degrees(0, 7.5)))
    #expect(near("seconds", -degrees(33, 51, 7.38), degrees(151, 12, 54)))
    #expect(near("after-exif", 10, 20))
    #expect(near("exif-wins", 52.8, 5.3))
}
