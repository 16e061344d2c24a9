import FieldLogTestSupport
import Foundation
import Logging
import Recording
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

/// `fieldlog run --http … --share …`: the live page and sharing in processes of their own. Each killed with
/// SIGKILL is started again and says so in `fieldlog status`, while the recorder keeps its pid and journals
/// every fix without a gap.
@Suite(.serialized, .enabled(if: Harness.gpsfakeAvailable, "needs gpsd and gpsfake (apt: gpsd gpsd-clients)"))
struct RecorderApartTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }

    func helper(_ name: String) -> StatusFile.Contents.Helper? {
        StatusFile.read(directory: state)?.helpers?.first { $0.name == name }
    }

    /// The phone, another device on the Wi-Fi than the attacker: its own address.
    func pageAnswers(_ port: UInt16) -> Bool {
        RawHTTP.get("/", port: port, readFor: 2, from: "127.0.0.2").head.hasPrefix("HTTP/1.1 200")
    }

    @Test func killedHelpersAreStartedAgainAndTheRecorderGoesOn() async throws {
        var walk = SyntheticWalk(heading: 30)
        walk.add([.walk(seconds: 70, speed: 1.4)])
        let capture = directory + "/walk.nmea"
        try walk.write(to: capture)
        let sentences = walk.nmea.utf8.filter { $0 == UInt8(ascii: "\n") }.count
        // About 35 s of replay: time to kill both helpers while fixes arrive.
        let gpsd = try await GPSFake(capture: capture, delay: 35.0 / Double(sentences), in: directory)
        let port = Harness.freePort()
        // Nothing listens where sharing sends: its process retries, which is all this test needs of it.
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", state, "--cache-dir", directory + "/cache",
                "--photo-sources", "none", "--http", "127.0.0.1:\(port)",
                "--share", "mqtt://127.0.0.1:\(Harness.freePort())/",
            ],
            in: directory)
        #expect(await waitUntil { helper("live-page")?.running == true && helper("live-share")?.running == true })
        #expect(await waitUntil { pageAnswers(port) })
        let recorderStatus = try #require(StatusFile.read(directory: state))
        #expect(recorderStatus.pid == recorder.pid)
        // libmosquitto (and the libssl it brings) is loaded by sharing's process only.
        let sharing = try #require(helper("live-share")?.pid)
        #expect(await waitUntil { Self.maps(sharing).contains("libmosquitto") })
        #expect(!Self.maps(recorder.pid).contains("libmosquitto"))

        for name in ["live-page", "live-share"] {
            let first = try #require(helper(name)?.pid)
            #expect(first != recorder.pid)
            kill(first, SIGKILL)
            #expect(
                await waitUntil {
                    guard let now = helper(name) else { return false }
                    return now.running && now.restarts == 1 && now.pid != first && now.lastExit == "killed by signal 9"
                }, "\(name) was not started again: \(String(describing: helper(name)))")
        }
        #expect(await waitUntil { pageAnswers(port) })
        let status = try await fieldlog(["status", "--state-dir", state], in: directory)
        #expect(status.stdout.contains("live-page  running"), "\(status.stdout)")
        #expect(status.stdout.contains("restarted 1 time (last ended: killed by signal 9)"), "\(status.stdout)")
        #expect(recorder.isRunning)

        await gpsd.wait()
        let helpers = [helper("live-page")?.pid, helper("live-share")?.pid].compactMap { $0 }
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 30)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        // The helpers end with the recorder.
        for pid in helpers { #expect(kill(pid, 0) != 0 && errno == ESRCH, "helper \(pid) outlived the recorder") }

        let store = JournalStore(directory: state)
        let log = try store.read(try #require(try store.walkIDs().last))
        let times = log.points.map(\.fix.time)
        #expect(times.count >= walk.fixes.count - 2, "\(times.count) of \(walk.fixes.count) fixes journaled")
        let largestGap = zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? 0
        #expect(largestGap <= 1.01, "a gap of \(largestGap) s in the journaled fixes")
    }

    /// A walk of about `hours` at 1 Hz journaled by the recorder's own code, and the same walk going on as a
    /// capture for gpsfake, so that `fieldlog run` resumes a journal of several MiB.
    func longWalkGoingOn(hours: Double, thenSeconds seconds: Int) throws -> (capture: String, fixes: Int) {
        var walk = SyntheticWalk(heading: 30)
        walk.add([.walk(seconds: Int(hours * 3600), speed: 1.4, turn: 0.01)])
        let recorder = try WalkRecorder(
            store: JournalStore(directory: state), limits: WalkLimits(), logger: quietLogger)
        for fix in walk.fixes { recorder.record(fix) }
        recorder.finishSession(reason: "test: the first part of the walk")
        walk.clear()
        walk.add([.walk(seconds: seconds, speed: 1.4)])
        let capture = directory + "/going-on.nmea"
        try walk.write(to: capture)
        return (capture, seconds)
    }

    /// 64 clients ask for the walk's export and never read it, against a recorder under the unit's memory limit
    /// (256 MiB) resuming a walk of several MiB: the recorder keeps its pid and journals every fix, and a phone
    /// still gets the page.
    @Test func clientsThatNeverReadCannotStopTheRecorder() async throws {
        let (capture, seconds) = try longWalkGoingOn(hours: 6, thenSeconds: 60)
        let store = JournalStore(directory: state)
        let walkID = try #require(try store.walkIDs().last)
        let journalBytes = try FileManager.default.attributesOfItem(atPath: store.path(for: walkID))[.size] as? Int ?? 0
        #expect(journalBytes > 3 << 20, "the journal is only \(journalBytes) bytes")
        let fixesBefore = try store.read(walkID).points.count
        let sentences = try Data(contentsOf: URL(fileURLWithPath: capture)).filter { $0 == UInt8(ascii: "\n") }.count
        let gpsdPort = Harness.freePort()
        let port = Harness.freePort()
        let cgroup = MemoryCgroup(limit: 256 << 20)
        defer { cgroup?.remove() }
        let run = [
            Harness.fieldlog, "run", "--gpsd", "127.0.0.1:\(gpsdPort)", "--state-dir", state, "--cache-dir",
            directory + "/cache", "--photo-sources", "none", "--http", "127.0.0.1:\(port)",
        ]
        let recorder = try Child(
            "/bin/sh", ["-c", (cgroup?.enterCommand ?? "") + "exec \"$@\"", "sh"] + run, in: directory)
        let started = Date()
        #expect(await waitUntil(timeout: 60) { pageAnswers(port) })
        let startup = Date().timeIntervalSince(started)
        let recorderPid = try #require(StatusFile.read(directory: state)?.pid)
        // The replay starts once the recorder has resumed the walk (it retries gpsd every 2 s at most, within the
        // replay's lead-in): however long a loaded machine takes to read the journal, every fix is fed to it.
        let gpsd = try await GPSFake(capture: capture, port: gpsdPort, delay: 40.0 / Double(sentences), in: directory)

        var attackers: [Int32] = []
        for _ in 0..<64 {
            guard let fd = Self.connectWithSmallReceiveBuffer(port: port) else { continue }
            let request = "GET /walk.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            attackers.append(fd)
        }
        var answered = 0
        var times: [Double] = []
        for _ in 0..<5 {
            try await Task.sleep(for: .seconds(3))
            let asked = Date()
            if pageAnswers(port) { answered += 1 }
            times.append(Date().timeIntervalSince(asked))
        }
        await gpsd.wait()
        for fd in attackers { close(fd) }
        #expect(answered >= 4, "the phone got the page \(answered) times of 5")
        #expect(recorder.isRunning)
        #expect(StatusFile.read(directory: state)?.pid == recorderPid)
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 30)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        if let cgroup { #expect(cgroup.peakBytes <= 256 << 20) }
        let log = try store.read(walkID)
        print(
            "64 clients never reading /walk.json of a \(journalBytes >> 10) KiB journal (page up after \(String(format: "%.1f", startup)) s): the phone's GET / answered \(answered) of 5 "
                + "(\(times.map { String(format: "%.2f", $0) }.joined(separator: ", ")) s); cgroup peak \((cgroup?.peakBytes ?? 0) >> 20) MiB, "
                + "OOM kills \(cgroup?.oomKills ?? 0); \(log.points.count - fixesBefore) of \(seconds) fixes journaled; recorder pid \(recorderPid) throughout"
        )
        #expect(
            log.points.count - fixesBefore >= seconds - 2,
            "\(log.points.count - fixesBefore) of \(seconds) fixes journaled; the recorder said:\n\(outcome.stderr)")
        #expect(log.events.filter { $0.kind == .sessionStart }.count == 1, "the recorder never restarted")
    }

    static func maps(_ pid: Int32) -> String {
        // Read to its end: procfs files say they are empty.
        FileHandle(forReadingAtPath: "/proc/\(pid)/maps").map {
            String(decoding: $0.readDataToEndOfFile(), as: UTF8.self)
        } ?? ""
    }

    /// A client with a 4 KiB receive buffer (set before connecting, so that the window stays small).
    static func connectWithSmallReceiveBuffer(port: UInt16) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var size: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(fd)
            return nil
        }
        return fd
    }
}
