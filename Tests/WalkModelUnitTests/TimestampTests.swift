import Foundation
import Testing
import WalkModel
import WalkSimulation

// RFC 3339 timestamps as the journal writes and reads them.

/// Civil date and time of `time` in UTC from Foundation's calendar, as an independent check (proleptic
/// Gregorian agrees with Foundation's Gregorian calendar after 1582).
private func foundationStamp(_ time: Double) -> String {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    let parts = calendar.dateComponents(
        [.year, .month, .day, .hour, .minute, .second], from: Date(timeIntervalSince1970: time.rounded(.down)))
    func pad(_ value: Int?, _ width: Int) -> String {
        let digits = String(value!)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
    return "\(pad(parts.year, 4))-\(pad(parts.month, 2))-\(pad(parts.day, 2))T"
        + "\(pad(parts.hour, 2)):\(pad(parts.minute, 2)):\(pad(parts.second, 2))"
}

@Test(arguments: [
    (0.0, "1970-01-01T00:00:00Z"),
    (-1.0, "1969-12-31T23:59:59Z"),
    (-0.5, "1969-12-31T23:59:59.5Z"),
    (-86400.0, "1969-12-31T00:00:00Z"),
    (-2_208_988_800.0, "1900-01-01T00:00:00Z"),
    (-2_203_891_200.0, "1900-03-01T00:00:00Z"),
    (951_782_400.0, "2000-02-29T00:00:00Z"),
    (951_868_800.0, "2000-03-01T00:00:00Z"),
    (978_307_199.999, "2000-12-31T23:59:59.999Z"),
    (1_700_000_000.25, "2023-11-14T22:13:20.25Z"),
    (1_700_000_000.005, "2023-11-14T22:13:20.005Z"),
    (1_700_000_000.05, "2023-11-14T22:13:20.05Z"),
    (1_700_000_000.105, "2023-11-14T22:13:20.105Z"),
    (1_779_443_256.2, "2026-05-22T09:47:36.2Z"),
    (4_107_456_000.0, "2100-02-28T00:00:00Z"),
    (4_107_542_400.0, "2100-03-01T00:00:00Z"),
    (4_133_980_799.0, "2100-12-31T23:59:59Z"),
    (253_402_300_799.0, "9999-12-31T23:59:59Z"),
])
func formatsKnownTimes(time: Double, text: String) {
    #expect(Timestamp.format(time) == text)
    let parsed = Timestamp.parse(text)
    #expect(parsed != nil)
    #expect(abs((parsed ?? .nan) - time) < 0.0005)
}

@Test func leapDaysFollowTheGregorianRules() {
    // 2000 is a leap year (divisible by 400), 1900 and 2100 are not, 2024 is.
    let cases: [(String, String)] = [
        ("2000-02-28T12:00:00Z", "2000-02-29T12:00:00Z"),
        ("2000-02-29T12:00:00Z", "2000-03-01T12:00:00Z"),
        ("1900-02-28T12:00:00Z", "1900-03-01T12:00:00Z"),
        ("2100-02-28T12:00:00Z", "2100-03-01T12:00:00Z"),
        ("2024-02-28T12:00:00Z", "2024-02-29T12:00:00Z"),
        ("2099-12-31T23:59:59Z", "2100-01-01T23:59:59Z"),
        ("1999-12-31T00:00:00Z", "2000-01-01T00:00:00Z"),
    ]
    for (day, next) in cases {
        let time = Timestamp.parse(day)
        #expect(time.map { Timestamp.format($0 + 86400) } == next, "day after \(day)")
    }
    #expect(Timestamp.parse("2001-01-01T00:00:00Z")! - Timestamp.parse("2000-01-01T00:00:00Z")! == 366 * 86400)
    #expect(Timestamp.parse("2101-01-01T00:00:00Z")! - Timestamp.parse("2100-01-01T00:00:00Z")! == 365 * 86400)
}

@Test func formatAndParseRoundTripOverManyTimes() {
    var random = SplitMix(seed: 2026)
    let earliest = Timestamp.parse("1900-01-01T00:00:00Z")!
    let latest = Timestamp.parse("2200-01-01T00:00:00Z")!
    var failures = 0
    for round in 0..<20_000 {
        let second = random.next(in: earliest..<latest).rounded(.down)
        // Whole seconds, and milliseconds of every kind: .5, .25, .125, .001, .999 ...
        let millis = round % 4 == 0 ? 0 : Int(random.next() % 1000)
        let time = second + Double(millis) / 1000
        let text = Timestamp.format(time)
        let parsed = Timestamp.parse(text)
        let ok =
            parsed.map { Int64(($0 * 1000).rounded()) == Int64(second) * 1000 + Int64(millis) } == true
            && text.hasPrefix(foundationStamp(time))
            && (millis == 0) == !text.contains(".")
            && parsed.map(Timestamp.format) == text
        if !ok {
            failures += 1
            if failures <= 5 {
                Issue.record(
                    "\(time): formatted \(text), parsed back \(String(describing: parsed)), Foundation says \(foundationStamp(time))"
                )
            }
        }
    }
    #expect(failures == 0)
}

@Test func timesAroundTheEpochAndLeapDaysRoundTrip() {
    var failures: [String] = []
    for base in ["1970-01-01T00:00:00Z", "2000-01-01T00:00:00Z", "2100-03-01T00:00:00Z", "1904-03-01T00:00:00Z"] {
        let center = Timestamp.parse(base)!
        for offset in stride(from: -3 * 86400.0, through: 3 * 86400.0, by: 997) {
            let time = center + offset
            let text = Timestamp.format(time)
            if Timestamp.parse(text) != time || !text.hasPrefix(foundationStamp(time)) {
                failures.append("\(time): \(text), Foundation says \(foundationStamp(time))")
            }
        }
    }
    #expect(failures.isEmpty, "\(failures.count) failures, first: \(failures.prefix(3))")
}

@Test func millisecondsRoundToTheNearestAndCarry() {
    #expect(Timestamp.format(0.0004) == "1970-01-01T00:00:00Z")
    #expect(Timestamp.format(0.0006) == "1970-01-01T00:00:00.001Z")
    #expect(Timestamp.format(59.9996) == "1970-01-01T00:01:00Z")
    #expect(Timestamp.format(-0.0004) == "1970-01-01T00:00:00Z")
    #expect(Timestamp.format(86399.9999) == "1970-01-02T00:00:00Z")
    #expect(Timestamp.format(0.1) == "1970-01-01T00:00:00.1Z")
    #expect(Timestamp.format(0.12) == "1970-01-01T00:00:00.12Z")
    #expect(Timestamp.format(0.010) == "1970-01-01T00:00:00.01Z")
}

@Test func parseAcceptsFractionsOfAnyLengthAndLowercase() throws {
    let base = try #require(Timestamp.parse("2026-11-22T09:47:36Z"))
    #expect(Timestamp.parse("2026-11-22T09:47:36.5Z") == base + 0.5)
    #expect(abs(try #require(Timestamp.parse("2026-11-22T09:47:36.123456Z")) - (base + 0.123456)) < 1e-6)
    #expect(Timestamp.parse("2026-11-22t09:47:36z") == base)
    #expect(Timestamp.parse("2026-11-22T09:47:36.000Z") == base)
}

@Test(arguments: [
    ("2026-11-22T10:47:36+01:00", "2026-11-22T09:47:36Z"),
    ("2026-11-22T04:17:36-05:30", "2026-11-22T09:47:36Z"),
    ("2026-11-22T09:47:36+00:00", "2026-11-22T09:47:36Z"),
    ("2026-11-22T09:47:36-00:00", "2026-11-22T09:47:36Z"),
    ("2026-11-23T00:47:36+15:00", "2026-11-22T09:47:36Z"),
    ("2026-01-01T00:30:00+01:00", "2025-12-31T23:30:00Z"),
    ("2000-03-01T00:30:00.25+02:00", "2000-02-29T22:30:00.25Z"),
    ("1969-12-31T23:00:00-01:00", "1970-01-01T00:00:00Z"),
])
func parseHonoursNumericOffsets(text: String, utc: String) {
    let time = Timestamp.parse(text)
    #expect(time != nil)
    #expect(time == Timestamp.parse(utc))
    #expect(time.map(Timestamp.format) == utc)
}

@Test(arguments: [
    "",
    "Z",
    "garbage",
    "2026-11-22",
    "2026-11-22T09:47:36",  // no zone
    "2026-11-22T09:47:36.5",  // no zone
    "2026-11-22T09:47Z",  // no seconds
    "2026-11-22T09:47:36.Z",  // empty fraction
    "2026-11-22T09:47:36ZZ",
    "2026-11-22T09:47:36Z ",
    " 2026-11-22T09:47:36Z",
    "2026-11-22 09:47:36Z",  // space instead of T: not what fieldlog writes
    "2026/11/22T09:47:36Z",
    "2026-11-22T09-47-36Z",
    "26-11-22T09:47:36Z",
    "2026-1-22T09:47:36Z",
    "2026-11-2T09:47:36Z",
    "2026-11-22T9:47:36Z",
    "2026-00-22T09:47:36Z",
    "2026-13-22T09:47:36Z",
    "2026-11-00T09:47:36Z",
    "2026-11-32T09:47:36Z",
    "2026-11-22T24:00:00Z",
    "2026-11-22T09:60:00Z",
    "2026-11-22T09:47:61Z",
    "2026-11-22T09:47:3xZ",
    "2026-11-22T09:47:36+01",
    "2026-11-22T09:47:36+0100",
    "2026-11-22T09:47:36+01:0",
    "2026-11-22T09:47:36+01:00Z",
    "2026-11-22T09:47:36+1:00",
    "2026-11-22T09:47:36 +01:00",
    "2026-11-22T09:47:36+01-00",
    "+2026-11-22T09:47:36Z",
    "-026-11-22T09:47:36Z",
    "２０26-11-22T09:47:36Z",
    "2026-02-29T09:47:36Z",
    "2026-02-31T09:47:36Z",
    "2026-04-31T09:47:36Z",
    "2100-02-29T00:00:00Z",
    "2026-11-22T09:47:36+24:00",
    "2026-11-22T09:47:36+01:60",
])
func parseRejectsMalformedText(text: String) {
    #expect(Timestamp.parse(text) == nil, "accepted \(text)")
}
