import FieldLogFakes
import FieldLogTestSupport
import Foundation
import Recording
import Testing
import WalkJournal
import WalkModel

/// What a receiver (through gpsd) can say that no walk means: times in 2100, a 1024-week rollover, a
/// cold-start clock, speeds of 1e308 or 1000 m/s, a line longer than libgps takes. fieldlog runs against
/// FakeGPSD; the assertions are on the journal, status.json, `fieldlog status` and the export of the latest
/// walk. Deadlines are bounds against hangs, never measurements.
@Suite(.serialized)
struct HostileGPSTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var store: JournalStore { JournalStore(directory: state) }

    static let start = Timestamp.parse("2026-05-18T09:00:00Z")!
    static let rolloverPeriod = 1024.0 * 7 * 86_400

    /// Walking east at 1.4 m/s from 52.85 N 5.31 E, one fix a second from `start`.
    static func longitude(_ second: Int) -> Double {
        5.31 + Double(second) * 1.4 / (111_320 * cos(52.85 * .pi / 180))
    }

    /// The walk's fix of second `second`, dated `offset` seconds off the truth.
    static func fix(_ second: Int, offset: Double = 0, speed: String = "1.4") -> String {
        FakeGPSD.tpv(
            time: Timestamp.format(start + Double(second) + offset), lat: 52.85, lon: longitude(second), speed: speed)
    }

    static func fixes(_ seconds: Range<Int>, offset: Double = 0) -> [String] {
        seconds.map { fix($0, offset: offset) }
    }

    /// Starts `fieldlog run` (reconnecting, until SIGTERM) against a FakeGPSD playing `script`.
    func record(
        _ options: [String] = [], script: @escaping @Sendable (Int) -> FakeGPSD.Script
    ) async throws -> (Child, FakeGPSD) {
        let gpsd = try await FakeGPSD.start(script: script)
        let recorder = try Child(
            Harness.fieldlog,
            ["run", "--gpsd", gpsd.address, "--state-dir", state, "--log-level", "warning"] + options,
            in: directory)
        return (recorder, gpsd)
    }

    /// Runs `fieldlog run --once` against one connection's script, to its end.
    @discardableResult
    func recordOnce(_ lines: [String]) async throws -> Outcome {
        let gpsd = try await FakeGPSD.start { _ in .init(lines: lines) }
        defer { Task { await gpsd.stop() } }
        let outcome = try await fieldlog(
            ["run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--log-level", "warning"], in: directory,
            timeout: 60)
        #expect(outcome.status == 0, "\(outcome.status): \(outcome.stderr)")
        return outcome
    }

    func walks() throws -> [WalkLog] {
        try store.walkIDs().map { try store.read($0) }
    }

    func points() -> Int {
        ((try? store.walkIDs()) ?? []).compactMap { try? store.read($0).points.count }.reduce(0, +)
    }

    func waitFor(points count: Int, timeout: Double = 30) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while points() < count && Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func events(_ log: WalkLog, _ kind: JournalEvent.Kind) -> [JournalEvent] {
        log.events.filter { $0.kind == kind }
    }

    /// The whole state directory's journals as text, for what must never be in them.
    func journalText() throws -> String {
        try store.walkIDs().map { try String(contentsOfFile: store.path(for: $0), encoding: .utf8) }.joined()
    }

    /// Once, one fix dated 2100 opened a walk `21000101T000000Z` and every later fix was dropped as "time did
    /// not advance" (31 of 60 kept), while status said "last fix 0 s ago".
    @Test func aFixDatedTwentyOneHundredMidWalkIsHeldAndTheWalkGoesOn() async throws {
        let lines =
            Self.fixes(0..<30) + [FakeGPSD.tpv(time: "2100-01-01T00:00:00.000Z", lat: 52.85, lon: Self.longitude(30))]
            + Self.fixes(30..<60)
        let port = Harness.freePort()
        let (recorder, gpsd) = try await record(["--http", "127.0.0.1:\(port)"]) { _ in
            .init(lines: lines, closeAtEnd: false)
        }
        defer { recorder.reap() }
        // The last fix is journaled when gpsd goes quiet (2 s).
        try await waitFor(points: 60)
        // The page's process starts beside the recorder and reads its status within a second or so.
        #expect(
            await waitUntil(timeout: 60) {
                RawHTTP.get("/", port: port, readFor: 5).body.contains("1 fix dropped for an implausible GPS time")
            }, "the live page's status line")
        let status = try await fieldlog(["status", "--state-dir", state], in: directory)
        #expect(status.status == 0)
        #expect(status.stdout.contains("walk       20260518T090000Z (open)"), "\(status.stdout)")
        #expect(
            status.stdout.contains(
                "dropped    1 fix for an implausible GPS time (the latest from 2100-01-01T00:00:00Z), 0 for accuracy"),
            "\(status.stdout)")
        #expect(StatusFile.read(directory: state)?.recording.suspectFixes == 1)
        recorder.signal(SIGTERM)
        #expect(await recorder.wait(timeout: 20).status == 0)
        await gpsd.stop()

        let logs = try walks()
        #expect(logs.map(\.id) == ["20260518T090000Z"])
        let log = try #require(logs.first)
        #expect(log.points.count == 60, "every good fix journaled")
        #expect(log.points.map(\.fix.time) == (0..<60).map { Self.start + Double($0) })
        let suspect = events(log, .timeSuspect)
        #expect(suspect.count == 1)
        #expect(
            suspect.first?.message
                == "1 fix dropped for an implausible GPS time, from 2100-01-01T00:00:00Z (ahead of the monotonic clock)"
        )
        // After the recorder stopped, the latest walk is the one walked.
        let export = try await fieldlog(["export", "--state-dir", state, "--format", "json", "-"], in: directory)
        let exported = try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [String: Any]
        #expect((exported?["walk"] as? [String: Any])?["id"] as? String == "20260518T090000Z")
        #expect((exported?["track"] as? [Any])?.count == 60)
        print(
            "2100 fix mid-walk: walks \(logs.map(\.id)), \(log.points.count) of 60 good fixes journaled in the first, "
                + "\(suspect.count) time_suspect event")
    }

    /// A stretch of fixes 1024 weeks in the past (the week-rollover bug): held and dropped, counted once.
    @Test func aWeekRolloverStretchIsDroppedAndCountedOnce() async throws {
        let images = (20..<120).map { Self.fix($0, offset: -Self.rolloverPeriod) }
        try await recordOnce(Self.fixes(0..<20) + images + Self.fixes(20..<60))
        let logs = try walks()
        #expect(logs.map(\.id) == ["20260518T090000Z"], "no walk in 2006")
        let log = try #require(logs.first)
        #expect(log.points.count == 60)
        let suspect = events(log, .timeSuspect)
        #expect(
            suspect.map(\.message) == [
                "100 fixes dropped for an implausible GPS time, from 2006-10-02T09:00:20Z (before 2010 or after 9999)"
            ])
        let saved = try #require(StatusFile.read(directory: state))
        #expect(saved.recording.suspectFixes == 100)
        #expect(saved.recording.lastSuspectTime.map(Timestamp.format) == "2006-10-02T09:00:20Z")
        print(
            "rollover stretch: \(log.points.count) of 60 good fixes journaled, \(saved.recording.suspectFixes) held and dropped, "
                + "\(suspect.count) event")
    }

    /// A receiver's cold-start clock (its firmware's date) after a restart: the interrupted walk used to be
    /// closed and a walk opened in 2019, then another at the real time.
    @Test func aColdStartClockAfterARestartNeitherOpensAWalkNorEndsTheOneInterrupted() async throws {
        try await recordOnce(Self.fixes(0..<20))
        let coldStart = Timestamp.parse("2019-04-07T00:00:00Z")! - (Self.start + 20)
        try await recordOnce((20..<35).map { Self.fix($0, offset: coldStart) } + Self.fixes(140..<180))
        let logs = try walks()
        #expect(logs.map(\.id) == ["20260518T090000Z"], "no walk in 2019")
        let log = try #require(logs.first)
        #expect(log.points.count == 60)
        #expect(log.isOpen)
        #expect(events(log, .resumed).count == 1)
        let suspect = events(log, .timeSuspect)
        #expect(
            suspect.map(\.message) == [
                "15 fixes dropped for an implausible GPS time, from 2019-04-07T00:00:00Z (before the last good time)"
            ])
        print(
            "cold-start clock after a restart: walks \(logs.map(\.id)), \(log.points.count) of 60 good fixes journaled in "
                + "the first, \(suspect.count) time_suspect event")
    }

    /// A receiver that corrects its time by 3 hours, every fix after agreeing: the new time is taken after
    /// five fixes, and every fix is journaled (the walk ends: 3 hours is beyond the idle gap).
    @Test func aConsistentTimeCorrectionIsAcceptedAndNoFixIsLost() async throws {
        try await recordOnce(Self.fixes(0..<30) + Self.fixes(30..<60, offset: 3 * 3600))
        let logs = try walks()
        #expect(logs.map(\.id) == ["20260518T090000Z", "20260518T120030Z"])
        #expect(logs.map(\.points.count) == [30, 30])
        #expect(logs.flatMap { events($0, .timeSuspect) }.isEmpty)
        let jumps = logs.flatMap { events($0, .timeJump) }
        #expect(
            jumps.map(\.message) == [
                "GPS time moved from 2026-05-18T09:00:29Z to 2026-05-18T12:00:30Z, confirmed by 5 fixes in a row"
            ])
        #expect(StatusFile.read(directory: state)?.recording.suspectFixes == 0)
        print(
            "consistent correction of +3 h: \(logs.map(\.points.count)) fixes journaled in \(logs.count) walks, "
                + "\(jumps.count) time_jump event")
    }

    /// Speeds of 1e308 crashed the recorder ("Unable to encode Double.inf ... dist") and left
    /// `"dist":100000000000` in the journal; 1000 m/s while the position moved 4 m added 3 km. A line longer
    /// than libgps takes drops the connection (already before; here it must not end the walk).
    @Test func absurdSpeedsNeverReachTheDistanceNorTheJournal() async throws {
        let control = try await distance(of: Self.fixes(0..<60))
        try? FileManager.default.removeItem(atPath: state)
        var lines = Self.fixes(0..<60)
        for second in 10..<13 { lines[second] = Self.fix(second, speed: "1e308") }
        for second in 20..<23 { lines[second] = Self.fix(second, speed: "1e999") }
        for second in 30..<33 { lines[second] = Self.fix(second, speed: "-1") }
        for second in 40..<43 { lines[second] = Self.fix(second, speed: "1000") }
        for second in 50..<53 { lines[second] = Self.fix(second, speed: "NaN") }
        let huge = FakeGPSD.tpv(
            time: Timestamp.format(Self.start + 45), lat: 52.85, lon: Self.longitude(45),
            device: String(repeating: "A", count: 100_000))
        let (first, second) = (Array(lines[..<45]) + [huge], Array(lines[45...]))
        let (recorder, gpsd) = try await record { connection in
            .init(lines: connection == 1 ? first : second, closeAtEnd: false)
        }
        defer { recorder.reap() }
        try await waitFor(points: 60)
        #expect(recorder.isRunning, "fieldlog died: \(recorder.reap().stderr)")
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 20)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(gpsd.connections == 2, "the huge line dropped the connection once")
        await gpsd.stop()

        let log = try #require(try walks().first)
        let journal = try journalText()
        #expect(log.points.count == 60, "\(journal) \(outcome.stderr)")
        #expect(abs(log.distance - control) < 5, "\(log.distance) m against \(control) m without the bad speeds")
        #expect(log.milestones.count == 1)
        let text = try journalText()
        for absurd in ["inf", "nan", "e+", "e308", "100000000000"] {
            #expect(!text.lowercased().contains(absurd), "\(absurd) in the journal")
        }
        print(
            "absurd speeds (1e308, 1e999, -1, 1000 m/s, NaN, 3 fixes each) and a 100 kB line: \(log.points.count) fixes, "
                + "\(String(format: "%.1f", log.distance)) m against \(String(format: "%.1f", control)) m in the control run"
        )
    }

    /// A journal that already holds an absurd distance (what a speed of 1e308 left before) is not resumed:
    /// it is closed at the distance its fixes give, and a new walk starts from 0.
    @Test func aJournalWithAnAbsurdDistanceIsNotResumed() async throws {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        var lines = [#"{"every":100,"time":"2026-05-18T09:00:00Z","type":"walk_start","walk":"20260518T090000Z"}"#]
        for second in 0..<10 {
            let distance = second < 8 ? String(format: "%.1f", 1.4 * Double(second)) : "100000000000"
            lines.append(
                #"{"dist":\#(distance),"eph":5,"lat":52.85,"lon":\#(Self.longitude(second)),"mode":3,"seg":0,"speed":1.4,"#
                    + #""time":"\#(Timestamp.format(Self.start + Double(second)))","track":90,"type":"fix"}"#)
            if second == 0 {
                lines.append(
                    #"{"dist":0,"index":0,"lat":52.85,"lon":5.31,"time":"2026-05-18T09:00:00Z","type":"milestone"}"#)
            }
        }
        try (lines.joined(separator: "\n") + "\n").write(
            toFile: store.path(for: "20260518T090000Z"), atomically: true, encoding: .utf8)
        try await recordOnce(Self.fixes(10..<30))
        let logs = try walks()
        #expect(logs.map(\.id) == ["20260518T090000Z", "20260518T090010Z"])
        guard logs.count == 2 else { return }
        #expect(!logs[0].isOpen)
        #expect(logs[0].distance < 20, "closed at what its fixes give: \(logs[0].distance) m")
        #expect(
            events(logs[0], .error).first?.message?.hasPrefix("not resumed: a distance of 100000000000.0 m in 9 s")
                == true)
        #expect(logs[1].points.count == 20)
        #expect(logs[1].distance < 40)
        let walksOutput = try await fieldlog(["walks", "--state-dir", state], in: directory)
        #expect(!walksOutput.stdout.contains("100000000000"), "\(walksOutput.stdout)")
        print(
            "journal holding 100000000000 m: closed at \(String(format: "%.1f", logs[0].distance)) m, new walk of "
                + "\(logs[1].points.count) fixes, \(String(format: "%.1f", logs[1].distance)) m")
    }

    /// The distance fieldlog journals for `lines` in a state directory of its own.
    func distance(of lines: [String]) async throws -> Double {
        try await recordOnce(lines)
        return try #require(try walks().first).distance
    }
}
