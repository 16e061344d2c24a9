/// The fast path for reading journal lines: one pass over a flat JSON object of the shapes fieldlog writes
/// (numbers, strings without escapes, booleans, null), with no allocation but the strings it keeps.
/// JSONDecoder costs about 7 µs a line, which makes reading a 24-hour walk (86,400 fixes) take 0.6 s; this
/// takes a fraction of that. Anything else (an escape, a nested value, an unknown key, a malformed number)
/// returns nil and the line goes to JSONDecoder, which stays the judge of what a valid line is.
struct JournalLineScanner {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    static func scan(_ line: UnsafeBufferPointer<UInt8>) -> JournalLine? {
        var scanner = JournalLineScanner(line)
        return scanner.object()
    }

    fileprivate enum Value {
        /// `integral`: written without a fraction or exponent, as JSONDecoder wants an integer.
        case number(Double, integral: Bool)
        case string(Substring)
        case bool(Bool)
        case null
    }

    private mutating func object() -> JournalLine? {
        skipSpace()
        guard take(UInt8(ascii: "{")) else { return nil }
        var line = JournalLine(type: "")
        skipSpace()
        if take(UInt8(ascii: "}")) { return end() ? line : nil }
        repeat {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard take(UInt8(ascii: ":")) else { return nil }
            skipSpace()
            guard let value = value(), line.set(key, value) else { return nil }
            skipSpace()
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")), end(), !line.type.isEmpty else { return nil }
        return line
    }

    private mutating func end() -> Bool {
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

    /// A string without escapes or control characters (those go the slow way).
    private mutating func string() -> Substring? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let text = Substring(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
                position += 1
                return text
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
            position += 1
        }
        return nil
    }

    /// A JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, converted by the standard library.
    private mutating func number() -> Value? {
        let start = position
        _ = take(UInt8(ascii: "-"))
        guard let first = peek(), isDigit(first) else { return nil }
        if first == UInt8(ascii: "0") { position += 1 } else { digits() }
        var integral = true
        if take(UInt8(ascii: ".")) {
            guard let next = peek(), isDigit(next) else { return nil }
            digits()
            integral = false
        }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            integral = false
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard let next = peek(), isDigit(next) else { return nil }
            digits()
        }
        let text = Substring(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        guard let number = Double(text), number.isFinite else { return nil }
        return .number(number, integral: integral)
    }

    private mutating func digits() {
        while let byte = peek(), isDigit(byte) { position += 1 }
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        position += 1
        return true
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count,
            (0..<count).allSatisfy({ bytes[position + $0] == word.utf8Start[$0] })
        else { return false }
        position += count
        return true
    }

    private mutating func skipSpace() {
        while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { position += 1 }
    }
}

extension JournalLine {
    /// Sets the field `key` if `value` has the type JSONDecoder would accept for it (null leaves it unset).
    /// A key seen twice is refused: JSONDecoder keeps the first, and such a line is not fieldlog's anyway.
    fileprivate mutating func set(_ key: Substring, _ value: JournalLineScanner.Value) -> Bool {
        if case .null = value { return key != "type" && CodingKeys(stringValue: String(key)) != nil }
        switch key {
        case "type": return assign(value, to: &type)
        case "walk": return assign(value, to: &walk)
        case "time": return assign(value, to: &time)
        case "wall": return assign(value, to: &wall)
        case "lat": return assign(value, to: &lat)
        case "lon": return assign(value, to: &lon)
        case "alt": return assign(value, to: &alt)
        case "eph": return assign(value, to: &eph)
        case "dist": return assign(value, to: &dist)
        case "gap": return assign(value, to: &gap)
        case "every": return assign(value, to: &every)
        case "radius": return assign(value, to: &radius)
        case "mode": return assign(value, to: &mode)
        case "seg": return assign(value, to: &seg)
        case "index": return assign(value, to: &index)
        case "anchor":
            guard anchor == nil, case .bool(let flag) = value else { return false }
            anchor = flag
            return true
        case "event":
            guard event == nil, case .string(let text) = value, let kind = JournalEvent.Kind(rawValue: String(text))
            else { return false }
            event = kind
            return true
        // Free text (titles, messages, names) may carry escapes, and then goes the slow way anyway.
        default: return false
        }
    }

    private func assign(_ value: JournalLineScanner.Value, to field: inout String) -> Bool {
        guard field.isEmpty, case .string(let text) = value, !text.isEmpty else { return false }
        field = String(text)
        return true
    }

    private func assign(_ value: JournalLineScanner.Value, to field: inout String?) -> Bool {
        guard field == nil, case .string(let text) = value else { return false }
        field = String(text)
        return true
    }

    private func assign(_ value: JournalLineScanner.Value, to field: inout Double?) -> Bool {
        guard field == nil, case .number(let number, _) = value else { return false }
        field = number
        return true
    }

    /// Integers as JSONDecoder takes them: digits only, and in range.
    private func assign(_ value: JournalLineScanner.Value, to field: inout Int?) -> Bool {
        guard field == nil, case .number(let number, integral: true) = value, let integer = Int(exactly: number)
        else { return false }
        field = integer
        return true
    }
}
