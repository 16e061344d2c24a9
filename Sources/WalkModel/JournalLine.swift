import FoundationEssentials
import Glibc

/// The wire form of a journal record: one flat JSON object whose `type` says which fields it carries.
/// Keys are short because fix lines are most of a journal; sorted keys keep journals byte-for-byte
/// reproducible from the same capture.
package struct JournalLine: Codable {
    package var type: String
    package var walk: String?
    package var time: String?
    package var wall: String?
    package var lat: Double?
    package var lon: Double?
    package var alt: Double?
    package var eph: Double?
    package var mode: Int?
    package var seg: Int?
    package var dist: Double?
    package var speed: Double?
    package var track: Double?
    package var index: Int?
    package var gap: Double?
    package var every: Double?
    package var event: JournalEvent.Kind?
    package var message: String?
    // Photo records.
    package var status: String?
    package var source: String?
    package var photo: String?
    package var title: String?
    package var owner: String?
    package var ownerID: String?
    package var license: String?
    package var page: String?
    package var url: String?
    package var taken: String?
    package var licenseURL: String?
    package var why: String?
    package var cache: String?
    package var radius: Double?
    package var starred: Bool?
    /// `time` already parsed, by the scanner, which leaves `time` unset (not a JSON field).
    package var parsedTime: Double?

    package enum CodingKeys: String, CodingKey {
        case type, walk, time, wall, lat, lon, alt, eph, mode, seg, dist, speed, track, index, gap, every, event,
            message
        case status, source, photo, title, owner, license, page, url, taken, cache, radius, starred
        case ownerID = "owner_id"
        case licenseURL = "license_url", why
    }

    package init(type: String) {
        self.type = type
    }

    package init(_ record: JournalRecord) {
        switch record {
        case let .walkStart(id, time, every):
            self.init(type: "walk_start")
            walk = id
            self.time = Timestamp.format(time)
            self.every = every
        case let .point(point):
            self.init(type: "fix")
            time = Timestamp.format(point.fix.time)
            lat = Precision.roundedDegrees(point.fix.latitude)
            lon = Precision.roundedDegrees(point.fix.longitude)
            alt = point.fix.altitude.map(Precision.roundedMetres)
            eph = point.fix.horizontalError.map(Precision.roundedMetres)
            mode = point.fix.mode
            seg = point.segment
            dist = Precision.roundedMetres(point.distance)
            speed = point.fix.speed.map(Precision.roundedMetres)
            track = point.fix.track.map(Precision.roundedMetres)
        case let .milestone(milestone):
            self.init(type: "milestone")
            index = milestone.index
            time = Timestamp.format(milestone.time)
            lat = Precision.roundedDegrees(milestone.latitude)
            lon = Precision.roundedDegrees(milestone.longitude)
            dist = Precision.roundedMetres(milestone.distance)
        case let .segment(segment):
            self.init(type: "segment")
            seg = segment.index
            time = Timestamp.format(segment.time)
            gap = Precision.roundedMetres(segment.gap)
        case let .event(event):
            self.init(type: "event")
            self.event = event.kind
            time = event.time.map(Timestamp.format)
            wall = Timestamp.format(event.wall)
            message = event.message
        case let .walkEnd(time, distance):
            self.init(type: "walk_end")
            self.time = Timestamp.format(time)
            dist = Precision.roundedMetres(distance)
        case let .photo(record):
            self.init(type: "photo")
            index = record.milestone
            source = record.source
            why = record.why
            switch record.outcome {
            case let .found(candidate, distance, cacheKey):
                status = "found"
                photo = candidate.id
                title = candidate.title
                owner = candidate.ownerName
                ownerID = candidate.ownerID
                license = candidate.license
                page = candidate.pageURL
                lat = Precision.roundedDegrees(candidate.latitude)
                lon = Precision.roundedDegrees(candidate.longitude)
                dist = Precision.roundedMetres(distance)
                url = candidate.imageURL
                taken = candidate.taken
                licenseURL = candidate.licenseURL
                cache = cacheKey
            case let .noneNearby(searched):
                status = "none_nearby"
                radius = searched
            }
        case let .star(milestone, isStarred, wallTime):
            self.init(type: "star")
            index = milestone
            starred = isStarred
            wall = Timestamp.format(wallTime)
        }
    }

    /// JSON has no NaN or infinity: such a value is left out (the line then reads back as damaged, never as a
    /// wrong number). The walk keeps its numbers finite; this keeps the recorder alive if one slips through.
    package mutating func leaveOutNonFiniteNumbers() {
        for field in [\JournalLine.lat, \.lon, \.alt, \.eph, \.dist, \.speed, \.track, \.gap, \.every, \.radius]
        where self[keyPath: field]?.isFinite == false {
            self[keyPath: field] = nil
        }
    }

    /// The record this line holds, or nil when a field it needs is missing or malformed.
    package var record: JournalRecord? {
        let parsedTime = parsedTime ?? time.flatMap(Timestamp.parse)
        switch type {
        case "walk_start":
            guard let walk, let parsedTime, let every, every > 0 else { return nil }
            return .walkStart(id: walk, time: parsedTime, every: every)
        case "fix":
            guard let parsedTime, let lat, let lon, let seg, let dist else { return nil }
            let fix = Fix(
                time: parsedTime, latitude: lat, longitude: lon, altitude: alt, horizontalError: eph,
                mode: mode ?? 2, speed: speed, track: track)
            return .point(TrackPoint(fix: fix, segment: seg, distance: dist))
        case "milestone":
            guard let index, let parsedTime, let lat, let lon, let dist else { return nil }
            return .milestone(
                Milestone(index: index, time: parsedTime, latitude: lat, longitude: lon, distance: dist))
        case "segment":
            guard let seg, let parsedTime, let gap else { return nil }
            return .segment(SegmentBreak(index: seg, time: parsedTime, gap: gap))
        case "event":
            guard let event, let wallTime = wall.flatMap(Timestamp.parse) else { return nil }
            return .event(JournalEvent(kind: event, time: parsedTime, wall: wallTime, message: message))
        case "walk_end":
            guard let parsedTime, let dist else { return nil }
            return .walkEnd(time: parsedTime, distance: dist)
        case "photo":
            guard let index, let source else { return nil }
            switch status {
            case "found":
                guard let photo, let lat, let lon, let dist, let url, let cache else { return nil }
                var candidate = PhotoCandidate(
                    id: photo, title: title ?? "", ownerName: owner ?? "", ownerID: ownerID ?? "",
                    license: license ?? "", pageURL: page, latitude: lat, longitude: lon, imageURL: url, taken: taken)
                candidate.licenseURL = licenseURL
                var record = MilestonePhoto(
                    milestone: index, source: source, outcome: .found(candidate, distance: dist, cacheKey: cache))
                record.why = why
                return .photo(record)
            case "none_nearby":
                guard let radius else { return nil }
                var record = MilestonePhoto(milestone: index, source: source, outcome: .noneNearby(radius: radius))
                record.why = why
                return .photo(record)
            default:
                return nil
            }
        case "star":
            guard let index, let starred, let wallTime = wall.flatMap(Timestamp.parse) else { return nil }
            return .star(milestone: index, starred: starred, wall: wallTime)
        default:
            return nil
        }
    }
}

/// Turns records into journal lines and back.
package enum JournalCodec {
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    package static func encode(_ record: JournalRecord) -> String {
        if case let .point(point) = record { return encodeFix(point) }
        var line = JournalLine(record)
        line.leaveOutNonFiniteNumbers()
        // Strings and finite numbers always encode; were one to fail, an empty line is skipped by every reader.
        return (try? encoder.encode(line)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// A fix line, written directly: fix lines are nearly all of a journal, one a second for hours, and
    /// JSONEncoder spent most of the recorder's CPU time on them (bench/results/daemon.md). The same keys,
    /// sorted, and values as `JournalLine(record)` encodes; numbers as plain decimals at journal precision.
    package static func encodeFix(_ point: TrackPoint) -> String {
        var line = ByteWriter(capacity: 160)
        line.append("{")
        if let altitude = point.fix.altitude {
            line.append("\"alt\":")
            line.appendDecimal(altitude, digits: Precision.metreDigits)
            line.append(",")
        }
        line.append("\"dist\":")
        line.appendDecimal(point.distance, digits: Precision.metreDigits)
        line.appendOptionalField("eph", point.fix.horizontalError, digits: Precision.metreDigits)
        line.append(",\"lat\":")
        line.appendDecimal(point.fix.latitude, digits: Precision.degreeDigits)
        line.append(",\"lon\":")
        line.appendDecimal(point.fix.longitude, digits: Precision.degreeDigits)
        line.append(",\"mode\":")
        line.append(point.fix.mode)
        line.append(",\"seg\":")
        line.append(point.segment)
        line.appendOptionalField("speed", point.fix.speed, digits: Precision.metreDigits)
        line.append(",\"time\":")
        line.appendJSONTime(point.fix.time)
        line.appendOptionalField("track", point.fix.track, digits: Precision.metreDigits)
        line.append(",\"type\":\"fix\"}")
        return String(decoding: line.bytes, as: UTF8.self)
    }

    package static func decode(_ line: Substring) -> JournalRecord? {
        var text = String(line)
        return text.withUTF8(decode)
    }

    /// The record on one line (without its newline): the scanner's fast path, JSONDecoder for the rest.
    package static func decode(_ line: UnsafeBufferPointer<UInt8>) -> JournalRecord? {
        if let scanned = JournalLineScanner.scan(line) { return scanned }
        guard let decoded = try? JSONDecoder().decode(JournalLine.self, from: Data(line)) else { return nil }
        return decoded.record
    }
}
