import FoundationEssentials
package import Glibc
package import WalkModel

/// Everything a journal says of a walk, read back: what export, tail, `walks`, the live page and recovery
/// work from. The track points are not kept (a two-day walk at 10 Hz has 1.7 million): the log knows their
/// count, the first and the last, an outline to draw, and reads them again from the journal when asked
/// (`forEachPoint`). A log made in memory (`init(id:)`, `parse`) keeps them instead.
package struct WalkLog: Sendable {
    package var id: String
    package var started: Double?
    package var every: Double?
    /// GPS time of the walk_end record; nil while the walk is open (recording, or interrupted).
    package var ended: Double?
    package private(set) var pointCount = 0
    package private(set) var firstPoint: TrackPoint?
    package private(set) var lastPoint: TrackPoint?
    /// The track thinned to what a drawing needs.
    package private(set) var outline = TrackOutline()
    package var milestones: [Milestone] = []
    /// Gaps between segments, the latest `maxKeptRecords` of them.
    package private(set) var segments: [SegmentBreak] = []
    /// The recorder's events, the latest `maxKeptRecords` of them.
    package private(set) var events: [JournalEvent] = []
    /// Photo outcomes by milestone index; a milestone without one is still pending.
    package var photos: [Int: MilestonePhoto] = [:]
    /// Milestones marked as favourites.
    package var starred: Set<Int> = []
    /// 1-based numbers of lines that could not be read (reported, skipped): the first `maxKeptRecords`.
    package private(set) var damagedLines: [Int] = []
    /// All lines that could not be read.
    package private(set) var damagedLineCount = 0
    /// Decodings begun per photo id, for `suspectPhotoIDs`.
    private var photoAttempts: [String: Int] = [:]
    private var endDistance: Double?
    private var pointSource: PointSource

    /// Bounds what a damaged or planted journal of events can make a reader hold; a real walk has a few
    /// hundred events.
    package static let maxKeptRecords = 10_000

    private enum PointSource: Sendable {
        case held([TrackPoint])
        /// The journal's lines up to `length` (the last one unfinished too, if `lastLineToo`).
        case journal(path: String, length: off_t, lastLineToo: Bool)
    }

    /// A log built in memory, record by record, which keeps its points.
    package init(id: String) {
        self.id = id
        pointSource = .held([])
    }

    /// A log of journal `path`, whose points are read from it again up to `length` when asked.
    package init(id: String, journal path: String, length: off_t = 0, lastLineToo: Bool = false) {
        self.id = id
        pointSource = .journal(path: path, length: length, lastLineToo: lastLineToo)
    }

    /// Bytes of the journal this log was read from (kept by whoever reads on, as the live page does).
    package var journalLength: off_t {
        get {
            if case let .journal(_, length, _) = pointSource { return length }
            return 0
        }
        set {
            if case let .journal(path, _, lastLineToo) = pointSource {
                pointSource = .journal(path: path, length: newValue, lastLineToo: lastLineToo)
            }
        }
    }

    package var distance: Double {
        endDistance ?? lastPoint?.distance ?? 0
    }

    package var isOpen: Bool { ended == nil }

    /// Time of the last thing known to have happened on the walk.
    package var lastTime: Double? {
        ended ?? lastPoint?.fix.time ?? started
    }

    package mutating func apply(_ record: JournalRecord) {
        switch record {
        case let .walkStart(_, time, every):
            started = time
            self.every = every
        case let .point(point):
            pointCount += 1
            if firstPoint == nil { firstPoint = point }
            lastPoint = point
            outline.add(point)
            if case var .held(all) = pointSource {
                pointSource = .held([])
                all.append(point)
                pointSource = .held(all)
            }
        case let .milestone(milestone):
            // A milestone index is journaled once; a repeat would only come from a damaged journal.
            if milestones.last.map({ milestone.index > $0.index }) ?? true {
                milestones.append(milestone)
            }
        case let .segment(segment):
            Self.keepLatest(segment, in: &segments)
        case let .event(event):
            Self.keepLatest(event, in: &events)
            if event.kind == .photoAttempt, let id = event.message,
                photoAttempts.count < Self.maxKeptRecords || photoAttempts[id] != nil
            {
                photoAttempts[id, default: 0] += 1
            }
        case let .walkEnd(time, distance):
            ended = time
            endDistance = distance
        case let .photo(photo):
            photos[photo.milestone] = photo
        case let .star(milestone, isStarred, _):
            if isStarred { starred.insert(milestone) } else { starred.remove(milestone) }
        }
    }

    private static func keepLatest<Element>(_ element: Element, in list: inout [Element]) {
        if list.count >= maxKeptRecords { list.removeFirst(list.count / 2) }
        list.append(element)
    }

    /// Counts line `number` as damaged.
    package mutating func noteDamaged(line number: Int) {
        damagedLineCount += 1
        if damagedLines.count < Self.maxKeptRecords { damagedLines.append(number) }
    }

    /// Calls `body` with every track point, in order: from memory, or read again from the journal (the
    /// points it had when the log was read). Throws if the journal was cut shorter since (the recorder cuts
    /// back lines a failed sync may have lost): what was read no longer matches the log.
    package func forEachPoint(_ body: (TrackPoint) throws -> Void) throws {
        switch pointSource {
        case let .held(all):
            try all.forEach(body)
        case let .journal(path, length, lastLineToo):
            let pass = try JournalReader(path: path).forEachRecord(limit: length, lastLineToo: lastLineToo) {
                record, _ in
                if case let .point(point) = record { try body(point) }
            }
            guard pass.end + off_t(pass.unfinished) >= length else {
                throw JournalError(.cannotRead, path: path, reason: "it was cut back while it was read")
            }
        }
    }

    /// Milestones still waiting for a photo, in order.
    package var pendingMilestones: [Milestone] {
        milestones.filter { photos[$0.index] == nil }
    }

    /// Photo ids this walk has shown, so no photo is used twice in a walk.
    package var usedPhotoIDs: Set<String> {
        Set(photos.values.compactMap { $0.photo?.id })
    }

    /// Photos whose decoding was begun twice without an outcome: each time the recorder died meanwhile (a
    /// crash, the power, the memory limit), so they are not tried again.
    package var suspectPhotoIDs: Set<String> {
        let used = usedPhotoIDs
        return Set(photoAttempts.filter { $0.value >= 2 && !used.contains($0.key) }.keys)
    }

    /// Parses a whole journal held in memory; the log keeps its points. Damaged lines are skipped and
    /// listed, never fatal.
    package static func parse(id: String, contents: [UInt8]) -> WalkLog {
        var log = WalkLog(id: id)
        contents.withUnsafeBufferPointer { bytes in
            var lineNumber = 0
            var start = 0
            while start < bytes.count {
                lineNumber += 1
                let end =
                    memchr(bytes.baseAddress! + start, Int32(UInt8(ascii: "\n")), bytes.count - start)
                    .map { UnsafeRawPointer($0) - UnsafeRawPointer(bytes.baseAddress!) } ?? bytes.count
                if end > start {
                    if let record = JournalCodec.decode(UnsafeBufferPointer(rebasing: bytes[start..<end])) {
                        log.apply(record)
                    } else {
                        log.noteDamaged(line: lineNumber)
                    }
                }
                start = end + 1
            }
        }
        return log
    }

    /// Reads journal `path` a chunk at a time into a log that does not keep its points, calling `eachPoint`
    /// with each as it is read (recovery rebuilds its state from the last ones).
    package static func read(
        id: String, path: String, eachPoint: (TrackPoint) -> Void = { _ in }
    ) throws -> WalkLog {
        var log = WalkLog(id: id, journal: path, lastLineToo: true)
        let pass = try JournalReader(path: path).forEachRecord(lastLineToo: true) { record, line in
            guard let record else { return log.noteDamaged(line: line) }
            if case let .point(point) = record { eachPoint(point) }
            log.apply(record)
        }
        log.journalLength = pass.end + off_t(pass.unfinished)
        return log
    }
}
