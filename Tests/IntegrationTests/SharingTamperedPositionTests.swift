import FieldLogFakes
import FieldLogTestSupport
import Foundation
import Sharing
import Testing
import WalkJournal

/// A destination's position file (`share-*.state`) that cannot be read, or points outside the journals: said
/// once, and sharing resumes from the start of the latest walk, never silently from "now" nor never. Two walks
/// journaled as the recorder writes them; `fieldlog live-share` (as fieldlog-share.service runs it) sends.
@Suite(.serialized, .timeLimit(.minutes(4)))
final class SharingTamperedPositionTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }

    init() throws {
        try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    enum Tampering: String, CaseIterable {
        case corrupt, symlink, fifo, huge, negative, walkAfterEveryJournal, countBeyondTheWalk
    }

    /// Replaces the position file as `tampering` says; returns what the log says of it.
    func tamper(_ tampering: Tampering, path: String, url: String, latest: String) throws -> String {
        func position(walk: String, acknowledged: Int) throws {
            try "{\"url\":\"\(url)\",\"device\":\"testdev\",\"walk\":\"\(walk)\",\"acknowledged\":\(acknowledged)}\n"
                .write(toFile: path, atomically: true, encoding: .utf8)
        }
        let name = (path as NSString).lastPathComponent
        switch tampering {
        case .corrupt:
            try "{\"url\":\"\(url)\",\"walk\":".write(toFile: path, atomically: true, encoding: .utf8)
            return "its position file \(name) is unusable (not a position fieldlog wrote)"
        case .symlink:
            try position(walk: latest, acknowledged: 3)
            try FileManager.default.moveItem(atPath: path, toPath: path + ".elsewhere")
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: path + ".elsewhere")
            return "its position file \(name) is unusable (a symbolic link)"
        case .fifo:
            #expect(mkfifo(path, 0o644) == 0)
            return "its position file \(name) is unusable (not a regular file)"
        case .huge:
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            #expect(truncate(path, 1 << 30) == 0)
            return "its position file \(name) is unusable (1073741824 bytes, more than the 65536 it may hold)"
        case .negative:
            try position(walk: latest, acknowledged: -7)
            return "its position file \(name) is unusable (a negative count or time)"
        case .walkAfterEveryJournal:
            try position(walk: "29991231T235959Z", acknowledged: 0)
            return "its position points outside the journals (walk 29991231T235959Z is after every journal)"
        case .countBeyondTheWalk:
            try position(walk: latest, acknowledged: 1_000_000_000)
            return "its position points outside the journals (1000000000 messages of walk \(latest) acknowledged"
        }
    }

    @Test(arguments: Tampering.allCases)
    func theLatestWalkIsSentFromItsStart(tampering: Tampering) async throws {
        let store = JournalStore(directory: state)
        let earlier = try PendingWalks.write(
            start: 1_700_000_000, origin: (55.95, -3.2), milestones: 3, fixes: 60, in: store)
        let latest = try PendingWalks.write(
            start: 1_700_100_000, origin: (55.96, -3.2), milestones: 4, fixes: 90, in: store)
        #expect(earlier < latest)
        let server = try await FakeOwnTracksRecorder.start(user: "walker", password: nil)
        defer { server.stop() }
        let destination = try ShareDestination(url: server.url, device: "testdev")
        let said = try tamper(tampering, path: state + "/" + destination.stateFileName, url: server.url, latest: latest)
        let arguments = [
            "live-share", "--state-dir", state, "--share", server.url, "--share-device", "testdev",
            "--share-rate", "50", "--photo-sources", "none",
        ]
        let sharing = try Child(Harness.fieldlog, arguments, in: directory)
        defer { sharing.reap() }
        let expected = try SharingHarness.expected(state: state, from: latest)
        func received() -> [[String: Any]] {
            server.stored.compactMap { try? JSONSerialization.jsonObject(with: $0.body) as? [String: Any] }
        }
        #expect(
            await waitUntil(timeout: 60) {
                SharingHarness.compare(received: received(), expected: expected).missing.isEmpty
            })
        let comparison = SharingHarness.compare(received: received(), expected: expected)
        #expect(
            comparison.missing.isEmpty && comparison.unexpected.isEmpty && !comparison.outOfOrder
                && expected.count > 10,
            "the latest walk whole, nothing of the earlier one: missing \(comparison.missing), unexpected \(comparison.unexpected)"
        )
        // The status says so while this process runs.
        let status = ShareStatusFile.read(directory: state)?.destinations.first
        #expect(status?.notice?.contains(said) == true, "\(String(describing: status))")
        sharing.signal(SIGTERM)
        let outcome = await sharing.wait(timeout: 20)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let told = outcome.stderr.split(separator: "\n").filter {
            $0.contains(said) && $0.contains("sending from the start of walk \(latest)")
        }
        #expect(told.count == 1, "\(outcome.stderr)")
        // The position is sound again, at the walk's end: a second start says nothing and sends nothing again.
        #expect(SharingHarness.cursor(state: state)?.walk == latest)
        let seen = server.seen
        let again = try Child(Harness.fieldlog, arguments, in: directory)
        defer { again.reap() }
        #expect(await waitUntil(timeout: 30) { ShareStatusFile.read(directory: self.state)?.pid == again.pid })
        try await Task.sleep(for: .seconds(1))
        again.signal(SIGTERM)
        let second = await again.wait(timeout: 20)
        #expect(!second.stderr.contains("position") && server.seen == seen, "\(second.stderr)")
    }
}
