import FieldLogTestSupport
import Foundation
import Testing
import WalkModel

/// A walk whose journal is larger than fieldlog once read (64 MiB: 12 h at 10 Hz) is listed, shown, tailed
/// and exported whole by the real binary, each command within 64 MB of memory. (The 48-hour walk at 10 Hz is
/// bench/long-walk.py's.)
struct LongWalkTests {
    let directory = Harness.temporaryDirectory()
    static let walk = "20261118T094640Z"
    static let fixes = 470_000

    /// Writes the journal: a straight walk at 10 Hz, a milestone every 100 m, left open. Returns its size.
    func writeJournal(state: String) throws -> Int {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let start = Timestamp.parse("2026-11-18T09:46:40Z")!
        var text = #"{"every":100,"time":"2026-11-18T09:46:40Z","type":"walk_start","walk":"\#(Self.walk)"}"# + "\n"
        text.reserveCapacity(Self.fixes * 170)
        for n in 0..<Self.fixes {
            let time = Timestamp.format(start + Double(n) / 10)
            let metres = Double(n) * 0.14
            let latitude = String(format: "%.7f", 55.95 + metres / 111_195)
            text +=
                #"{"alt":40,"dist":\#(String(format: "%.2f", metres)),"eph":4,"lat":\#(latitude),"lon":-3.2,"mode":3,"#
                + #""seg":0,"speed":1.4,"time":"\#(time)","track":0,"type":"fix"}"# + "\n"
            if n % 715 == 0 {
                text +=
                    #"{"dist":\#(String(format: "%.2f", metres)),"index":\#(n / 715),"lat":\#(latitude),"lon":-3.2,"#
                    + #""time":"\#(time)","type":"milestone"}"# + "\n"
            }
        }
        try text.write(toFile: state + "/walk-\(Self.walk).jsonl", atomically: false, encoding: .utf8)
        return text.utf8.count
    }

    @Test func aWalkLargerThan64MiBIsListedShownTailedAndExportedWhole() async throws {
        let state = directory + "/state"
        let size = try writeJournal(state: state)
        #expect(size > 64 << 20)
        var outcomes: [String: Outcome] = [:]
        let exports = ["json", "gpx", "geojson", "html"].map {
            ["export", "--cache-dir", directory + "/cache", directory + "/walk.\($0)"]
        }
        for command in [["walks"], ["status"], ["tail", "-n", "5"]] + exports {
            // GNU time's child is forked afresh: its peak is its own, not the test runner's it was spawned from.
            let peakFile = directory + "/peak"
            let outcome = try await Child(
                "/usr/bin/time",
                ["-f", "%M", "-o", peakFile, Harness.fieldlog, command[0], "--state-dir", state] + command.dropFirst(),
                in: directory
            ).wait(timeout: 300)
            #expect(outcome.status == 0, "\(command): \(outcome.stderr)")
            let peak =
                Int(
                    try String(contentsOfFile: peakFile, encoding: .utf8).trimmingCharacters(
                        in: .whitespacesAndNewlines)) ?? .max
            #expect(peak < 64 << 10, "\(command): \(peak) KiB at most")
            outcomes[command.count > 3 ? command[3] : command.joined(separator: " ")] = outcome
        }
        #expect(outcomes["walks"]?.stdout.contains(Self.walk) == true)
        let distance = Int((Double(Self.fixes - 1) * 0.14).rounded())
        #expect(
            outcomes["status"]?.stdout.contains("walk       \(Self.walk) (open)") == true,
            "\(outcomes["status"]?.stdout ?? "")")
        #expect(outcomes["status"]?.stdout.contains("distance   \(distance) m, 658 milestones") == true)
        #expect(outcomes["tail -n 5"]?.stdout.split(separator: "\n").count == 5)
        let json = try String(contentsOfFile: directory + "/walk.json", encoding: .utf8)
        #expect(json.components(separatedBy: #"{"time":"#).count - 1 == Self.fixes)
        #expect(json.hasSuffix("\n]}\n"))
        let gpx = try String(contentsOfFile: directory + "/walk.gpx", encoding: .utf8)
        #expect(gpx.components(separatedBy: "<trkpt").count - 1 == Self.fixes)
        #expect(gpx.components(separatedBy: "<wpt").count - 1 == 658)
        let geojson = try Data(contentsOf: URL(fileURLWithPath: directory + "/walk.geojson"))
        let collection = try #require(try JSONSerialization.jsonObject(with: geojson) as? [String: Any])
        let features = try #require(collection["features"] as? [[String: Any]])
        let track = try #require(features.first?["geometry"] as? [String: Any])
        #expect((track["coordinates"] as? [[Double]])?.count == Self.fixes)
        #expect(features.count == 659)
        let html = try String(contentsOfFile: directory + "/walk.html", encoding: .utf8)
        #expect(html.components(separatedBy: "<article").count - 1 == 658)
    }
}
