import FoundationEssentials
import Glibc

/// The fast path for reading journal lines: one pass over a flat JSON object of the shapes fieldlog writes
/// (numbers, strings without escapes, booleans, null), working on the bytes: keys are matched in place,
/// numbers and times converted without making Strings of them. JSONDecoder costs about 7 µs a line, which
/// made reading a 24-hour walk (86,400 fixes) take 0.6 s. Anything else (an escape, a nested value, an
/// unknown key, a malformed number) returns nil and the line goes to JSONDecoder, which stays the judge of
/// what a valid line is.
package struct JournalLineScanner {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The record on `line`, or nil when the scanner cannot tell: then JSONDecoder decides (a damaged line
    /// is rare, and JSONDecoder finds it damaged too). Records are built here, not handed out as a
    /// JournalLine, a struct of some 30 fields whose copies cost more than the scanning.
    package static func scan(_ line: UnsafeBufferPointer<UInt8>) -> JournalRecord? {
        var scanner = JournalLineScanner(line)
        return scanner.object()
    }

    private enum Value {
        /// `integral`: written without a fraction or exponent, as JSONDecoder wants an integer.
        case number(Double, integral: Bool)
        case string(Range<Int>)
        case bool(Bool)
        case null
    }

    private mutating func object() -> JournalRecord? {
        skipSpace()
        guard take(UInt8(ascii: "{")) else { return nil }
        var line = JournalLine(type: "")
        var seen: UInt32 = 0
        skipSpace()
        if take(UInt8(ascii: "}")) { return nil }  // no type
        repeat {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard take(UInt8(ascii: ":")) else { return nil }
            skipSpace()
            guard let value = value(), set(key, value, in: &line, seen: &seen) else { return nil }
            skipSpace()
        } while take(UInt8(ascii: ","))
        skipSpace()
        guard take(UInt8(ascii: "}")), position == bytes.count || onlySpaceFollows(), !line.type.isEmpty else {
            return nil
        }
        return line.record
    }

    private mutating func onlySpaceFollows() -> Bool {
        skipSpace()
        return position == bytes.count
    }

    private mutating func value() -> Value? {
        guard position < bytes.count else { return nil }
        switch bytes[position] {
        case UInt8(ascii: "\""): return string().map(Value.string)
        case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
        case UInt8(ascii: "n"): return literal("null") ? .null : nil
        default: return number()
        }
    }

    /// The bytes of a string without escapes or control characters (those go the slow way).
    private mutating func string() -> Range<Int>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return start..<position - 1
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
            position += 1
        }
        return nil
    }

    /// A JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    private mutating func number() -> Value? {
        let start = position
        let negative = take(UInt8(ascii: "-"))
        guard let first = peek(), isDigit(first) else { return nil }
        // Up to 19 significant digits fit the mantissa; what they are worth as an exact Double is decided below.
        var mantissa: UInt64 = 0
        var digitCount = 0
        var scale = 0
        func accumulate(_ byte: UInt8, fraction: Bool) {
            if digitCount < 19 {
                mantissa = mantissa * 10 + UInt64(byte - UInt8(ascii: "0"))
                if mantissa > 0 { digitCount += 1 }
                if fraction { scale -= 1 }
            } else if !fraction {
                scale += 1
            }
        }
        if first == UInt8(ascii: "0") {
            position += 1
        } else {
            while let byte = peek(), isDigit(byte) {
                accumulate(byte, fraction: false)
                position += 1
            }
        }
        var integral = true
        var exact = true
        if take(UInt8(ascii: ".")) {
            guard let next = peek(), isDigit(next) else { return nil }
            integral = false
            while let byte = peek(), isDigit(byte) {
                if digitCount >= 19 && byte != UInt8(ascii: "0") { exact = false }
                accumulate(byte, fraction: true)
                position += 1
            }
        }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            integral = false
            exact = false
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard let next = peek(), isDigit(next) else { return nil }
            while let byte = peek(), isDigit(byte) { position += 1 }
        }
        // Clinger's fast path: a mantissa below 2^53 and a power of ten up to 22 are both exact Doubles, and
        // one division or multiplication rounds correctly. Everything else goes to strtod.
        if exact, mantissa < 1 << 53, (-22...22).contains(scale) {
            var value = Double(mantissa)
            value = scale < 0 ? value / Self.powersOfTen[-scale] : value * Self.powersOfTen[scale]
            return .number(negative ? -value : value, integral: integral)
        }
        // strtod stops where the number ends; a byte after it in the buffer keeps it inside.
        guard position < bytes.count, let base = bytes.baseAddress else { return nil }
        let value = strtod(UnsafeRawPointer(base + start).assumingMemoryBound(to: CChar.self), nil)
        guard value.isFinite else { return nil }
        return .number(value, integral: integral)
    }

    private static let powersOfTen: [Double] = (0...22).map { pow(10, Double($0)) }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        position += 1
        return true
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        guard matches(position..<position + word.utf8CodeUnitCount, word) else { return false }
        position += word.utf8CodeUnitCount
        return true
    }

    private func matches(_ range: Range<Int>, _ word: StaticString) -> Bool {
        guard range.count == word.utf8CodeUnitCount, range.upperBound <= bytes.count else { return false }
        var index = range.lowerBound
        for offset in 0..<word.utf8CodeUnitCount {
            guard bytes[index] == word.utf8Start[offset] else { return false }
            index += 1
        }
        return true
    }

    private mutating func skipSpace() {
        while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { position += 1 }
    }

    /// nil for bytes that are not UTF-8, which JSONDecoder rejects (String(decoding:) would repair them).
    private func text(_ range: Range<Int>) -> String? {
        String(validating: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    // MARK: fields

    private enum Field: Int {
        case type, time, walk, wall, lat, lon, alt, anchor, eph, every, event, dist, gap, radius, mode, seg, index
        case message, status, source, photo, title, owner, ownerID, license, page, url, taken, cache, speed, track,
            starred
    }

    /// The field a key names, matched on its bytes; nil for unknown keys, whose lines go the slow way.
    private func field(_ key: Range<Int>) -> Field? {
        guard key.count >= 3 else { return nil }
        switch bytes[key.lowerBound] {
        case UInt8(ascii: "t"):
            return matches(key, "type")
                ? .type
                : matches(key, "time")
                    ? .time
                    : matches(key, "track")
                        ? .track
                        : matches(key, "title") ? .title : matches(key, "taken") ? .taken : nil
        case UInt8(ascii: "w"): return matches(key, "walk") ? .walk : matches(key, "wall") ? .wall : nil
        case UInt8(ascii: "l"):
            return matches(key, "lat") ? .lat : matches(key, "lon") ? .lon : matches(key, "license") ? .license : nil
        case UInt8(ascii: "a"): return matches(key, "alt") ? .alt : matches(key, "anchor") ? .anchor : nil
        case UInt8(ascii: "e"):
            return matches(key, "eph") ? .eph : matches(key, "every") ? .every : matches(key, "event") ? .event : nil
        case UInt8(ascii: "d"): return matches(key, "dist") ? .dist : nil
        case UInt8(ascii: "g"): return matches(key, "gap") ? .gap : nil
        case UInt8(ascii: "r"): return matches(key, "radius") ? .radius : nil
        case UInt8(ascii: "m"): return matches(key, "mode") ? .mode : matches(key, "message") ? .message : nil
        case UInt8(ascii: "s"):
            return matches(key, "seg")
                ? .seg
                : matches(key, "speed")
                    ? .speed
                    : matches(key, "status")
                        ? .status
                        : matches(key, "source") ? .source : matches(key, "starred") ? .starred : nil
        case UInt8(ascii: "i"): return matches(key, "index") ? .index : nil
        case UInt8(ascii: "p"): return matches(key, "photo") ? .photo : matches(key, "page") ? .page : nil
        case UInt8(ascii: "o"): return matches(key, "owner") ? .owner : matches(key, "owner_id") ? .ownerID : nil
        case UInt8(ascii: "u"): return matches(key, "url") ? .url : nil
        case UInt8(ascii: "c"): return matches(key, "cache") ? .cache : nil
        default: return nil
        }
    }

    /// Sets the field `key` if `value` has the type JSONDecoder would accept for it (null leaves it unset).
    /// A key seen twice is refused: JSONDecoder keeps the first, and such a line is not fieldlog's anyway.
    private func set(_ key: Range<Int>, _ value: Value, in line: inout JournalLine, seen: inout UInt32) -> Bool {
        guard let field = field(key), seen & (1 << field.rawValue) == 0 else { return false }
        seen |= 1 << field.rawValue
        if case .null = value { return field != .type }
        switch field {
        case .type:
            guard case .string(let range) = value, !range.isEmpty else { return false }
            // A literal for the commonest types: no String made and freed for every line.
            guard let type = matches(range, "fix") ? "fix" : matches(range, "milestone") ? "milestone" : text(range)
            else { return false }
            line.type = type
            return true
        case .time:
            guard case .string(let range) = value,
                let time = Timestamp.parse(UnsafeBufferPointer(rebasing: bytes[range]))
            else { return false }
            line.parsedTime = time
            return true
        case .walk: return assign(value, to: &line.walk)
        case .wall: return assign(value, to: &line.wall)
        case .lat: return assign(value, to: &line.lat)
        case .lon: return assign(value, to: &line.lon)
        case .alt: return assign(value, to: &line.alt)
        case .anchor:
            // Journals before the Doppler distance estimator marked anchor fixes; nothing reads it now.
            guard case .bool = value else { return false }
            return true
        case .eph: return assign(value, to: &line.eph)
        case .every: return assign(value, to: &line.every)
        case .event:
            guard case .string(let range) = value, let kind = text(range).flatMap(JournalEvent.Kind.init(rawValue:))
            else { return false }
            line.event = kind
            return true
        case .dist: return assign(value, to: &line.dist)
        case .gap: return assign(value, to: &line.gap)
        case .radius: return assign(value, to: &line.radius)
        case .mode: return assign(value, to: &line.mode)
        case .seg: return assign(value, to: &line.seg)
        case .index: return assign(value, to: &line.index)
        case .message: return assign(value, to: &line.message)
        case .status: return assign(value, to: &line.status)
        case .source: return assign(value, to: &line.source)
        case .photo: return assign(value, to: &line.photo)
        case .title: return assign(value, to: &line.title)
        case .owner: return assign(value, to: &line.owner)
        case .ownerID: return assign(value, to: &line.ownerID)
        case .license: return assign(value, to: &line.license)
        case .page: return assign(value, to: &line.page)
        case .url: return assign(value, to: &line.url)
        case .taken: return assign(value, to: &line.taken)
        case .cache: return assign(value, to: &line.cache)
        case .speed: return assign(value, to: &line.speed)
        case .track: return assign(value, to: &line.track)
        case .starred:
            guard case .bool(let flag) = value else { return false }
            line.starred = flag
            return true
        }
    }

    private func assign(_ value: Value, to field: inout String?) -> Bool {
        guard case .string(let range) = value else { return false }
        guard let text = text(range) else { return false }
        field = text
        return true
    }

    private func assign(_ value: Value, to field: inout Double?) -> Bool {
        guard case .number(let number, _) = value else { return false }
        field = number
        return true
    }

    /// Integers as JSONDecoder takes them: digits only, and in range.
    private func assign(_ value: Value, to field: inout Int?) -> Bool {
        guard case .number(let number, integral: true) = value, let integer = Int(exactly: number)
        else { return false }
        field = integer
        return true
    }
}
