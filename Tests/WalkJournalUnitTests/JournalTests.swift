import FieldLogTestSupport
import Foundation
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

// Journal lines, whole journals and the crash repair of journal files.

private let start = Timestamp.parse("2026-11-18T09:46:40Z")!

/// One record of every kind and variant, with values already at journal precision (cm, 1e-7°, ms).
private let everyKind: [JournalRecord] = [
    .walkStart(id: "20261118T094640Z", time: start, every: 100),
    .walkStart(id: "20261118T094640Z-2", time: start + 0.25, every: 1000),
    .point(
        TrackPoint(
            fix: Fix(
                time: start, latitude: 47.3769123, longitude: 8.5417456, altitude: 408.52, horizontalError: 3.25,
                mode: 3, speed: 1.43, track: 359.99),
            segment: 0, distance: 0)),
    .point(
        TrackPoint(
            fix: Fix(time: start + 1.5, latitude: -33.8688197, longitude: -151.2092955, mode: 2, speed: 0),
            segment: 3, distance: 12_345.67)),
    .point(
        TrackPoint(
            fix: Fix(time: start + 2, latitude: 89.9999, longitude: -180, altitude: -12.5, horizontalError: 50),
            segment: 1, distance: 0.01)),
    .milestone(Milestone(index: 0, time: start, latitude: 47.3769123, longitude: 8.5417456, distance: 0)),
    .milestone(Milestone(index: 17, time: start + 900.125, latitude: 0, longitude: 179.9999999, distance: 1700.42)),
    .segment(SegmentBreak(index: 2, time: start + 100, gap: 61.5)),
    .event(JournalEvent(kind: .sessionStart, wall: 1_779_443_256.5)),
    .event(JournalEvent(kind: .sessionEnd, time: start + 3, wall: 1_779_443_300, message: "SIGTERM")),
    .event(JournalEvent(kind: .resumed, time: start + 4, wall: 1_779_443_301, message: "after 22 s")),
    .event(JournalEvent(kind: .gpsdConnected, wall: 1_779_443_302, message: "gpsd 3.25 at localhost:2947")),
    .event(JournalEvent(kind: .gpsdLost, time: start + 5, wall: 1_779_443_303)),
    .event(
        JournalEvent(
            kind: .error, wall: 1_779_443_304,
            message: "line one\nline \"two\"\t\\ / ünïcödé 🚶 \u{0}")),
    .walkEnd(time: start + 3600.5, distance: 4321.09),
    .event(JournalEvent(kind: .photoSourceUnavailable, wall: 1_779_443_305, message: "Flickr rejected the API key")),
    .photo(
        MilestonePhoto(
            milestone: 3, source: "flickr",
            outcome: .found(
                PhotoCandidate(
                    id: "53012345678", title: "Pier \"at\" dusk", ownerName: "Ann", ownerID: "12345678@N00",
                    license: "CC BY 2.0", pageURL: "https://www.flickr.com/photos/12345678@N00/53012345678/",
                    latitude: 47.5000001, longitude: -8.25, imageURL: "https://live.staticflickr.com/1/2_3_z.jpg",
                    taken: "2024-05-18 09:00:00"),
                distance: 85.25, cacheKey: "flickr-53012345678"))),
    .photo(MilestonePhoto(milestone: 4, source: "local", outcome: .noneNearby(radius: 31_000))),
    .star(milestone: 3, starred: true, wall: 1_779_443_306),
    .star(milestone: 3, starred: false, wall: 1_779_443_307.5),
]

private func decode(_ line: String) -> JournalRecord? {
    JournalCodec.decode(Substring(line))
}

private func bytes(at path: String) -> [UInt8] {
    [UInt8](FileManager.default.contents(atPath: path) ?? Data())
}

private func write(_ content: [UInt8], to path: String) {
    #expect(FileManager.default.createFile(atPath: path, contents: Data(content)))
}

// MARK: - Codec

@Test(arguments: everyKind)
func everyRecordKindSurvivesEncodeAndDecode(record: JournalRecord) {
    let line = JournalCodec.encode(record)
    #expect(!line.contains("\n"), "a record must stay on one line: \(line)")
    #expect(decode(line) == record, "\(line)")
    // Encoding is stable: the decoded record encodes to the same bytes.
    #expect(decode(line).map(JournalCodec.encode) == line)
}

/// The `type` of a journal line, and for events their `event` too.
private func lineType(_ line: String) -> String? {
    guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
        let type = object["type"] as? String
    else { return nil }
    return (object["event"] as? String).map { type + ":" + $0 } ?? type
}

@Test func everyKindIsCovered() {
    let types = Set(everyKind.compactMap { lineType(JournalCodec.encode($0)) })
    #expect(
        types == [
            "walk_start", "fix", "milestone", "segment", "walk_end", "event:session_start", "event:session_end",
            "event:resumed", "event:gpsd_connected", "event:gpsd_lost", "event:error",
            "event:photo_source_unavailable", "photo", "star",
        ])
}

@Test func linesHaveTheDocumentedShape() {
    let point = JournalCodec.encode(
        .point(
            TrackPoint(
                fix: Fix(
                    time: start + 0.2, latitude: 47.5, longitude: 8.25, horizontalError: 4, mode: 3, speed: 1.38,
                    track: 92.5),
                segment: 1, distance: 12.5)))
    #expect(
        point
            == #"{"dist":12.5,"eph":4,"lat":47.5,"lon":8.25,"mode":3,"seg":1,"speed":1.38,"time":"2026-11-18T09:46:40.2Z","track":92.5,"type":"fix"}"#
    )
    let bare = JournalCodec.encode(
        .point(
            TrackPoint(fix: Fix(time: start, latitude: 1, longitude: 2), segment: 0, distance: 0)))
    #expect(!bare.contains("alt") && !bare.contains("eph") && !bare.contains("speed") && !bare.contains("track"))
    #expect(
        JournalCodec.encode(.walkEnd(time: start, distance: 10))
            == #"{"dist":10,"time":"2026-11-18T09:46:40Z","type":"walk_end"}"#)
}

/// Fix lines are written by hand (JournalCodec.encodeFix); they must say what JSONEncoder says of the same
/// line, value for value, and decode to the same record.
@Test func handWrittenFixLinesMatchJSONEncoder() throws {
    var generator = SystemRandomNumberGenerator()
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    for round in 0..<2000 {
        let fix = Fix(
            time: start + Double.random(in: -1e9...1e9, using: &generator).rounded() / 1000,
            latitude: round == 0 ? -0.00000001 : Double.random(in: -90...90, using: &generator),
            longitude: round == 1 ? 0.00001 : Double.random(in: -180...180, using: &generator),
            altitude: Bool.random(using: &generator) ? Double.random(in: -500...9000, using: &generator) : nil,
            horizontalError: Bool.random(using: &generator) ? Double.random(in: 0...100, using: &generator) : nil,
            mode: Int.random(in: 2...3, using: &generator),
            speed: Bool.random(using: &generator) ? Double.random(in: 0...60, using: &generator) : nil,
            track: Bool.random(using: &generator) ? Double.random(in: 0..<360, using: &generator) : nil)
        let point = TrackPoint(
            fix: fix, segment: Int.random(in: 0...500, using: &generator),
            distance: Double.random(in: 0...200_000, using: &generator))
        let line = JournalCodec.encodeFix(point)
        let reference = try encoder.encode(JournalLine(.point(point)))
        let ours = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? NSDictionary, "\(line)")
        let theirs = try #require(try JSONSerialization.jsonObject(with: reference) as? NSDictionary)
        #expect(ours == theirs, "\(line) vs \(String(decoding: reference, as: UTF8.self))")
        #expect(decode(line) == decode(String(decoding: reference, as: UTF8.self)), "\(line)")
    }
}

@Test func encodingRoundsToJournalPrecision() throws {
    let precise = TrackPoint(
        fix: Fix(
            time: start + 0.12345, latitude: 47.123456789, longitude: -8.987654321, altitude: 400.123456,
            horizontalError: 3.14159, speed: 1.23456, track: 123.456),
        segment: 0, distance: 1234.56789)
    let decoded = try #require(decode(JournalCodec.encode(.point(precise))))
    guard case let .point(point) = decoded else {
        Issue.record("decoded \(decoded)")
        return
    }
    #expect(point.fix.latitude == 47.1234568)
    #expect(point.fix.longitude == -8.9876543)
    #expect(point.fix.altitude == 400.12)
    #expect(point.fix.horizontalError == 3.14)
    #expect(point.fix.speed == 1.23)
    #expect(point.fix.track == 123.46)
    #expect(point.distance == 1234.57)
    #expect(abs(point.fix.time - (start + 0.123)) < 1e-6)
    // The rounded value is a fixed point: journaling it again changes nothing.
    #expect(decode(JournalCodec.encode(decoded)) == decoded)
}

@Test func olderFixLinesWithoutModeOrWithAnchorStillDecode() {
    let line = #"{"dist":5,"lat":47,"lon":8,"seg":0,"time":"2026-11-18T09:46:40Z","type":"fix"}"#
    let expected = JournalRecord.point(
        TrackPoint(fix: Fix(time: start, latitude: 47, longitude: 8, mode: 2), segment: 0, distance: 5))
    #expect(decode(line) == expected)
    let anchored = #"{"anchor":true,"dist":5,"lat":47,"lon":8,"seg":0,"time":"2026-11-18T09:46:40Z","type":"fix"}"#
    #expect(decode(anchored) == expected)
    var text = anchored
    #expect(text.withUTF8 { JournalLineScanner.scan($0) } == expected, "old journals stay on the fast path")
}

@Test(arguments: [
    "",
    " ",
    "garbage",
    "null",
    "42",
    "\"fix\"",
    "[]",
    "{}",
    "[{\"type\":\"walk_end\",\"time\":\"2026-11-18T09:46:40Z\",\"dist\":1}]",
    // Unknown or missing type.
    #"{"type":"teleport","time":"2026-11-18T09:46:40Z"}"#,
    #"{"time":"2026-11-18T09:46:40Z","dist":1}"#,
    // Wrong types.
    #"{"type":1}"#,
    #"{"type":"walk_end","time":"2026-11-18T09:46:40Z","dist":"1"}"#,
    #"{"type":"walk_end","time":1779443256,"dist":1}"#,
    #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":"47","lon":8,"seg":0,"dist":0}"#,
    #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"seg":0.5,"dist":0}"#,
    #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"seg":0,"dist":0,"speed":"fast"}"#,
    #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"seg":0,"dist":0,"track":true}"#,
    #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"seg":0,"dist":0,"mode":"3"}"#,
    #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":null,"lon":8,"seg":0,"dist":0}"#,
    #"{"type":"milestone","index":1.5,"time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"dist":150}"#,
    #"{"type":"event","event":"lunch","wall":"2026-11-18T09:46:40Z"}"#,
    #"{"type":"event","event":"resumed","wall":1779443256}"#,
    #"{"type":"walk_start","walk":7,"time":"2026-11-18T09:46:40Z","every":100}"#,
    // Missing fields.
    #"{"type":"walk_start","time":"2026-11-18T09:46:40Z","every":100}"#,
    #"{"type":"walk_start","walk":"a","time":"2026-11-18T09:46:40Z"}"#,
    #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":47,"seg":0,"dist":0}"#,
    #"{"type":"fix","lat":47,"lon":8,"seg":0,"dist":0}"#,
    #"{"type":"milestone","time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"dist":150}"#,
    #"{"type":"segment","seg":1,"time":"2026-11-18T09:46:40Z"}"#,
    #"{"type":"event","event":"resumed"}"#,
    #"{"type":"walk_end","time":"2026-11-18T09:46:40Z"}"#,
    // Bad values.
    #"{"type":"walk_start","walk":"a","time":"2026-11-18T09:46:40Z","every":0}"#,
    #"{"type":"walk_start","walk":"a","time":"2026-11-18T09:46:40Z","every":-100}"#,
    #"{"type":"walk_end","time":"2026-11-18 09:46:40","dist":1}"#,
    #"{"type":"walk_end","time":"yesterday","dist":1}"#,
])
func decodeRejectsDamagedLines(line: String) {
    #expect(decode(line) == nil, "accepted \(line)")
}

/// The scanner is a shortcut only: wherever it answers, JSONDecoder reads the same record.
@Test(
    arguments: everyKind.map(JournalCodec.encode) + [
        #"{ "type" : "fix" , "time":"2026-11-18T09:46:40Z", "lat":4.7e1,"lon":-8.25E-1,"seg":0,"dist":0 }"#,
        #"{"type":"fix","time":"2026-11-18T09:46:40.125Z","lat":-0.0,"lon":8,"seg":0,"dist":0,"alt":null}"#,
        #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"seg":1.0,"dist":0}"#,
        #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"seg":1e0,"dist":0}"#,
        #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"seg":99999999999999999999,"dist":0}"#,
        #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":047,"lon":8,"seg":0,"dist":0}"#,
        #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":47.,"lon":8,"seg":0,"dist":0}"#,
        #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":1e999,"lon":8,"seg":0,"dist":0}"#,
        #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"seg":0,"dist":0,"anchor":false}"#,
        #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"seg":0,"dist":0,"extra":1}"#,
        #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"seg":0,"dist":0}x"#,
        #"{"type":"fix","time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"seg":0,"dist":0,}"#,
        #"{"type":"f\u0069x","time":"2026-11-18T09:46:40Z","lat":47,"lon":8,"seg":0,"dist":0}"#,
        #"{"type":"event","event":"resumed","wall":"2026-11-18T09:46:40Z","message":"caf\u00e9 \"quoted\""}"#,
        #"{"type":"event","event":"resumed","wall":"2026-11-18T09:46:40Z","message":"café"}"#,
        #"{"type":"walk_end","time":"2026-11-18T09:46:40Z","dist":1,"dist":2}"#,
        #"{"type":"walk_end","time":"2026-11-18T09:46:40Z","dist":null,"dist":2}"#,
        #"{"type":"walk_end","time":"2026-11-18T09:46:40Z","dist":0.1234567890123456789012}"#,
        #"{"type":"walk_end","time":"2026-11-18T09:46:40Z","dist":12345678901234567890.5}"#,
        #"{"type":"walk_end","time":"2026-11-18T09:46:40Z","dist":9007199254740993}"#,
        #"{"type":"walk_end","time":"2026-11-18T09:46:40Z","dist":0.30000000000000004}"#,
        #"{"type":"walk_end","time":"2026-11-18T09:46:40Z","dist":-0.000001}"#,
        #"{"type":"walk_end","time":null,"dist":1}"#,
        #"{"type":"walk_end","time":"2026-11-18T09:46:40Z","dist":1}   "#,
        #"{"type":"walk_end","time":"2026-11-18T09:46:40Z","dist":tru}"#,
        #"{"type":"walk_end","time":"2026-11-18T09:46:40Z","dist":{"m":1}}"#,
    ])
func scannerAgreesWithJSONDecoder(line: String) {
    var text = line
    let scanned = text.withUTF8 { JournalLineScanner.scan($0) }
    let decoded = try? JSONDecoder().decode(JournalLine.self, from: Data(line.utf8))
    if let scanned {
        #expect(scanned == decoded?.record, "\(line)")
    }
    #expect(decode(line) == decoded?.record)
}

/// Every kind of line fieldlog writes takes the fast path, but for strings with escapes, left to JSONDecoder.
@Test(arguments: everyKind)
func linesFieldlogWritesAreScanned(record: JournalRecord) {
    var line = JournalCodec.encode(record)
    let scanned = line.withUTF8 { JournalLineScanner.scan($0) }
    #expect(scanned == (line.contains("\\") ? nil : record), "\(line)")
}

@Test(arguments: everyKind)
func everyTruncationOfALineIsRejected(record: JournalRecord) {
    let line = Array(JournalCodec.encode(record).utf8)
    for length in 0..<line.count {
        let prefix = String(decoding: line[0..<length], as: UTF8.self)
        #expect(decode(prefix) == nil, "accepted the first \(length) bytes: \(prefix)")
    }
}

// MARK: - WalkLog

@Test func parseSkipsAndListsDamagedLinesAndKeepsTheRest() {
    let lines = [
        JournalCodec.encode(everyKind[0]),  // 1 walk_start
        JournalCodec.encode(everyKind[2]),  // 2 point
        "{\"type\":\"fix\",\"lat\":47.3",  // 3 torn
        JournalCodec.encode(everyKind[5]),  // 4 milestone 0
        "",  // 5 empty: not damage
        "\u{FFFD}\u{FFFD}binary",  // 6
        JournalCodec.encode(everyKind[7]),  // 7 segment
        JournalCodec.encode(everyKind[3]),  // 8 point
        #"{"type":"mystery"}"#,  // 9
        JournalCodec.encode(everyKind[9]),  // 10 event
        JournalCodec.encode(everyKind[6]),  // 11 milestone 17
    ]
    var contents = Array(lines.joined(separator: "\n").utf8) + [UInt8(ascii: "\n")]
    // A line of invalid UTF-8 as well.
    contents += [0xFF, 0xFE, 0x00, UInt8(ascii: "\n")]  // 12
    contents += Array(JournalCodec.encode(everyKind[4]).utf8)  // 13, no final newline
    let log = WalkLog.parse(id: "x", contents: contents)

    #expect(log.damagedLines == [3, 6, 9, 12])
    #expect(log.id == "x")
    #expect(log.started == start)
    #expect(log.every == 100)
    #expect(log.points.map { JournalRecord.point($0) } == [everyKind[2], everyKind[3], everyKind[4]])
    #expect(log.milestones.map(\.index) == [0, 17])
    #expect(log.segments.count == 1)
    #expect(log.events.map(\.kind) == [.sessionEnd])
    #expect(log.isOpen)
    #expect(log.distance == 0.01)
    #expect(log.lastTime == start + 2)
}

@Test func parseOfAnIntactJournalHasNoDamage() {
    let text = everyKind.map(JournalCodec.encode).joined(separator: "\n") + "\n"
    let log = WalkLog.parse(id: "x", contents: Array(text.utf8))
    #expect(log.damagedLines.isEmpty)
    #expect(log.points.count == 3)
    #expect(log.events.count == 7)
    #expect(log.photos.count == 2)
    #expect(log.usedPhotoIDs == ["53012345678"])
    #expect(!log.isOpen)
    #expect(log.ended == start + 3600.5)
    // walk_end's distance wins over the last point's.
    #expect(log.distance == 4321.09)
    #expect(log.lastTime == start + 3600.5)
    #expect(WalkLog.parse(id: "empty", contents: []).damagedLines.isEmpty)
    #expect(WalkLog.parse(id: "empty", contents: Array("\n\n".utf8)).damagedLines.isEmpty)
}

@Test func aRepeatedMilestoneIndexIsIgnored() {
    var log = WalkLog(id: "x")
    let first = Milestone(index: 3, time: start, latitude: 1, longitude: 2, distance: 300.5)
    log.apply(.milestone(first))
    log.apply(.milestone(Milestone(index: 3, time: start + 10, latitude: 1, longitude: 2, distance: 301)))
    log.apply(.milestone(Milestone(index: 2, time: start + 11, latitude: 1, longitude: 2, distance: 302)))
    #expect(log.milestones == [first])
}

// MARK: - JournalFile

@Test func repairCutsATornLastLineAndKeepsEverythingBeforeIt() throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/walk.jsonl"
    let intact = Array((everyKind.map(JournalCodec.encode).joined(separator: "\n") + "\n").utf8)
    let torn = Array(JournalCodec.encode(everyKind[3]).utf8.prefix(37))
    write(intact + torn, to: path)

    #expect(try JournalFile.repairTornTail(path: path) == torn.count)
    #expect(bytes(at: path) == intact)
    // Repairing again finds nothing to do.
    #expect(try JournalFile.repairTornTail(path: path) == 0)
    #expect(bytes(at: path) == intact)
}

@Test(arguments: [1, 4095, 4096, 4097, 9000])
func repairFindsTheLastNewlineBeyondOneBlock(tornLength: Int) throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/walk.jsonl"
    // Lines summing to more than one 4 KiB block, and a torn tail as long or longer than a block.
    var random = SplitMix(seed: UInt64(tornLength))
    var intact: [UInt8] = []
    while intact.count < 10_000 {
        let length = Int(random.next() % 300)
        intact += (0..<length).map { _ in UInt8(ascii: "a") + UInt8(random.next() % 26) } + [UInt8(ascii: "\n")]
    }
    let torn = (0..<tornLength).map { UInt8(ascii: "A") + UInt8($0 % 26) }
    write(intact + torn, to: path)
    #expect(try JournalFile.repairTornTail(path: path) == tornLength)
    #expect(bytes(at: path) == intact)
}

@Test func repairWithTheNewlineExactlyAtABlockBoundary() throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/walk.jsonl"
    for intactLength in [4096, 4095, 8192] {
        let intact = [UInt8](repeating: UInt8(ascii: "x"), count: intactLength - 1) + [UInt8(ascii: "\n")]
        for tornLength in [1, 4095, 4096, 4097] {
            let torn = [UInt8](repeating: UInt8(ascii: "y"), count: tornLength)
            write(intact + torn, to: path)
            #expect(try JournalFile.repairTornTail(path: path) == tornLength, "\(intactLength) + \(tornLength)")
            #expect(bytes(at: path) == intact, "\(intactLength) + \(tornLength)")
        }
    }
}

@Test(arguments: [1, 100, 4096, 5000])
func repairEmptiesAFileWithoutAnyNewline(length: Int) throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/walk.jsonl"
    write(
        Array(JournalCodec.encode(everyKind[0]).utf8.prefix(length))
            + [UInt8](repeating: 0x7B, count: max(0, length - 40)), to: path)
    let size = bytes(at: path).count
    #expect(try JournalFile.repairTornTail(path: path) == size)
    #expect(bytes(at: path).isEmpty)
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    #expect((attributes[.size] as? NSNumber)?.intValue == 0)
}

@Test func repairLeavesIntactAndEmptyFilesAlone() throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/walk.jsonl"
    let intact = Array((everyKind.map(JournalCodec.encode).joined(separator: "\n") + "\n").utf8)
    write(intact, to: path)
    let modified = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date
    #expect(try JournalFile.repairTornTail(path: path) == 0)
    #expect(bytes(at: path) == intact)
    #expect(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date == modified)

    write([UInt8(ascii: "\n")], to: path)
    #expect(try JournalFile.repairTornTail(path: path) == 0)
    #expect(bytes(at: path) == [UInt8(ascii: "\n")])

    write([], to: path)
    #expect(try JournalFile.repairTornTail(path: path) == 0)
    #expect(bytes(at: path).isEmpty)
}

@Test func repairOfAMissingFileThrowsCannotOpen() {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/absent.jsonl"
    let error = #expect(throws: JournalError.self) { try JournalFile.repairTornTail(path: path) }
    #expect(error?.code == .cannotOpen)
    #expect(error?.path == path)
    #expect(!FileManager.default.fileExists(atPath: path))
}

@Test func appendWritesWholeLinesAndReopeningAppends() throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let path = directory + "/walk.jsonl"
    do {
        let file = try JournalFile(path: path)
        try file.append(JournalCodec.encode(everyKind[0]))
        try file.append(JournalCodec.encode(everyKind[2]))
        try file.sync()
    }
    do {
        let file = try JournalFile(path: path)
        try file.append(JournalCodec.encode(everyKind[5]))
    }
    let expected = [everyKind[0], everyKind[2], everyKind[5]].map { JournalCodec.encode($0) + "\n" }.joined()
    #expect(bytes(at: path) == Array(expected.utf8))
    let log = WalkLog.parse(id: "x", contents: bytes(at: path))
    #expect(log.damagedLines.isEmpty && log.points.count == 1 && log.milestones.count == 1)
}

@Test func openingInAMissingDirectoryThrowsCannotOpen() {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let error = #expect(throws: JournalError.self) { _ = try JournalFile(path: directory + "/no/such/walk.jsonl") }
    #expect(error?.code == .cannotOpen)
}

// MARK: - JournalStore

@Test func storeListsWalksInOrderAndHandsOutFreshIDs() throws {
    let directory = Harness.temporaryDirectory() + "/state"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let store = JournalStore(directory: directory)
    try store.prepare()
    #expect(try store.walkIDs().isEmpty)
    #expect(throws: JournalError.self) { try store.resolve(nil) }

    let first = store.newWalkID(startingAt: start + 0.9)
    #expect(first == "20261118T094640Z")
    write(
        Array((JournalCodec.encode(.walkStart(id: first, time: start, every: 100)) + "\n").utf8),
        to: store.path(for: first))
    let again = store.newWalkID(startingAt: start)
    #expect(again == "20261118T094640Z-2")
    let later = store.newWalkID(startingAt: start + 86400)
    write([], to: store.path(for: later))
    write([], to: directory + "/notes.txt")
    #expect(try store.walkIDs() == [first, later])
    #expect(try store.resolve(nil) == later)
    #expect(try store.resolve("latest") == later)
    #expect(try store.resolve(first) == first)
    #expect(throws: JournalError.self) { try store.resolve("20000101T000000Z") }
    #expect(try store.read(first).started == start)
}

/// `fieldlog star` appends to a journal the recorder has open: the recorder's idea of where its file ends
/// follows, so cutting a failed write back off never cuts the other writer's line (or its own next one).
@Test func anotherWritersLinesSurviveTheRecordersRepairs() throws {
    let path = Harness.temporaryDirectory() + "/walk-20261118T094640Z.jsonl"
    let recorder = try JournalFile(path: path)
    let first = JournalCodec.encode(everyKind[0])
    let star = JournalCodec.encode(.star(milestone: 0, starred: true, wall: 1_779_443_306))
    let second = JournalCodec.encode(everyKind[2])
    try recorder.append(first)
    try JournalFile(path: path).append(star)
    try recorder.append(second)
    try recorder.cutToLength()
    let expected = first + "\n" + star + "\n" + second + "\n"
    #expect(bytes(at: path) == Array(expected.utf8))
    #expect(recorder.length == off_t(expected.utf8.count))
}
