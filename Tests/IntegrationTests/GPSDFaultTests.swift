import FieldLogTestSupport
import Foundation
import Logging
import NIOCore
import NIOPosix
import Recording
import Testing
import WalkJournal
import WalkModel
import WalkSimulation

/// gpsd and the receiver misbehaving: a server that is not gpsd (garbage, torn lines, huge lines, silence),
/// a real gpsd killed and restarted, the receiver removed and re-added through gpsd's control socket.
/// Deadlines here are generous bounds against hangs, never measurements.
@Suite(.serialized)
struct GPSDFaultTests {
    let directory = Harness.temporaryDirectory()

    /// Runs a reader against `port` until `until` holds on its events (or `timeout` passes), then stops it.
    /// Returns the events and whether it stopped within the bound.
    func read(
        port: UInt16, silence: Duration = .seconds(2), timeout: Double = 30,
        until: @escaping @Sendable ([GPSEvent]) -> Bool
    ) async throws -> [GPSEvent] {
        var configuration = GPSDReader.Configuration(host: "127.0.0.1", port: String(port))
        configuration.silenceBeforeProbe = silence / 2
        configuration.silenceLimit = silence
        let reader = GPSDReader(configuration: configuration, logger: quietLogger)
        let log = Events()
        let running = Task { try await reader.run { log.add($0) } }
        let deadline = Date().addingTimeInterval(timeout)
        while !until(log.all) && Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        reader.stop()
        try await running.value
        return log.all
    }

    static func isFix(_ event: GPSEvent) -> Bool { if case .fix = event { true } else { false } }
    static func isLoss(_ event: GPSEvent) -> Bool { if case .disconnected = event { true } else { false } }

    static let version = #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"# + "\r\n"
    static func tpv(_ second: Int, lat: Double = 52.85) -> String {
        #"{"class":"TPV","device":"/dev/ttyUSB0","mode":3,"time":"2024-05-18T09:00:\#(String(format: "%02d", second)).000Z","lat":\#(lat),"lon":5.31,"altHAE":40.0,"eph":5.0}"#
            + "\r\n"
    }

    @Test func garbageTornAndHugeLinesBecomeNoFixAndTheReaderMovesOn() async throws {
        let halfTPV = #"{"class":"TPV","mode":3,"time":"2024-05-18T09:00:09.000Z","lat":52.8"#
        let garbage: [String] = [
            "hello, I am not gpsd\r\n", "\u{0}\u{1}\u{2}\u{FF}binary\r\n", halfTPV + "\r\n",
            #"{"class":"TPV","mode":3,"time":"2024-05-18T09:00:08.000Z","lat":52.85,"lon":5.31"# + "\r\n",
            "[1,2,3]\r\n", #"{"class":"TPV","mode":"three","lat":"x"}"# + "\r\n",
            #"{"class":"TPV","mode":3,"time":"2024-05-18T09:00:07.000Z","lat":1e999,"lon":NaN}"# + "\r\n",
        ]
        // Garbage only, then silence: never "connected", never a fix, given up, retried.
        let server = try await ScriptedServer.start { _ in [.send(garbage.joined())] }
        var events = try await read(port: server.port) { $0.filter(Self.isLoss).count >= 1 && server.connections >= 2 }
        #expect(!events.contains(.connected) && !events.contains(where: Self.isFix), "\(events)")
        #expect(events.first.map(Self.isLoss) == true)
        await server.stop()

        // A real gpsd's lines with garbage between them: the good ones are read, the bad skipped.
        let mixed = try await ScriptedServer.start { _ in
            [
                .send(Self.version + Self.tpv(1) + garbage.joined() + Self.tpv(2) + halfTPV),
                .send(String(repeating: "x", count: 100)),
            ]
        }
        // A TPV that parses but has no usable position is a report without a fix, never a fix.
        events = try await read(port: mixed.port) { $0.filter(Self.isFix).count >= 2 }.filter { $0 != .noFix }
        #expect(events.prefix(3).map(Self.isFix) == [false, true, true], "\(events)")
        #expect(events.first == .connected)
        await mixed.stop()

        // A line longer than libgps's buffer, with no end: the connection is dropped, not read forever.
        let huge = try await ScriptedServer.start { _ in
            [.send(Self.version), .send("{\"class\":\"TPV\",\"x\":\"" + String(repeating: "A", count: 1 << 20))]
        }
        events = try await read(port: huge.port) { $0.contains(where: Self.isLoss) }
        #expect(events.first == .connected && events.contains(where: Self.isLoss), "\(events)")
        await huge.stop()
    }

    @Test func aServerThatAcceptsAndSaysNothingIsGivenUpAndRetried() async throws {
        for script in [[ScriptedServer.Step](), [.send(#"{"class":"VERSION","#)]] {
            let server = try await ScriptedServer.start { _ in script }
            let events = try await read(port: server.port) { _ in server.connections >= 3 }
            #expect(server.connections >= 3, "the reader hung on a silent server")
            #expect(events.count == 1, "reported once: \(events)")
            if case let .disconnected(reason) = events.first {
                #expect(reason.contains("no gpsd answer"), "\(reason)")
            }
            await server.stop()
        }
    }
    /// An address that drops connection attempts (here a listen queue kept full; a gpsd host off the network
    /// behaves alike): libgps's blocking connect held the reader for over a minute, deaf to stop().
    @Test func anAddressThatDropsConnectsNeverHoldsTheReader() async throws {
        let (listener, port) = Harness.listeningSocket(backlog: 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        // Never accepted: once the queue is full, further SYNs are dropped.
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<3 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = connect(fd, $0, length) }
            }
            fillers.append(fd)
        }
        let events = try await read(port: port, timeout: 40) { $0.contains(where: Self.isLoss) }
        guard case let .disconnected(reason)? = events.first else {
            Issue.record("no loss reported while connect hangs: \(events)")
            return
        }
        #expect(reason.contains("within 2 s"), "\(reason)")
    }

    /// A server that says VERSION and drops the connection at once (resetting it, with fieldlog's WATCH
    /// unread), over and over: fieldlog's writes to it once raised SIGPIPE and killed the process.
    @Test func aServerThatDropsEveryConnectionNeverKillsFieldlog() async throws {
        let server = try await ScriptedServer.start { number in
            number % 2 == 0 ? [.close] : [.send(GPSDFaultTests.version), .close]
        }
        let recorder = try Child(
            Harness.fieldlog, ["run", "--gpsd", "127.0.0.1:\(server.port)", "--state-dir", directory + "/state"],
            in: directory)
        let deadline = Date().addingTimeInterval(60)
        while server.connections < 4 && recorder.isRunning && Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(recorder.isRunning, "fieldlog died: \(recorder.reap().status)")
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 20)
        #expect(outcome.status == 0, "\(outcome.status): \(outcome.stderr)")
        #expect(server.connections >= 4)
        await server.stop()
    }

    /// The receiver loses the sky (a tunnel) while gpsd goes on reporting without a fix. The last fix used
    /// to wait, as the epoch in flight, until gpsd went quiet: until the sky came back, unwritten and
    /// unsynced. A report without a fix ends the epoch now.
    @Test func theLastFixIsJournaledWhileTheReceiverHasNoFix() async throws {
        let noFix = #"{"class":"TPV","device":"/dev/ttyUSB0","mode":1}"# + "\r\n"
        let fixes = (1...5).map { GPSDFaultTests.tpv($0, lat: 52.85 + Double($0) * 0.00001) }.joined()
        // Without a fix every 0.25 s for 6 s: never quiet for the 2 s that end an epoch too.
        let server = try await ScriptedServer.start { _ in
            [.send(GPSDFaultTests.version + fixes)] + (1...24).map { .sendAfter(.milliseconds(250 * Int64($0)), noFix) }
        }
        let state = directory + "/tunnel"
        let recorder = try Child(
            Harness.fieldlog, ["run", "--gpsd", "127.0.0.1:\(server.port)", "--state-dir", state], in: directory)
        let store = JournalStore(directory: state)
        var points = 0
        // 4 s from the connection (the fixes are sent on it): well before the 6 s of reports without a fix end.
        #expect(await waitUntil(timeout: 60) { server.connections > 0 })
        let deadline = Date().addingTimeInterval(4)
        while points < 5 && Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
            points = (try? store.walkIDs().last.map { try store.read($0).points.count }) ?? 0
        }
        #expect(points == 5, "the last fix is held back while gpsd reports without a fix")
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 20)
        #expect(outcome.status == 0, "\(outcome.status): \(outcome.stderr)")
        await server.stop()
    }
}

/// A real gpsd (no gpsfake), started and killed by the test, with its control socket for adding and removing
/// receivers as udev's gpsdctl does.
@Suite(.serialized, .enabled(if: Harness.gpsfakeAvailable, "needs gpsd (apt: gpsd gpsd-clients)"))
struct RealGPSDFaultTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    var control: String { directory + "/gpsd.sock" }

    /// gpsd in the foreground on `port`, listening once the port accepts connections.
    func gpsd(port: UInt16, devices: [String] = []) async throws -> Child {
        try? FileManager.default.removeItem(atPath: control)
        let gpsd = Harness.gpsdCommand(root: Harness.replayRoot)
        let child = try Child(
            gpsd.executable, gpsd.arguments + ["-N", "-n", "-b", "-S", String(port), "-F", control] + devices,
            in: directory)
        let deadline = Date().addingTimeInterval(20)
        while !Harness.accepts(port: port) && Date() < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        return child
    }

    /// Whether gpsd's control socket took a command: "OK" from gpsd 3.22, {"class":"ACK"} from 3.25 (which
    /// answers "ERROR" as {"class":"ERROR"}).
    static func accepted(_ reply: String) -> Bool {
        reply.hasPrefix("OK") || reply.hasPrefix(#"{"class":"ACK"}"#)
    }

    /// Sends one command ("+/dev/pts/3" adds a receiver, "-/dev/pts/3" removes it) to gpsd's control socket.
    func command(_ text: String) throws -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in control.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        let line = Array((text + "\n").utf8)
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var reply = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &reply, reply.count)
        return String(decoding: reply.prefix(max(count, 0)), as: UTF8.self)
    }

    /// Time from gpsd accepting connections again to the reader's `.connected`, after gpsd was killed and
    /// stayed away long enough for the reader's backoff to reach its cap. Printed as a figure; the only
    /// bound asserted is a generous one against a hang.
    @Test func readerIsBackWithinSecondsOfGPSDsReturn() async throws {
        let port = Harness.freePort()
        var daemon = try await gpsd(port: port)
        var configuration = GPSDReader.Configuration(host: "127.0.0.1", port: String(port))
        configuration.silenceBeforeProbe = .seconds(1)
        configuration.silenceLimit = .seconds(3)
        let reader = GPSDReader(configuration: configuration, logger: quietLogger)
        let log = TimedEvents()
        let running = Task { try await reader.run { log.add($0) } }
        defer { reader.stop() }
        func connections() -> Int { log.all.filter { $0.event == .connected }.count }
        var deadline = Date().addingTimeInterval(20)
        while connections() < 1 && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(connections() == 1)
        var figures: [Double] = []
        for (trial, away) in [0.3, 2.0, 6.0].enumerated() {
            daemon.signal(SIGKILL)
            await daemon.wait(timeout: 10)
            try await Task.sleep(for: .seconds(away))
            daemon = try await gpsd(port: port)
            let back = Date()
            deadline = back.addingTimeInterval(30)
            while connections() < trial + 2 && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
            let connected = try #require(log.all.last { $0.event == .connected }).time
            figures.append(connected.timeIntervalSince(back))
        }
        // gpsd with no receiver stays quiet; the probe keeps the connection up, it is never given up.
        try await Task.sleep(for: .seconds(4))
        reader.stop()
        try await running.value
        daemon.reap()
        print("gpsd reconnect after gpsd was back (s), away 0.3/2/6 s: \(figures.map { String(format: "%.3f", $0) })")
        #expect(figures.count == 3 && figures.allSatisfy { $0 < 15 }, "\(figures)")
        #expect(connections() == 4, "a quiet gpsd was given up: \(log.all.map(\.event))")
    }

    /// fieldlog run while the receiver is removed and re-added through gpsd's control socket, then gpsd is
    /// killed and restarted: every outage becomes a new track segment, and everything journaled before each
    /// fault is still there, byte for byte, at the end.
    @Test func receiverRemovedAndGPSDKilledLoseNothingAndStartSegments() async throws {
        var walk = SyntheticWalk()
        walk.add([.walk(seconds: 4000, speed: 1.4)])
        let capture = directory + "/walk.nmea"
        try walk.write(to: capture)
        // 25 epochs of GPS time per second: an outage of a second is a gap of 25 s, above --gap 5.
        let receiver = try Child(
            "/usr/bin/python3", [Harness.fixtures + "/nmea_pty.py", capture, "0.02", directory + "/receiver"],
            in: directory)
        defer { receiver.reap() }
        var device = ""
        let deadline = Date().addingTimeInterval(20)
        while device.isEmpty && Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
            device = (try? String(contentsOfFile: directory + "/receiver", encoding: .utf8)) ?? ""
        }
        try #require(device.hasPrefix("/dev/"))
        let port = Harness.freePort()
        var daemon = try await gpsd(port: port)
        #expect(Self.accepted(try command("+" + device)))
        let recorder = try Child(
            Harness.fieldlog, ["run", "--gpsd", "127.0.0.1:\(port)", "--state-dir", state, "--gap", "5"], in: directory)
        defer { recorder.reap() }
        let store = JournalStore(directory: state)
        func points() -> Int { ((try? store.walkIDs().first).flatMap { try? store.read($0) })?.points.count ?? 0 }
        func journal() -> Data {
            (try? store.walkIDs().first).flatMap { FileManager.default.contents(atPath: store.path(for: $0)) } ?? Data()
        }
        func waitForPoints(_ count: Int) async throws {
            let deadline = Date().addingTimeInterval(60)
            while points() < count && Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
            #expect(points() >= count, "stuck at \(points()) points")
        }

        try await waitForPoints(50)
        #expect(Self.accepted(try command("-" + device)))
        try await Task.sleep(for: .seconds(1.5))
        let beforeReadd = journal()
        #expect(Self.accepted(try command("+" + device)))
        try await waitForPoints(points() + 50)

        daemon.signal(SIGKILL)
        await daemon.wait(timeout: 10)
        try await Task.sleep(for: .seconds(1))
        let beforeRestart = journal()
        daemon = try await gpsd(port: port, devices: [device])
        defer { daemon.reap() }
        try await waitForPoints(points() + 50)

        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 20)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let after = journal()
        #expect(after.prefix(beforeReadd.count) == beforeReadd)
        #expect(after.prefix(beforeRestart.count) == beforeRestart)
        let logs = try store.walkIDs().map { try store.read($0) }
        #expect(logs.count == 1)
        let log = try #require(logs.first)
        #expect(log.damagedLines.isEmpty)
        #expect(log.segments.count >= 2, "each outage is a segment: \(log.segments)")
        print(
            "receiver removed/re-added, gpsd killed/restarted: \(log.points.count) fixes, segment gaps (GPS s) "
                + "\(log.segments.map { Int($0.gap) }), events \(log.events.map { "\($0.kind.rawValue) \($0.message ?? "")" })"
        )
        let times = log.points.map(\.fix.time)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
        let kinds = log.events.map(\.kind)
        // Removing the receiver leaves the connection up, killing gpsd ends it: at least two connections. gpsd
        // also drops a client that falls behind (a short write), as a busy CI machine can make the recorder
        // after the re-added receiver's burst: then one more, and nothing may be lost either way (above).
        let gpsdEvents = kinds.filter { $0 == .gpsdConnected || $0 == .gpsdLost }
        #expect(gpsdEvents.filter { $0 == .gpsdConnected }.count >= 2, "\(kinds)")
        #expect(gpsdEvents.contains(.gpsdLost) && gpsdEvents.last == .gpsdConnected, "\(kinds)")
    }
}

/// Events with the wall time they reached the handler.
final class TimedEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [(event: GPSEvent, time: Date)] = []

    func add(_ event: GPSEvent) { lock.withLock { events.append((event, Date())) } }
    var all: [(event: GPSEvent, time: Date)] { lock.withLock { events } }
}

/// Events a reader's handler saw, from its thread.
final class Events: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [GPSEvent] = []

    func add(_ event: GPSEvent) { lock.withLock { events.append(event) } }
    var all: [GPSEvent] { lock.withLock { events } }
}

/// A TCP server on loopback that plays a script to every connection: bytes to send, then silence (the
/// connection stays open until the client leaves or the server stops).
final class ScriptedServer: @unchecked Sendable {
    enum Step {
        case send(String)
        /// Sends the text this long after the connection was accepted.
        case sendAfter(TimeAmount, String)
        case close
    }

    private let lock = NSLock()
    private var count = 0
    private var channel: (any Channel)?
    private(set) var port: UInt16 = 0

    var connections: Int { lock.withLock { count } }

    /// `script` gets the connection's number (from 1).
    static func start(port: Int = 0, script: @escaping @Sendable (Int) -> [Step]) async throws -> ScriptedServer {
        let server = ScriptedServer()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let number = server.lock.withLock {
                    server.count += 1
                    return server.count
                }
                for step in script(number) {
                    switch step {
                    case let .send(text):
                        channel.writeAndFlush(ByteBuffer(bytes: Array(text.utf8)), promise: nil)
                    case let .sendAfter(delay, text):
                        channel.eventLoop.scheduleTask(in: delay) {
                            channel.writeAndFlush(ByteBuffer(bytes: Array(text.utf8)), promise: nil)
                        }
                    case .close:
                        channel.close(promise: nil)
                    }
                }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: port).get()
        server.port = UInt16(channel.localAddress?.port ?? 0)
        server.lock.withLock { server.channel = channel }
        return server
    }

    func stop() async {
        try? await lock.withLock { channel }?.close()
    }
}
