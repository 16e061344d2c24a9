import FoundationEssentials
import Glibc
import WalkModel

/// Everything a walk's journal says, read back: what export, tail, `walks` and recovery work from.
public struct WalkLog: Sendable {
    public var id: String
    public var started: Double?
    public var every: Double?
    /// GPS time of the walk_end record; nil while the walk is open (recording, or interrupted).
    public var ended: Double?
    public var points: [TrackPoint] = []
    public var milestones: [Milestone] = []
    public var segments: [SegmentBreak] = []
    public var events: [JournalEvent] = []
    /// Photo outcomes by milestone index; a milestone without one is still pending.
    public var photos: [Int: MilestonePhoto] = [:]
    /// Milestones marked as favourites.
    public var starred: Set<Int> = []
    /// 1-based numbers of lines that could not be read (reported, skipped).
    public var damagedLines: [Int] = []
    private var endDistance: Double?

    public init(id: String) {
        self.id = id
    }

    public var distance: Double {
        endDistance ?? points.last?.distance ?? 0
    }

    public var isOpen: Bool { ended == nil }

    /// Time of the last thing known to have happened on the walk.
    public var lastTime: Double? {
        ended ?? points.last?.fix.time ?? started
    }

    public mutating func apply(_ record: JournalRecord) {
        switch record {
        case let .walkStart(_, time, every):
            started = time
            self.every = every
        case let .point(point):
            points.append(point)
        case let .milestone(milestone):
            // A milestone index is journaled once; a repeat would only come from a damaged journal.
            if milestones.last.map({ milestone.index > $0.index }) ?? true {
                milestones.append(milestone)
            }
        case let .segment(segment):
            segments.append(segment)
        case let .event(event):
            events.append(event)
        case let .walkEnd(time, distance):
            ended = time
            endDistance = distance
        case let .photo(photo):
            photos[photo.milestone] = photo
        case let .star(milestone, isStarred, _):
            if isStarred { starred.insert(milestone) } else { starred.remove(milestone) }
        }
    }

    /// Milestones still waiting for a photo, in order.
    public var pendingMilestones: [Milestone] {
        milestones.filter { photos[$0.index] == nil }
    }

    /// Photo ids this walk has shown, so no photo is used twice in a walk.
    public var usedPhotoIDs: Set<String> {
        Set(photos.values.compactMap { $0.photo?.id })
    }

    /// Photos whose decoding was begun twice without an outcome: each time the recorder died meanwhile (a
    /// crash, the power, the memory limit), so they are not tried again.
    public var suspectPhotoIDs: Set<String> {
        var attempts: [String: Int] = [:]
        for event in events where event.kind == .photoAttempt {
            if let id = event.message { attempts[id, default: 0] += 1 }
        }
        let used = usedPhotoIDs
        return Set(attempts.filter { $0.value >= 2 && !used.contains($0.key) }.keys)
    }

    /// Parses a whole journal. Damaged lines are skipped and listed, never fatal.
    public static func parse(id: String, contents: [UInt8]) -> WalkLog {
        var log = WalkLog(id: id)
        // Fix lines are about 140 bytes and most of a journal.
        log.points.reserveCapacity(contents.count / 128)
        contents.withUnsafeBufferPointer { bytes in
            var lineNumber = 0
            var start = 0
            while start < bytes.count {
                lineNumber += 1
                let end = memchr(bytes.baseAddress! + start, Int32(UInt8(ascii: "\n")), bytes.count - start)
                    .map { UnsafeRawPointer($0) - UnsafeRawPointer(bytes.baseAddress!) } ?? bytes.count
                if end > start {
                    if let record = JournalCodec.decode(UnsafeBufferPointer(rebasing: bytes[start..<end])) {
                        log.apply(record)
                    } else {
                        log.damagedLines.append(lineNumber)
                    }
                }
                start = end + 1
            }
        }
        return log
    }
}
