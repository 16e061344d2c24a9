/// RFC 3339 UTC timestamps ("2026-11-22T09:47:36.2Z") for GPS times, without Foundation's
/// date formatters, which are slow and locale-sensitive.
package enum Timestamp {
    /// Formats seconds since 1970 as RFC 3339 UTC, with milliseconds only when they are not zero.
    package static func format(_ time: Double) -> String {
        var text = [UInt8]()
        text.reserveCapacity(24)
        write(time, into: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// `format`, appended to `bytes`: every fix line and every exported track point has a time, and
    /// making a String of each was most of what writing them cost.
    package static func write(_ time: Double, into bytes: inout [UInt8]) {
        var seconds = time.rounded(.down)
        var millis = Int(((time - seconds) * 1000).rounded())
        if millis == 1000 {
            seconds += 1
            millis = 0
        }
        let total = Int64(seconds)
        let days = total >= 0 ? total / 86400 : (total - 86399) / 86400
        let secondOfDay = Int(total - days * 86400)
        let (year, month, day) = civil(fromDays: days)
        guard (0...9999).contains(year) else {
            return bytes.append(contentsOf: formatAnyYear(year, month, day, secondOfDay, millis).utf8)
        }
        let zero = UInt8(ascii: "0")
        let year4 = Int(year)
        bytes.append(zero + UInt8(year4 / 1000))
        bytes.append(zero + UInt8(year4 / 100 % 10))
        appendTwoDigits(year4 % 100, then: UInt8(ascii: "-"), to: &bytes)
        appendTwoDigits(month, then: UInt8(ascii: "-"), to: &bytes)
        appendTwoDigits(day, then: UInt8(ascii: "T"), to: &bytes)
        appendTwoDigits(secondOfDay / 3600, then: UInt8(ascii: ":"), to: &bytes)
        appendTwoDigits(secondOfDay / 60 % 60, then: UInt8(ascii: ":"), to: &bytes)
        bytes.append(zero + UInt8(secondOfDay % 60 / 10))
        bytes.append(zero + UInt8(secondOfDay % 10))
        if millis != 0 {
            bytes.append(UInt8(ascii: "."))
            bytes.append(zero + UInt8(millis / 100))
            if millis % 100 != 0 {
                bytes.append(zero + UInt8(millis / 10 % 10))
                if millis % 10 != 0 { bytes.append(zero + UInt8(millis % 10)) }
            }
        }
        bytes.append(UInt8(ascii: "Z"))
    }

    private static func appendTwoDigits(_ value: Int, then separator: UInt8, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "0") + UInt8(value / 10))
        bytes.append(UInt8(ascii: "0") + UInt8(value % 10))
        bytes.append(separator)
    }

    /// Years before 0 or after 9999, which no receiver reports but a corrupt journal line can hold.
    private static func formatAnyYear(
        _ year: Int64, _ month: Int, _ day: Int, _ secondOfDay: Int, _ millis: Int
    ) -> String {
        var text = pad(Int(year), 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
        text += "T" + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":"
        text += pad(secondOfDay % 60, 2)
        if millis != 0 {
            text += "." + pad(millis, 3)
            while text.hasSuffix("0") { text.removeLast() }
        }
        return text + "Z"
    }

    /// Parses what `format` writes, and any RFC 3339 time with a `Z` or numeric offset.
    package static func parse(_ text: String) -> Double? {
        var text = text
        return text.withUTF8(parse)
    }

    /// `parse` on UTF-8 bytes: the journal scanner reads times without making Strings of them.
    package static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == 45, bytes[7] == 45, bytes[10] == 84 || bytes[10] == 116,
            bytes[13] == 58, bytes[16] == 58,
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == 46 {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        var offset = 0
        switch bytes[index] {
        case 90, 122:  // Z z
            guard index + 1 == bytes.count else { return nil }
        case 43, 45:  // + -
            guard index + 6 == bytes.count, bytes[index + 3] == 58,
                let hours = number(index + 1, 2), let minutes = number(index + 4, 2), hours < 24, minutes < 60
            else { return nil }
            offset = (hours * 60 + minutes) * 60 * (bytes[index] == 45 ? -1 : 1)
        default:
            return nil
        }
        let days = self.days(fromCivil: Int64(year), month, day)
        // 2026-02-31 would roll over into March: a date must name a day its month has.
        guard civil(fromDays: days) == (Int64(year), month, day) else { return nil }
        let seconds = days * 86400 + Int64(hour * 3600 + minute * 60 + second - offset)
        return Double(seconds) + fraction
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    // Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian calendar).
    private static func days(fromCivil year: Int64, _ month: Int, _ day: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let shiftedMonth = Int64(month > 2 ? month - 3 : month + 9)
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146097 + dayOfEra - 719468
    }

    private static func civil(fromDays days: Int64) -> (Int64, Int, Int) {
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let dayOfEra = z - era * 146097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * shiftedMonth + 2) / 5 + 1)
        let month = Int(shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9)
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
