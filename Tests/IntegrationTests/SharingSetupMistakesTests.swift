import FieldLogFakes
import FieldLogTestSupport
import Foundation
import Sharing
import Testing
import WalkJournal

/// Mistakes in setting up sharing never stop the walk: a password file that is missing, a FIFO, huge or
/// readable by everyone, and a password for plain mqtt:// to another host. The recorder records every fix, the
/// sharing process stays up (no restart), `fieldlog status` says what is wrong and the live page that it is.
@Suite(.serialized, .timeLimit(.minutes(4)), .enabled(if: Harness.gpsfakeAvailable))
final class SharingSetupMistakesTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    static let password = "file-Pa55word"

    init() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    enum Mistake: String, CaseIterable {
        case missing, fifo, huge, readableByAll
    }

    /// The password file for `mistake`, and what status says of it.
    func passwordFile(_ mistake: Mistake) throws -> (path: String, said: String) {
        let path = directory + "/share-password"
        switch mistake {
        case .missing:
            return (path, "cannot read the share password file \(path): No such file or directory")
        case .fifo:
            #expect(mkfifo(path, 0o600) == 0)
            return (path, "cannot read the share password file \(path): not a regular file")
        case .huge:
            // Sparse: a gigabyte that takes no disk, and must take no memory either.
            #expect(FileManager.default.createFile(atPath: path, contents: Data((Self.password + "\n").utf8)))
            #expect(truncate(path, 1 << 30) == 0)
            return (
                path, "cannot read the share password file \(path): 1073741824 bytes, more than the 4096 it may hold"
            )
        case .readableByAll:
            try (Self.password + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
            return (path, "the share password file \(path) is readable by every user of this device (chmod 600 it)")
        }
    }

    func points() -> Int {
        let store = JournalStore(directory: state)
        return ((try? store.walkIDs().last).flatMap { try? store.read($0) })?.points.count ?? 0
    }

    @Test(arguments: Mistake.allCases)
    func aBadPasswordFileNeverStopsTheWalk(mistake: Mistake) async throws {
        let server = try await FakeOwnTracksRecorder.start(user: "walker", password: Self.password)
        defer { server.stop() }
        let (path, said) = try passwordFile(mistake)
        let capture = try SharingHarness.walkCapture(seconds: 300, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.006, in: directory)
        let page = Harness.freePort()
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", state, "--share", server.url, "--share-device", "testdev",
                "--share-password-file", path, "--share-rate", "50", "--http", "127.0.0.1:\(page)",
            ],
            in: directory)
        defer { recorder.reap() }
        await gpsd.wait()
        #expect(await waitUntil(timeout: 30) { self.points() > 250 }, "every fix journaled: \(points())")
        #expect(recorder.isRunning)
        let shareLine = "share      \(server.url): " + (mistake == .readableByAll ? "connected" : "unusable")
        var status = try await fieldlog(["status", "--state-dir", state], in: directory)
        for _ in 0..<50 where !status.stdout.contains(shareLine) {
            try await Task.sleep(for: .milliseconds(300))
            status = try await fieldlog(["status", "--state-dir", state], in: directory)
        }
        let line = status.stdout.split(separator: "\n").first { $0.hasPrefix("share ") } ?? ""
        #expect(line.hasPrefix(shareLine) && line.contains(said), "\(status.stdout)")
        #expect(
            status.stdout.contains("live-share running") && !status.stdout.contains("restarted"), "\(status.stdout)")
        let livePage = RawHTTP.get("/", port: page, readFor: 10)
        // The page has no login: it says the state, not the reason (no path, host or user).
        let pageWord = mistake == .readableByAll ? "destination 1 connected" : "destination 1 unusable"
        #expect(livePage.body.contains(pageWord) && !livePage.body.contains(path), "the live page's sharing status")
        if mistake == .readableByAll {
            let (_, comparison) = try await SharingHarness.waitForAll(
                { server.stored.compactMap { try? JSONSerialization.jsonObject(with: $0.body) as? [String: Any] } },
                state: state)
            #expect(comparison.missing.isEmpty, "used all the same: missing \(comparison.missing.count)")
        } else {
            #expect(server.seen == 0, "nothing sent without its password")
        }
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 20)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.components(separatedBy: said).count - 1 == 1, "said once: \(outcome.stderr)")
        #expect(
            !outcome.stderr.contains(Self.password) && !status.stdout.contains(Self.password)
                && !livePage.body.contains(Self.password))
    }

    /// A password over plain mqtt:// to another host would cross the network in clear: refused, as plain http://
    /// is; the walk goes on. (192.0.2.1 is a documentation address: nothing is ever sent there.)
    @Test func aPasswordInClearToAnotherHostIsRefused() async throws {
        let path = directory + "/share-password"
        try (Self.password + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let url = "mqtt://walker@192.0.2.1/"
        let capture = try SharingHarness.walkCapture(seconds: 200, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.006, in: directory)
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", state, "--share", url, "--share",
                "http://127.0.0.1:9/pub",
                "--share-password-file", path,
            ],
            in: directory)
        defer { recorder.reap() }
        await gpsd.wait()
        #expect(
            await waitUntil(timeout: 30) {
                ShareStatusFile.read(directory: self.state)?.destinations.first?.connection == .unusable
            })
        #expect(
            ShareStatusFile.read(directory: state)?.destinations.map(\.destination) == [url, "http://127.0.0.1:9/pub"],
            "in the order given")
        let status = try await fieldlog(["status", "--state-dir", state], in: directory)
        #expect(
            status.stdout.contains("\(url): unusable") && status.stdout.contains("a password goes only over mqtts://"),
            "\(status.stdout)")
        #expect(points() > 150)
        recorder.signal(SIGTERM)
        #expect(await recorder.wait(timeout: 20).status == 0)
        // The check says so before anything runs.
        let check = try await fieldlog(
            ["run", "--check-config", "--share", "mqtt://walker:\(Self.password)@broker/"], in: directory)
        #expect(
            check.status != 0 && check.stderr.contains("a password never goes in the URL")
                && !check.stderr.contains(Self.password))
    }
}
