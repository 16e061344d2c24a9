import FieldLogTestSupport
import Foundation
import Sharing
import Testing
import WalkModel

/// The parts of sharing that need no network: destination URLs, what the selector chooses from a journal, the
/// OwnTracks JSON, the durable position.
struct SharingOfflineTests {
    @Test func destinationURLs() throws {
        let mqtt = try ShareDestination(url: "mqtt://walker@broker.example.org/", device: "pi")
        #expect(
            mqtt.kind == .mqtt && !mqtt.tls && mqtt.port == 1883 && mqtt.topic == "owntracks/walker/pi"
                && mqtt.user == "walker")
        let mqtts = try ShareDestination(url: "mqtts://[::1]:9883/family/walk", device: "pi")
        #expect(mqtts.tls && mqtts.host == "::1" && mqtts.port == 9883 && mqtts.topic == "family/walk")
        let https = try ShareDestination(url: "https://walker@recorder.example.org/pub", device: "pi")
        #expect(
            https.kind == .http && https.tls && https.port == 443 && https.path == "/pub"
                && https.topic == "owntracks/walker/pi")
        #expect(try ShareDestination(url: "http://127.0.0.1:8083/pub", device: "pi").port == 8083)
        // The Recorder's own form: user and device in the query, taken from there (the user's case kept: the
        // Recorder lowercases), other parameters left in the path.
        let recorder = try ShareDestination(url: "http://127.0.0.1:8083/pub?u=Walker&x=1&d=pi%20zero", device: "vm")
        #expect(
            recorder.ownTracksUser == "Walker" && recorder.device == "pi zero" && recorder.path == "/pub?x=1"
                && recorder.user == nil && recorder.topic == "owntracks/Walker/pi zero")
        #expect(try ShareDestination(url: "https://walker@r.example.org/pub?u=WALKER", device: "pi").path == "/pub")
        #expect(try ShareDestination(url: "https://walker@r.example.org/pub", device: "pi").ownTracksUser == "walker")
        #expect(try ShareDestination(url: "https://r.example.org/pub", device: "pi").ownTracksUser == "fieldlog")
        // Refused: a password in the URL, plain http off loopback, wildcards, other schemes, no host.
        for url in [
            "mqtt://walker:secret@broker/", "http://recorder.example.org/pub", "mqtt://broker/owntracks/#",
            "ftp://broker/", "mqtt:///topic", "broker:1883", "mqtt://broker:99999/",
            "https://walker@r.example.org/pub?u=runner", "https://r.example.org/pub?u=&d=pi",
            "https://r.example.org/pub?d=",
        ] {
            #expect(throws: ShareError.self, "\(url)") { try ShareDestination(url: url, device: "pi") }
        }
        #expect((try? ShareDestination(url: "mqtt://walker:secret@broker/", device: "pi")) == nil)
        do {
            _ = try ShareDestination(url: "mqtt://walker:secret@broker/", device: "pi")
        } catch {
            #expect(!error.message.contains("secret"), "the refusal does not repeat the password")
        }
        // One state file per destination and device, stable.
        #expect(
            mqtt.stateFileName
                == (try ShareDestination(url: "mqtt://walker@broker.example.org/", device: "pi")).stateFileName)
        #expect(
            mqtt.stateFileName
                != (try ShareDestination(url: "mqtt://walker@broker.example.org/", device: "pj")).stateFileName)
        #expect(ShareDestination.sanitizedDevice("Raspberry Pi") == "raspberry-pi")
    }

    func point(_ second: Int, segment: Int = 0, speed: Double? = 1.4) -> TrackPoint {
        TrackPoint(
            fix: Fix(
                time: 1_700_000_000 + Double(second), latitude: 55 + Double(second) * 1e-5, longitude: -3,
                altitude: 80.4,
                horizontalError: 3.6, mode: 3, speed: speed, track: 45.2),
            segment: segment, distance: Double(second) * 1.4)
    }

    @Test func theSelectorChoosesByGPSTimeAndKeepsSegmentEndsAndMilestones() {
        var selector = ShareSelector(every: 10)
        var out: [ShareSelector.Content] = []
        out += selector.feed(.walkStart(id: "w", time: 1_700_000_000, every: 100))
        for second in 0..<40 {
            out += selector.feed(.point(point(second)))
            if second == 25 {
                let at = point(25)
                out += selector.feed(
                    .milestone(
                        Milestone(
                            index: 1, time: at.fix.time, latitude: at.fix.latitude,
                            longitude: at.fix.longitude, distance: 100)))
            }
        }
        out += selector.feed(.segment(SegmentBreak(index: 1, time: 1_700_000_100, gap: 60)))
        for second in 100..<105 { out += selector.feed(.point(point(second, segment: 1))) }
        out += selector.feed(.walkEnd(time: 1_700_000_104, distance: 200))
        let seconds = out.map { Int($0.time - 1_700_000_000) }
        // 0, 10, 20 by the rate; the milestone at 25 (with its fix); 35 ten seconds after it; 39 the segment's
        // last; 100 the next segment's first; 104 its last.
        #expect(seconds == [0, 10, 20, 25, 35, 39, 100, 104], "\(seconds)")
        if case let .milestone(milestone, fix) = out[3] {
            #expect(milestone.index == 1 && fix?.fix.time == point(25).fix.time)
        } else {
            Issue.record("a milestone expected at 25 s")
        }
        // A journal's first lines always give the same messages: fed again line by line, the same.
        var again = ShareSelector(every: 10)
        var count = 0
        count += again.feed(.walkStart(id: "w", time: 1_700_000_000, every: 100)).count
        for second in 0..<40 {
            count += again.feed(.point(point(second))).count
            if second == 25 {
                let at = point(25)
                count +=
                    again.feed(
                        .milestone(
                            Milestone(
                                index: 1, time: at.fix.time, latitude: at.fix.latitude,
                                longitude: at.fix.longitude, distance: 100))
                    ).count
            }
        }
        #expect(count == 5, "before the segment ends, 39 is still held back")
    }

    @Test func theRecorderStoppingReleasesTheLastPosition() {
        var selector = ShareSelector(every: 10)
        var out: [ShareSelector.Content] = []
        for second in 0..<14 { out += selector.feed(.point(point(second))) }
        #expect(out.map { Int($0.time - 1_700_000_000) } == [0, 10])
        out += selector.feed(.event(JournalEvent(kind: .sessionEnd, wall: 0)))
        #expect(out.map { Int($0.time - 1_700_000_000) } == [0, 10, 13])
    }

    @Test func ownTracksLocationFieldsAndUnits() throws {
        let options = OwnTracksMessage.Options(tid: "tw", topic: "owntracks/walker/pi", walk: "w")
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(OwnTracksMessage.encode(.fix(point(3)), options: options)))
                as? [String: Any])
        #expect(json["_type"] as? String == "location" && json["tst"] as? Int == 1_700_000_003)
        #expect(json["vel"] as? Int == 5, "1.4 m/s is 5 km/h")
        #expect(json["acc"] as? Int == 4 && json["alt"] as? Int == 80 && json["cog"] as? Int == 45)
        #expect(
            json["tid"] as? String == "tw" && json["topic"] as? String == "owntracks/walker/pi"
                && json["t"] as? String == "t")
        let still = try #require(
            try JSONSerialization.jsonObject(
                with: Data(OwnTracksMessage.encode(.fix(point(3, speed: 0)), options: options))) as? [String: Any])
        #expect(still["vel"] == nil, "zero is left out, as the apps do")
    }

    @Test func theDurablePositionRoundTrips() throws {
        let directory = Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let destination = try ShareDestination(url: "mqtt://walker@broker/", device: "pi")
        #expect(ShareCursor.read(destination, directory: directory) == .missing)
        let cursor = ShareCursor(
            url: destination.url, device: "pi", walk: "20240518T080001Z", acknowledged: 42, lastTst: 1_700_000_000,
            lastWall: 5)
        try cursor.write(destination, directory: directory)
        #expect(ShareCursor.read(destination, directory: directory) == .position(cursor))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".tmp") }
        #expect(leftovers.isEmpty)
    }

    /// A state file that is no position fieldlog wrote is told apart from none at all (a new destination).
    @Test func anUnusablePositionIsNotTakenForNone() throws {
        let directory = Harness.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let destination = try ShareDestination(url: "mqtt://walker@broker/", device: "pi")
        let path = directory + "/" + destination.stateFileName
        func reason() -> String? {
            if case let .unusable(reason) = ShareCursor.read(destination, directory: directory) { return reason }
            return nil
        }
        let contents = [
            "{\"url\":\"mqtt://walker@broker/\",\"device\":\"pi\",\"walk\":\"w\",\"acknow",
            "{\"url\":\"mqtt://walker@broker/\",\"device\":\"pi\",\"walk\":\"w\",\"acknowledged\":-5}",
            "{\"url\":\"mqtt://other@broker/\",\"device\":\"pi\",\"walk\":\"w\",\"acknowledged\":5}",
        ]
        for text in contents {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            #expect(reason() != nil, "\(text)")
        }
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "/etc/hostname")
        #expect(reason() == "a symbolic link")
        try FileManager.default.removeItem(atPath: path)
        #expect(mkfifo(path, 0o600) == 0)
        #expect(reason() == "not a regular file")
        try FileManager.default.removeItem(atPath: path)
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        #expect(truncate(path, 1 << 30) == 0)
        #expect(reason()?.hasSuffix("more than the 65536 it may hold") == true)
    }

    @Test func aRejectedDestinationIsAskedAgainEverLessOften() {
        let waits = (1...8).map { ShareRetry.afterRejection(first: 60, refusals: $0) }
        #expect(waits == [60, 120, 240, 480, 960, 1800, 1800, 1800])
        #expect(ShareRetry.afterRejection(first: 1, refusals: 1) == 1)
        #expect(ShareRetry.describe(60) == "60 s" && ShareRetry.describe(1800) == "30 min")
    }
}
