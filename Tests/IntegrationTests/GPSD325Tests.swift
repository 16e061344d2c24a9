import FieldLogTestSupport
import Foundation
import Testing
import WalkJournal

/// fieldlog against the gpsd of Debian 13 (3.25), run by gpsfake in an amd64 trixie root on loopback
/// (`sudo scripts/test-gpsd-trixie` makes the root and runs these). gpsd 3.25 starts a cycle at `$GLL`: for
/// the bundled capture's plotter it reports a speed of 0 with a course for 38 s while the boat goes on.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(
        if: Harness.trixieRoot != nil,
        "needs root and an amd64 trixie root with gpsd 3.25: sudo scripts/test-gpsd-trixie"))
struct GPSD325Tests {
    let directory = Harness.temporaryDirectory()

    @Test func theBundledCaptureMeasuresWithinThreePercentOfItsPositions() async throws {
        let gpsd = try await GPSFake(capture: Harness.capture("bundg_zeus_9"), root: Harness.trixieRoot, in: directory)
        let state = directory + "/state"
        let outcome = try await fieldlog(
            ["run", "--once", "--gpsd", gpsd.address, "--state-dir", state, "--photo-sources", "none"], in: directory)
        await gpsd.wait()
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let store = JournalStore(directory: state)
        let log = try store.read(try store.resolve(nil))
        // 427 m by its positions and by the receiver's own speed (gpsd 3.22); 316 m when a zero is believed.
        #expect(abs(log.distance - 427) < 0.03 * 427, "\(log.distance) m")
        #expect(log.milestones.count == 5)
    }
}
