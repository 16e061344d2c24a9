import FieldLogTestSupport
import Foundation
import Testing
import WalkSimulation

/// The network between fieldlog and the broker cut with nftables: the broker and its subscriber in a network
/// namespace of their own behind a veth pair, fieldlog outside, its packets to the broker dropped (silently,
/// 30 % at random, then all) and refused (TCP reset) for a while. Root only: it makes namespaces and rules.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(
        if: getuid() == 0 && MosquittoBroker.available && Harness.gpsfakeAvailable
            && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nft")
            && FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip"),
        "needs root, nftables (nft), iproute2 (ip), mosquitto and gpsfake: network namespaces and firewall rules"))
final class SharingNetworkTests {
    let directory = Harness.temporaryDirectory()
    var state: String { directory + "/state" }
    let tag = String(getpid() % 10000)
    var namespace: String { "flshare\(tag)" }
    var table: String { "flshare\(tag)" }
    /// 10.231.N.1 on this side, 10.231.N.2 in the namespace.
    var subnet: String { "10.231.\(getpid() % 250)" }

    deinit {
        _ = try? sh(
            "nft delete table inet \(table); ip link delete flh\(tag); ip netns delete \(namespace)", check: false)
        try? FileManager.default.removeItem(atPath: directory)
    }

    @discardableResult
    func sh(_ command: String, check: Bool = true) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        if check && process.terminationStatus != 0 { throw MosquittoBroker.BrokerError(text: "\(command): \(output)") }
        return output
    }

    func rule(_ verdict: String?) throws {
        try sh("nft flush chain inet \(table) out")
        if let verdict {
            try sh("nft 'add rule inet \(table) out ip daddr \(subnet).2 tcp dport 1883 \(verdict)'")
        }
    }

    @Test func dropsAndResetsLoseNothingAndDuplicateAtMostTheWindow() async throws {
        try sh(
            """
            ip netns add \(namespace) && ip link add flh\(tag) type veth peer name fln\(tag) \
            && ip link set fln\(tag) netns \(namespace) && ip addr add \(subnet).1/30 dev flh\(tag) && ip link set flh\(tag) up \
            && ip netns exec \(namespace) ip addr add \(subnet).2/30 dev fln\(tag) \
            && ip netns exec \(namespace) ip link set fln\(tag) up && ip netns exec \(namespace) ip link set lo up \
            && nft add table inet \(table) && nft add chain inet \(table) out '{ type filter hook output priority 0; }'
            """)
        let broker = try MosquittoBroker(in: directory)
        // fieldlog logs in anonymously: a password never goes over plain MQTT to another host.
        let config = """
            allow_anonymous true
            password_file \(broker.directory)/passwd
            persistence false
            log_dest stderr
            user root
            listener 1883 \(subnet).2

            """
        try config.write(toFile: directory + "/ns.conf", atomically: true, encoding: .utf8)
        let daemon = try Child(
            "/usr/sbin/ip", ["netns", "exec", namespace, "/usr/sbin/mosquitto", "-c", directory + "/ns.conf"],
            in: directory)
        defer { daemon.reap() }
        try await Task.sleep(for: .milliseconds(500))
        let subscriberOutput = directory + "/ns-sub.txt"
        let subscriber = try Child(
            "/bin/sh",
            [
                "-c",
                "exec ip netns exec \(namespace) stdbuf -oL mosquitto_sub -h \(subnet).2 -p 1883 -u \(MosquittoBroker.user) "
                    + "-P '\(MosquittoBroker.password)' -t 'owntracks/#' -q 1 -c -i ns-sub -F '%t\t%p' >> \(subscriberOutput)",
            ],
            in: directory)
        defer { subscriber.reap() }
        try await Task.sleep(for: .milliseconds(500))
        func received() -> [[String: Any]] {
            ((try? String(contentsOfFile: subscriberOutput, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                line in
                guard let tab = line.firstIndex(of: "\t") else { return nil }
                return try? JSONSerialization.jsonObject(with: Data(line[line.index(after: tab)...].utf8))
                    as? [String: Any]
            }
        }

        let capture = try SharingHarness.walkCapture(seconds: 600, in: directory)
        let gpsd = try await GPSFake(capture: capture, delay: 0.012, in: directory)
        let recorder = try Child(
            Harness.fieldlog,
            [
                "run", "--gpsd", gpsd.address, "--state-dir", state, "--share", "mqtt://\(subnet).2:1883/",
                "--share-device", "testdev", "--share-rate", "50",
            ],
            in: directory)
        defer { recorder.reap() }
        let deadline = Date().addingTimeInterval(30)
        while received().count < 4 && Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
        #expect(received().count >= 4, "sharing through the veth works")
        try rule("numgen random mod 100 < 30 drop")
        try await Task.sleep(for: .seconds(3))
        try rule("drop")
        try await Task.sleep(for: .seconds(3))
        try rule("reject with tcp reset")
        try await Task.sleep(for: .seconds(3))
        try rule(nil)
        await gpsd.wait()
        let (expected, comparison) = try await SharingHarness.waitForAll(received, state: state, timeout: 90)
        #expect(comparison.missing.isEmpty, "missing \(comparison.missing)")
        #expect(comparison.unexpected.isEmpty && !comparison.outOfOrder)
        #expect(comparison.mostCopies <= 2, "a point seen at most twice")
        #expect(comparison.duplicates <= 2 * SharingFaultTests.window, "\(comparison.duplicates) duplicates")
        // Fixes fed while no recorder read them (or while a loaded machine lagged) are not in the walk: a floor only.
        #expect(expected.count > 20, "\(expected.count) points in the walk")
        recorder.signal(SIGTERM)
        let outcome = await recorder.wait(timeout: 20)
        #expect(outcome.status == 0)
        #expect(outcome.stderr.contains("disconnected"), "the reset was noticed: \(outcome.stderr)")
    }
}
