import FieldLogDaemon
import FieldLogTestSupport
import Foundation
import Logging
import ServiceLifecycle
import Testing

// The notify protocol against real AF_UNIX datagram sockets, the journald line format, and the unit file.

/// A datagram socket the test binds, standing in for systemd's notify socket.
private final class NotifySocket {
    let descriptor: Int32
    /// The value for `$NOTIFY_SOCKET`: a path, or '@' and an abstract name.
    let address: String
    private let path: String?

    init(abstract: Bool) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SocketError("socket: \(errno)") }
        let name: [UInt8]
        if abstract {
            address = "@fieldlog-test-\(UUID().uuidString)"
            name = [0] + Array(address.utf8.dropFirst())
            path = nil
        } else {
            let file = NSTemporaryDirectory() + "fieldlog-notify-\(UUID().uuidString.prefix(8))"
            address = file
            name = Array(file.utf8)
            path = file
        }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { $0.copyBytes(from: name) }
        let length = socklen_t(
            MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + name.count + (abstract ? 0 : 1))
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else { throw SocketError("bind \(address): \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(descriptor)
        if let path { unlink(path) }
    }

    /// The next datagram, or nil after 5 s (or at once with `wait: false`).
    func receive(wait: Bool = true) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes {
            recv(descriptor, $0.baseAddress, $0.count, wait ? 0 : Int32(MSG_DONTWAIT))
        }
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// The next datagram within 5 s, polled, so as not to block one of the few cooperative threads.
    func next() async -> String? {
        for _ in 0..<500 {
            if let message = receive(wait: false) { return message }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    struct SocketError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

@Suite
struct SystemdTests {
    @Test(arguments: [false, true])
    func notifierSendsReadyWatchdogStopping(abstract: Bool) throws {
        let socket = try NotifySocket(abstract: abstract)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.address], logger: quietLogger)
        #expect(notifier.isEnabled)
        notifier.ready()
        #expect(socket.receive() == "READY=1")
        notifier.watchdog()
        #expect(socket.receive() == "WATCHDOG=1")
        notifier.status("recording\nwalk 3")
        #expect(socket.receive() == "STATUS=recording walk 3")
        notifier.stopping(status: "stopping")
        #expect(socket.receive() == "STOPPING=1\nSTATUS=stopping")
        #expect(socket.receive(wait: false) == nil)
    }

    @Test func notifierIsSilentWithoutNotifySocket() throws {
        let socket = try NotifySocket(abstract: false)
        for environment in [[:], ["NOTIFY_SOCKET": ""], ["WATCHDOG_USEC": "30000000"]] {
            let notifier = SystemdNotifier(environment: environment, logger: quietLogger)
            #expect(!notifier.isEnabled)
            #expect(notifier.watchdogInterval == nil)
            notifier.ready()
            notifier.watchdog()
            notifier.stopping()
            #expect(!notifier.send(["READY=1"]))
        }
        #expect(socket.receive(wait: false) == nil)
    }

    @Test func notifierFailuresAreNotFatal() {
        for address in [
            "/nonexistent/fieldlog/notify", "@fieldlog-nobody-listens-\(UUID().uuidString)", "relative",
            "/" + String(repeating: "x", count: 200),
        ] {
            let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": address], logger: quietLogger)
            #expect(!notifier.send(["READY=1"]))
            #expect(!notifier.send(["WATCHDOG=1"]))
        }
    }

    @Test func watchdogIntervalIsHalfOfWatchdogUsec() {
        let pid = Int(getpid())
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000"], pid: pid) == .seconds(15))
        #expect(
            SystemdNotifier.watchdogInterval(
                environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(pid)"], pid: pid)
                == .seconds(15))
        #expect(
            SystemdNotifier.watchdogInterval(
                environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(pid + 1)"], pid: pid)
                == nil)
        for usec in ["0", "-5", "soon", ""] {
            #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": usec], pid: pid) == nil)
        }
        #expect(SystemdNotifier.watchdogInterval(environment: [:], pid: pid) == nil)
    }

    /// The service in a real ServiceGroup: READY=1 at start, WATCHDOG=1 while alive, STOPPING=1 on shutdown.
    @Test(arguments: [true, false])
    func serviceNotifiesAndPetsWhileAlive(alive: Bool) async throws {
        let socket = try NotifySocket(abstract: true)
        let notifier = SystemdNotifier(
            environment: ["NOTIFY_SOCKET": socket.address, "WATCHDOG_USEC": "100000"], logger: quietLogger)
        #expect(notifier.watchdogInterval == .milliseconds(50))
        let service = SystemdService(notifier: notifier, logger: quietLogger) { alive }
        let group = ServiceGroup(services: [service], logger: quietLogger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect(await socket.next() == "READY=1\nSTATUS=recording")
            if alive {
                #expect(await socket.next() == "WATCHDOG=1")
                #expect(await socket.next() == "WATCHDOG=1")
            } else {
                try await Task.sleep(for: .milliseconds(300))
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        var rest: [String] = []
        while let message = socket.receive(wait: false) { rest.append(message) }
        // Pets may still arrive before the shutdown; STOPPING=1 is the last word either way.
        #expect(rest.last?.hasPrefix("STOPPING=1\n") == true)
        #expect(rest.dropLast().allSatisfy { $0 == "WATCHDOG=1" })
        if !alive { #expect(rest.count == 1) }
    }

    @Test func journaldLinesCarryPriorities() {
        #expect(JournaldLogHandler.format(level: .warning, message: "gpsd lost") == "<4>gpsd lost\n")
        let expected: [(Logger.Level, Int)] = [
            (.trace, 7), (.debug, 7), (.info, 6), (.notice, 5), (.warning, 4), (.error, 3), (.critical, 2),
        ]
        for (level, priority) in expected {
            #expect(JournaldLogHandler.format(level: level, message: "m").hasPrefix("<\(priority)>m"))
        }
        // One event is one line, whatever the message holds; metadata sorted; other labels named.
        #expect(
            JournaldLogHandler.format(
                level: .error, label: "photos", message: "bad\nimage", metadata: ["z": "1", "a": "x"])
                == "<3>photos: bad\\nimage a=x z=1\n")
        // "\r\n" is one Character in Swift: both of its scalars are escaped all the same.
        #expect(JournaldLogHandler.format(level: .info, message: "a\r\nb\u{301}\n") == "<6>a\\r\\nb\u{301}\\n\n")
    }

    /// An event sent over journald's native protocol to a real datagram socket: its metadata as fields of their
    /// own, a value with a newline in the binary form, keys that cannot be field names left to the message.
    @Test func journaldEntriesCarryMetadataAsFields() async throws {
        let socket = try NotifySocket(abstract: false)
        var logger = Logger(label: "fieldlog") { JournaldLogHandler(label: $0, nativeSocket: socket.address) }
        logger[metadataKey: "destination"] = "mqtt://broker.example/"
        logger.warning(
            "walk 20240518T080001Z ended",
            metadata: ["walk": "20240518T080001Z", "errno": "28", "_x": "1", "why": "a\nb"])
        let entry = try #require(await socket.next())
        var fields: [String: String] = [:]
        var rest = Substring(entry)
        while let newline = rest.firstIndex(of: "\n") {
            let line = rest[..<newline]
            if let equals = line.firstIndex(of: "=") {
                fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
                rest = rest[rest.index(after: newline)...]
            } else {
                // NAME, newline, a 64-bit little-endian length, the value, newline.
                let value = rest.utf8.dropFirst(line.utf8.count + 1)
                let length = value.prefix(8).reversed().reduce(0) { $0 << 8 | Int($1) }
                fields[String(line)] = String(decoding: value.dropFirst(8).prefix(length), as: UTF8.self)
                rest = Substring(String(decoding: value.dropFirst(8 + length + 1), as: UTF8.self))
            }
        }
        #expect(fields["PRIORITY"] == "4")
        #expect(fields["SYSLOG_IDENTIFIER"] == "fieldlog")
        #expect(fields["WALK"] == "20240518T080001Z")
        #expect(fields["ERRNO"] == "28")
        #expect(fields["DESTINATION"] == "mqtt://broker.example/")
        #expect(fields["WHY"] == "a\nb")
        #expect(fields["_X"] == nil && fields.keys.allSatisfy { !$0.hasPrefix("_") })
        #expect(
            fields["MESSAGE"]?.hasPrefix("walk 20240518T080001Z ended _x=1 destination=mqtt://broker.example/ errno=28")
                == true, "\(fields)")
        #expect(JournaldLogHandler.fieldName("photo-source") == "PHOTO_SOURCE")
        #expect(JournaldLogHandler.fieldName("9lives") == nil && JournaldLogHandler.fieldName("message") == nil)
    }

    @Test func journalStreamMustMatchStderr() {
        #expect(JournaldLogHandler.streamMatches("8:12345", device: 8, inode: 12345))
        #expect(!JournaldLogHandler.streamMatches("8:12345", device: 8, inode: 12346))
        #expect(!JournaldLogHandler.streamMatches("9:12345", device: 8, inode: 12345))
        for malformed in [nil, "", "8", "8:", ":12345", "8:12345:1", "x:y"] {
            #expect(!JournaldLogHandler.streamMatches(malformed, device: 8, inode: 12345))
        }
    }
}

private let systemdAnalyzePath = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first {
    FileManager.default.isExecutableFile(atPath: $0)
}

/// `deploy/`: the unit file's directives, `systemd-analyze verify` and its security score.
@Suite
struct DeployTests {
    static let unitPath = Harness.repository + "/deploy/fieldlog.service"

    /// `[Section] Key` -> values, in order (a key may repeat).
    static func parseUnit(_ text: String) throws -> [String: [String]] {
        var section = ""
        var directives: [String: [String]] = [:]
        var pending = ""
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = pending + raw.trimmingCharacters(in: .whitespaces)
            pending = ""
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasSuffix("\\") {
                line.removeLast()
                pending = line + " "
                continue
            }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw UnitError(line: number + 1, text: line) }
                section = String(line.dropFirst().dropLast())
                continue
            }
            guard !section.isEmpty, let equals = line.firstIndex(of: "=") else {
                throw UnitError(line: number + 1, text: line)
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber }) else {
                throw UnitError(line: number + 1, text: line)
            }
            directives["[\(section)] \(key)", default: []].append(
                line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces))
        }
        return directives
    }

    struct UnitError: Error {
        let line: Int
        let text: String
    }

    @Test func unitHasTheRequiredDirectives() throws {
        let unit = try Self.parseUnit(String(contentsOfFile: Self.unitPath, encoding: .utf8))
        func value(_ key: String) -> String? { unit[key]?.last }
        #expect(value("[Service] Type") == "notify")
        #expect(value("[Service] NotifyAccess") == "main")
        #expect(value("[Service] Restart") == "on-failure")
        #expect(value("[Service] WatchdogSec") == "30")
        #expect(value("[Service] TimeoutStopSec") == "20")
        #expect(value("[Service] User") == "fieldlog")
        #expect(value("[Service] Group") == "fieldlog")
        #expect(value("[Service] StateDirectory") == "fieldlog")
        #expect(value("[Service] CacheDirectory") == "fieldlog")
        #expect(value("[Service] LoadCredential") == "flickr-api-key:/etc/fieldlog/flickr-api-key")
        // Without a default, systemd 252 refuses to start the unit when the key file is missing.
        #expect(value("[Service] SetCredential")?.hasPrefix("flickr-api-key:") == true)
        // Settings come from /etc/fieldlog/fieldlog.conf, the key from the credential of the name fieldlog looks for.
        // The live page and sharing are units of their own, which this unit wants.
        #expect(value("[Service] ExecStart") == "/usr/bin/fieldlog run --helpers units")
        #expect(
            unit["[Unit] Wants"]?.contains {
                $0.contains("fieldlog-live.service") && $0.contains("fieldlog-share.service")
            } == true)
        #expect(
            unit["[Service] LoadCredential"]?.contains { $0.hasPrefix("share-password") } != true,
            "only sharing's unit gets its password")
        #expect(unit["[Unit] Wants"]?.contains("gpsd.socket") == true)
        #expect(unit["[Unit] After"]?.contains("gpsd.socket") == true)
        for key in ["[Unit] Wants", "[Unit] After", "[Unit] Requires"] {
            #expect(unit[key]?.contains { $0.contains("network-online.target") } != true)
        }
        for (key, expected) in [
            ("ProtectSystem", "strict"), ("ProtectHome", "yes"), ("PrivateTmp", "yes"), ("PrivateDevices", "yes"),
            ("NoNewPrivileges", "yes"), ("RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"),
            ("MemoryDenyWriteExecute", "yes"), ("CapabilityBoundingSet", ""),
        ] {
            #expect(value("[Service] \(key)") == expected, "\(key)")
        }
        #expect(unit["[Service] SystemCallFilter"]?.first == "@system-service")
        #expect(value("[Service] MemoryMax")?.isEmpty == false)
        #expect(value("[Install] WantedBy") == "multi-user.target")
    }

    /// The live page's and sharing's units: part of the recorder's, each its own memory limit, the same sandbox.
    @Test(arguments: [("fieldlog-live", "live-page", "160M"), ("fieldlog-share", "live-share", "160M")])
    func helperUnitsRunApartFromTheRecorder(name: String, command: String, memory: String) throws {
        let recorder = try Self.parseUnit(String(contentsOfFile: Self.unitPath, encoding: .utf8))
        let unit = try Self.parseUnit(
            String(contentsOfFile: Harness.repository + "/deploy/\(name).service", encoding: .utf8))
        func value(_ key: String) -> String? { unit[key]?.last }
        #expect(value("[Service] ExecStart") == "/usr/bin/fieldlog \(command)")
        #expect(value("[Unit] PartOf") == "fieldlog.service")
        #expect(value("[Unit] After") == "fieldlog.service")
        #expect(value("[Service] MemoryMax") == memory)
        #expect(value("[Service] Restart") == "on-failure")
        #expect(value("[Service] User") == "fieldlog")
        #expect(unit["[Install] WantedBy"] == nil, "started by fieldlog.service's Wants=, not enabled on its own")
        for (key, values) in recorder
        where key.hasPrefix("[Service] Protect") || key.hasPrefix("[Service] Private")
            || key.hasPrefix("[Service] Restrict") || key.hasPrefix("[Service] SystemCall")
            || key.hasSuffix("Capabilities")
            || key == "[Service] CapabilityBoundingSet" || key == "[Service] NoNewPrivileges"
            || key == "[Service] MemoryDenyWriteExecute"
        {
            #expect(unit[key] == values, "\(name): \(key)")
        }
        if name == "fieldlog-share" {
            #expect(value("[Service] LoadCredential") == "share-password:/etc/fieldlog/share-password")
        }
    }

    @Test(
        .enabled(if: systemdAnalyzePath != nil, "needs systemd-analyze (apt: systemd)"),
        arguments: ["fieldlog-live", "fieldlog-share"])
    func helperUnitsVerifyAndExposeAtMostTwo(name: String) throws {
        let directory = try stubbedUnitDirectory(name)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let verify = try systemdAnalyze(["verify", "--man=no", directory + "/\(name).service"])
        #expect(verify.output == "")
        let security = try systemdAnalyze(["security", "--offline=true", "--no-pager", directory + "/\(name).service"])
        let line = try #require(
            security.output.split(separator: "\n").first { $0.contains("Overall exposure level") }, "\(security.output)"
        )
        let score = try #require(line.split(separator: " ").lazy.compactMap { Double($0) }.first, "\(line)")
        #expect(score <= 2.0, "\(line)")
    }

    /// The unit as systemd-analyze sees it on a system without fieldlog installed: ExecStart pointed at a stub
    /// (and man pages not looked up, since the page ships with the package).
    private func stubbedUnitDirectory(_ name: String = "fieldlog") throws -> String {
        let directory = Harness.temporaryDirectory()
        let stub = directory + "/fieldlog"
        try "#!/bin/sh\nexit 0\n".write(toFile: stub, atomically: true, encoding: .utf8)
        chmod(stub, 0o755)
        // The units name each other (Wants=, PartOf=): verify checks that they exist.
        for unit in ["fieldlog", "fieldlog-live", "fieldlog-share"] {
            let text = try String(contentsOfFile: Harness.repository + "/deploy/\(unit).service", encoding: .utf8)
                .replacingOccurrences(of: "ExecStart=/usr/bin/fieldlog ", with: "ExecStart=\(stub) ")
            try text.write(toFile: directory + "/\(unit).service", atomically: true, encoding: .utf8)
        }
        return directory
    }

    private func systemdAnalyze(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(systemdAnalyzePath))
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.environment = ["PATH": "/usr/bin:/bin", "SYSTEMD_COLORS": "0", "SYSTEMD_PAGER": ""]
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test(.enabled(if: systemdAnalyzePath != nil, "needs systemd-analyze (apt: systemd)"))
    func systemdAnalyzeVerifyPrintsNothing() throws {
        let directory = try stubbedUnitDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try systemdAnalyze(["verify", "--man=no", directory + "/fieldlog.service"])
        #expect(result.output == "")
        #expect(result.status == 0)
    }

    @Test(.enabled(if: systemdAnalyzePath != nil, "needs systemd-analyze (apt: systemd)"))
    func securityExposureIsAtMostTwo() throws {
        let result = try systemdAnalyze(["security", "--offline=true", "--no-pager", Self.unitPath])
        // "→ Overall exposure level for fieldlog.service: 1.1 OK 🙂"
        let line = try #require(
            result.output.split(separator: "\n").first { $0.contains("Overall exposure level") }, "\(result.output)")
        let score = try #require(line.split(separator: " ").lazy.compactMap { Double($0) }.first, "\(line)")
        #expect(score <= 2.0, "\(line)")
        #expect(!result.output.contains("Invalid syntax"), "\(result.output)")
    }
}
