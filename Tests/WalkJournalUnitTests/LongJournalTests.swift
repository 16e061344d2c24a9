import FieldLogTestSupport
import Foundation
import Testing
import WalkJournal
import WalkModel

// Journals of any size are read a chunk at a time: what is read must be what reading the whole file in one
// piece gives, across chunk boundaries, oversized lines and an unfinished last line.

private let start = Timestamp.parse("2026-11-18T09:46:40Z")!

private func fix(_ second: Int, segment: Int = 0) -> JournalRecord {
    .point(
        TrackPoint(
            fix: Fix(
                time: start + Double(second) / 10, latitude: 55.95 + Double(second) * 1e-6, longitude: -3.2, mode: 3),
            segment: segment, distance: Double(second) * 0.14))
}

/// About 3 MiB: fixes (lines crossing the reader's 1 MiB chunks), milestones with photos, damaged lines, a
/// line of 1.5 MiB (longer than any record may be) and a last line without its newline.
private func longJournal() -> [UInt8] {
    var lines = [JournalCodec.encode(.walkStart(id: "w", time: start, every: 100))]
    for second in 0..<20_000 {
        lines.append(JournalCodec.encode(fix(second, segment: second / 7_000)))
        if second % 700 == 0 {
            let index = second / 700
            lines.append(
                JournalCodec.encode(
                    .milestone(
                        Milestone(
                            index: index, time: start + Double(second) / 10, latitude: 55.95, longitude: -3.2,
                            distance: Double(index) * 100))))
            lines.append(
                JournalCodec.encode(
                    .photo(MilestonePhoto(milestone: index, source: "local", outcome: .noneNearby(radius: 1000)))))
        }
        if second == 9_000 { lines.append(#"{"type":"fix","lat":"#) }
        if second == 12_000 { lines.append(String(repeating: "x", count: 3 << 19)) }
    }
    lines.append(JournalCodec.encode(.event(JournalEvent(kind: .sessionEnd, wall: start))))
    return Array(lines.joined(separator: "\n").utf8)  // no final newline
}

@Test func aLongJournalReadInChunksIsTheJournalReadWhole() throws {
    let store = JournalStore(directory: Harness.temporaryDirectory())
    try store.prepare()
    let contents = longJournal()
    #expect(contents.count > 3 << 20)
    try Data(contents).write(to: URL(fileURLWithPath: store.path(for: "w")))
    let whole = WalkLog.parse(id: "w", contents: contents)
    var handedOut: [TrackPoint] = []
    let read = try store.read("w") { handedOut.append($0) }

    #expect(read.damagedLines == whole.damagedLines && whole.damagedLines.count == 2)
    #expect(read.pointCount == 20_000 && read.pointCount == whole.points.count)
    #expect(read.firstPoint == whole.points.first && read.lastPoint == whole.points.last)
    #expect(read.milestones == whole.milestones && read.milestones.count == 29)
    #expect(read.pendingMilestones.isEmpty)
    #expect(read.events.map(\.kind) == [.sessionEnd], "the last line, without its newline")
    #expect(read.distance == whole.distance)
    #expect(handedOut == whole.points)
    var readAgain: [TrackPoint] = []
    try read.forEachPoint { readAgain.append($0) }
    #expect(readAgain == whole.points)
}

@Test func aFollowerHandsOutALongJournalABoundedChunkAtATime() throws {
    let directory = Harness.temporaryDirectory()
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let path = directory + "/walk-w.jsonl"
    let contents = longJournal() + Array("\n".utf8)
    try Data(contents).write(to: URL(fileURLWithPath: path))
    let follower = JournalFollower(path: path)
    var lines = 0
    var calls = 0
    repeat {
        let chunk = follower.newLines()
        #expect(chunk.reduce(0) { $0 + $1.utf8.count + 1 } <= 1 << 20)
        lines += chunk.count
        calls += 1
    } while follower.hasMore
    // Every line but the oversized one, which is left out.
    let expected = contents.split(separator: UInt8(ascii: "\n")).count - 1
    #expect(lines == expected && calls >= 3)
    #expect(follower.offset == off_t(contents.count))
    #expect(follower.newLines().isEmpty && !follower.hasMore)
}

@Test func theOutlineOfALongWalkStaysBoundedAndKeepsEachSegmentsEnds() {
    var outline = TrackOutline()
    var segmentEnds: [TrackPoint] = []
    var all: [TrackPoint] = []
    for second in 0..<200_000 {
        guard case let .point(point) = fix(second, segment: second / 50_000) else { continue }
        outline.add(point)
        all.append(point)
    }
    for (index, point) in all.enumerated()
    where index == 0 || index == all.count - 1 || all[index - 1].segment != point.segment
        || all[index + 1].segment != point.segment
    {
        segmentEnds.append(point)
    }
    let points = outline.points
    #expect(points.count <= TrackOutline.maxPoints && points.count > TrackOutline.maxPoints / 4)
    #expect(segmentEnds.allSatisfy(points.contains), "each segment's first and last points")
    #expect(zip(points, points.dropFirst()).allSatisfy { $0.fix.time < $1.fix.time })
    // A short walk keeps every point: what the page drew before.
    var short = TrackOutline()
    all.prefix(5000).forEach { short.add($0) }
    #expect(short.points == Array(all.prefix(5000)))
}

@Test func theIndexReadsOnFromWhereItStoppedAndAgainFromTheStartAfterACutBack() throws {
    let store = JournalStore(directory: Harness.temporaryDirectory())
    try store.prepare()
    let path = store.path(for: "w")
    var lines = [JournalCodec.encode(.walkStart(id: "w", time: start, every: 100))]
    lines += (0..<100).map { JournalCodec.encode(fix($0)) }
    lines.append(
        JournalCodec.encode(.milestone(Milestone(index: 0, time: start, latitude: 55.95, longitude: -3.2, distance: 0)))
    )
    try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: false, encoding: .utf8)
    let first = try #require(try WalkIndex.summaries(in: store).first)
    #expect(first.milestones == 1 && first.pendingPhotos == 1 && first.lastFixTime == start + 9.9)

    // What the index holds is read on: a count planted in it shows through, grown by what was appended.
    let indexPath = store.directory + "/" + WalkIndex.fileName
    let index = try String(contentsOfFile: indexPath, encoding: .utf8)
    try index.replacingOccurrences(of: "\"milestones\":1", with: "\"milestones\":41").write(
        toFile: indexPath, atomically: true, encoding: .utf8)
    let appended = [
        JournalCodec.encode(fix(100)),
        JournalCodec.encode(
            .milestone(Milestone(index: 1, time: start + 10, latitude: 55.95, longitude: -3.2, distance: 100))),
        JournalCodec.encode(.photo(MilestonePhoto(milestone: 0, source: "local", outcome: .noneNearby(radius: 1000)))),
    ]
    let handle = try #require(FileHandle(forWritingAtPath: path))
    handle.seekToEndOfFile()
    handle.write(Data((appended.joined(separator: "\n") + "\n").utf8))
    handle.closeFile()
    let grown = try #require(try WalkIndex.summaries(in: store).first)
    #expect(grown.milestones == 42 && grown.pendingPhotos == 1 && grown.lastFixTime == start + 10)

    // Cut back (as after a failed sync) and grown past the old size with other lines: read from the start.
    var other = lines.prefix(50).map { $0 }
    other += (0..<80).map { JournalCodec.encode(fix(200 + $0)) }
    try (other.joined(separator: "\n") + "\n").write(toFile: path, atomically: false, encoding: .utf8)
    let rewritten = try #require(try WalkIndex.summaries(in: store).first)
    #expect(rewritten.milestones == 0 && rewritten.lastFixTime == start + 27.9)
}
