/// The output of one export, built as bytes. Numbers are written by hand as plain decimals: Swift's own
/// formatting switches to exponent notation (0.00001 is "1e-05"), which GPX's xsd:decimal rejects, and
/// String(format:) is too slow for a day-long track.
package struct ByteWriter {
    package private(set) var bytes: [UInt8] = []

    package init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    /// Hands what was written to `sink` once it holds `threshold` bytes or more, and starts again empty:
    /// what a long export holds is one chunk.
    package mutating func drain(over threshold: Int, into sink: ([UInt8]) throws -> Void) rethrows {
        guard !bytes.isEmpty, bytes.count >= threshold else { return }
        try sink(bytes)
        bytes.removeAll(keepingCapacity: true)
    }

    package mutating func append(_ text: String) {
        // Literals and native Strings are contiguous UTF-8: one copy, not a walk over the UTF8View.
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    package mutating func append(bytes more: some Sequence<UInt8>) {
        bytes.append(contentsOf: more)
    }

    package mutating func append(_ value: Int) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        appendDigits(UInt64(value.magnitude), width: 1)
    }

    /// Writes `value` rounded to `digits` (at most 9) decimals, without trailing zeros or exponent:
    /// 0.00001 → "0.00001", 12.50 → "12.5", 3.0 → "3", -0.0000000001 → "0".
    package mutating func appendDecimal(_ value: Double, digits: Int) {
        let scale = Self.powersOfTen[digits]
        // Values come from a JSON journal, so they are finite; a corrupted line can still hold any huge
        // number, which would overflow Int64. No real coordinate or distance comes near the limit.
        let limit = 1e11
        // NaN as 0: converting it to Int64 would stop the process.
        let bounded = value > limit ? limit : value < -limit ? -limit : value.isNaN ? 0 : value
        let scaled = Int64((bounded * Double(scale)).rounded())
        if scaled < 0 { bytes.append(UInt8(ascii: "-")) }
        appendDigits(scaled.magnitude / scale, width: 1)
        var fraction = scaled.magnitude % scale
        guard fraction != 0 else { return }
        var width = digits
        while fraction % 10 == 0 {
            fraction /= 10
            width -= 1
        }
        bytes.append(UInt8(ascii: "."))
        appendDigits(fraction, width: width)
    }

    /// RFC 3339 UTC, unquoted, for XML.
    package mutating func appendTime(_ time: Double) {
        Timestamp.write(time, into: &bytes)
    }

    /// A JSON string holding the RFC 3339 time, or `null` when it is unknown.
    package mutating func appendJSONTime(_ time: Double?) {
        guard let time else { return append("null") }
        bytes.append(UInt8(ascii: "\""))
        appendTime(time)
        bytes.append(UInt8(ascii: "\""))
    }

    /// A JSON number, or `null` when it is unknown.
    package mutating func appendJSONDecimal(_ value: Double?, digits: Int) {
        guard let value else { return append("null") }
        appendDecimal(value, digits: digits)
    }

    /// `,"key":value` when there is a value, nothing otherwise: a JSON field that is left out when unknown.
    package mutating func appendOptionalField(_ key: String, _ value: Double?, digits: Int) {
        guard let value else { return }
        append(",\"")
        append(key)
        append("\":")
        appendDecimal(value, digits: digits)
    }

    /// A JSON string literal, quotes included (RFC 8259 §7).
    package mutating func appendJSONString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0..<0x20:
                append("\\u00")
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0xF)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// XML character data, safe inside elements and double- or single-quoted attributes.
    package mutating func appendXMLText(_ text: String) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "&"): append("&amp;")
            case UInt8(ascii: "<"): append("&lt;")
            case UInt8(ascii: ">"): append("&gt;")
            case UInt8(ascii: "\""): append("&quot;")
            case UInt8(ascii: "'"): append("&apos;")
            case UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): bytes.append(byte)
            // XML 1.0 has no way to write other control characters, not even as references.
            case 0..<0x20: continue
            default: bytes.append(byte)
            }
        }
    }

    /// Writes `value` in decimal, left-padded with zeros to at least `width` digits (at most 20).
    private mutating func appendDigits(_ value: UInt64, width: Int) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            var rest = value
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            while 20 - start < width {
                start -= 1
                digits[start] = UInt8(ascii: "0")
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start..<20]))
        }
    }

    private static let powersOfTen: [UInt64] = [
        1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000,
    ]
    private static let hexDigits = Array("0123456789abcdef".utf8)
}

/// The one precision of every number fieldlog writes, in the journal and in every export: centimetres for
/// metres, 1e-7° (about a centimetre) for degrees. The journal keeps values rounded so that the journaled
/// value is the one recovery continues from.
package enum Precision {
    package static let degreeDigits = 7
    package static let metreDigits = 2

    package static func roundedMetres(_ value: Double) -> Double {
        (value * 100).rounded() / 100
    }

    package static func roundedDegrees(_ value: Double) -> Double {
        (value * 10_000_000).rounded() / 10_000_000
    }
}
