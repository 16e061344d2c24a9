import FieldLogTestSupport
import Foundation
import Testing

/// The reading commands when their output cannot be written: `>/dev/full` (ENOSPC on every write) used to
/// exit 0 with nothing written, since print's buffer is flushed at exit, unchecked.
struct CLIOutputTests {
    let directory = Harness.temporaryDirectory()

    /// Runs fieldlog with standard output sent to `target`.
    func fieldlog(_ arguments: [String], stdout target: String) async throws -> Outcome {
        try await Child("/bin/sh", ["-c", #"exec "$0" "$@" >"# + target, Harness.fieldlog] + arguments, in: directory)
            .wait(timeout: 60)
    }

    /// A state directory with one short walk.
    func stateWithAWalk() throws -> String {
        let state = directory + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let lines = [
            #"{"every":100,"time":"2026-05-18T09:00:00Z","type":"walk_start","walk":"20260518T090000Z"}"#,
            #"{"dist":0,"eph":5,"lat":52.85,"lon":5.31,"mode":3,"seg":0,"time":"2026-05-18T09:00:00Z","type":"fix"}"#,
            #"{"dist":0,"index":0,"lat":52.85,"lon":5.31,"time":"2026-05-18T09:00:00Z","type":"milestone"}"#,
            #"{"dist":1.4,"eph":5,"lat":52.85,"lon":5.31002,"mode":3,"seg":0,"time":"2026-05-18T09:00:01Z","type":"fix"}"#,
        ]
        try (lines.joined(separator: "\n") + "\n").write(
            toFile: state + "/walk-20260518T090000Z.jsonl", atomically: true, encoding: .utf8)
        return state
    }

    @Test(arguments: [["tail"], ["walks"], ["status"], ["export", "--format", "json", "-"]])
    func aFullStandardOutputIsAnError(command: [String]) async throws {
        let state = try stateWithAWalk()
        let arguments = [command[0], "--state-dir", state] + command.dropFirst()
        let written = try await fieldlog(arguments, stdout: directory + "/out.txt")
        #expect(written.status == 0, "\(written.stderr)")
        #expect(
            try String(contentsOfFile: directory + "/out.txt", encoding: .utf8).contains("20260518T090000Z")
                || command == ["tail"])
        let full = try await fieldlog(arguments, stdout: "/dev/full")
        #expect(full.status == 1, "\(command): exit \(full.status)")
        #expect(full.stderr == "fieldlog: cannot write to standard output: No space left on device\n", "\(full.stderr)")
    }
}
