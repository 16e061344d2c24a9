import FieldLogTestSupport
import Foundation
import Testing

/// A private Mosquitto broker (Debian's `mosquitto`) on a free loopback port, with a configuration of the test's
/// own: a password file, and a TLS listener whose certificate a CA made for the test signs. Never the system's
/// broker on 1883.
package final class MosquittoBroker {
    package static let executable = "/usr/sbin/mosquitto"
    package static let available =
        FileManager.default.isExecutableFile(atPath: executable)
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/mosquitto_sub")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/mosquitto_passwd")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")

    package static let user = "walker"
    package static let password = "s3cret-Pa55word"

    package let directory: String
    package let port: UInt16
    package let tls: Bool
    package private(set) var persistence: Bool
    private var child: Child?

    /// `tls`: the listener speaks TLS with a certificate for 127.0.0.1 signed by `caFile`.
    package init(
        in directory: String, tls: Bool = false, persistence: Bool = true, port: UInt16 = Harness.freePort()
    ) throws {
        self.directory = directory + "/broker-\(port)"
        self.port = port
        self.tls = tls
        self.persistence = persistence
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        try run("/usr/bin/mosquitto_passwd", ["-b", "-c", self.directory + "/passwd", Self.user, Self.password])
        if tls { try makeCertificates() }
    }

    package var caFile: String { directory + "/ca.pem" }
    package var url: String { "\(tls ? "mqtts" : "mqtt")://\(Self.user)@127.0.0.1:\(port)/" }

    /// Starts (or restarts) the broker and waits until it accepts connections.
    package func start(persistence: Bool? = nil) async throws {
        if let persistence { self.persistence = persistence }
        var config = """
            per_listener_settings false
            allow_anonymous false
            password_file \(directory)/passwd
            persistence \(self.persistence ? "true" : "false")
            persistence_location \(directory)/
            autosave_interval 1
            log_dest stderr
            log_type error
            log_type warning
            log_type notice
            max_queued_messages 100000
            listener \(port) 127.0.0.1

            """
        // As root, mosquitto would drop to the user mosquitto, who cannot read the test's files.
        if getuid() == 0 { config += "user root\n" }
        if tls {
            config += "cafile \(directory)/ca.pem\ncertfile \(directory)/server.pem\nkeyfile \(directory)/server.key\n"
        }
        try config.write(toFile: directory + "/mosquitto.conf", atomically: true, encoding: .utf8)
        child = try Child(Self.executable, ["-c", directory + "/mosquitto.conf"], in: directory)
        let deadline = Date().addingTimeInterval(10)
        while !Harness.accepts(port: port) && Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        try #require(Harness.accepts(port: port), "mosquitto did not start: \(child?.reap().stderr ?? "")")
    }

    /// Lets `user` log in with `password` from now on: the password file rewritten, and the running broker told
    /// to read it again (SIGHUP), its connections kept.
    package func addUser(_ user: String, password: String) throws {
        try run("/usr/bin/mosquitto_passwd", ["-b", directory + "/passwd", user, password])
        child?.signal(SIGHUP)
    }

    /// Everything the broker logged in its earlier runs (notices: connections, refusals).
    package private(set) var log = ""

    /// Stops the broker: SIGTERM (it saves its persistence database first, when on), or SIGKILL.
    package func stop(signal: Int32 = SIGTERM) async {
        child?.signal(signal)
        if let outcome = await child?.wait(timeout: 10) { log += outcome.stderr }
        child = nil
    }

    deinit {
        child?.reap()
    }

    private func makeCertificates() throws {
        let d = directory
        try run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=fieldlog test CA",
                "-keyout", d + "/ca.key", "-out", d + "/ca.pem",
            ])
        try run(
            "/usr/bin/openssl",
            [
                "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                "-keyout", d + "/server.key", "-out", d + "/server.csr",
            ])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
            toFile: d + "/san.ext", atomically: true, encoding: .utf8)
        try run(
            "/usr/bin/openssl",
            [
                "x509", "-req", "-in", d + "/server.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", d + "/san.ext", "-out", d + "/server.pem",
            ])
        // A second CA that signed nothing here: trusting it must not make the broker's certificate verify.
        try run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=other CA",
                "-keyout", d + "/other-ca.key", "-out", d + "/other-ca.pem",
            ])
    }

    @discardableResult
    package func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw BrokerError(text: "\(executable) \(arguments.joined(separator: " ")): \(text)")
        }
        return text
    }

    package struct BrokerError: Error {
        package let text: String

        package init(text: String) {
            self.text = text
        }
    }
}

/// `mosquitto_sub` on the broker, with a persistent session at QoS 1 (as the OwnTracks Recorder subscribes):
/// every message, in arrival order, one line each.
package final class MosquittoSubscriber {
    private let child: Child
    private let output: String

    package init(broker: MosquittoBroker, topic: String = "owntracks/#", in directory: String) async throws {
        output = directory + "/sub-\(broker.port)-\(UUID().uuidString.prefix(6)).txt"
        var arguments = [
            "-h", "127.0.0.1", "-p", String(broker.port), "-u", MosquittoBroker.user, "-P", MosquittoBroker.password,
            "-t", topic, "-q", "1", "-c", "-i", "fieldlog-test-sub", "-F", "%t\t%p",
        ]
        if broker.tls { arguments += ["--cafile", broker.caFile] }
        // Through a shell, for an output file it flushes line by line (stdbuf).
        let command =
            "exec stdbuf -oL /usr/bin/mosquitto_sub " + arguments.map { "'\($0)'" }.joined(separator: " ")
            + " >> '\(output)'"
        child = try Child("/bin/sh", ["-c", command], in: directory)
        // Subscribed once it has connected: wait for the broker to see it (a retained probe comes back).
        try await Task.sleep(for: .milliseconds(500))
    }

    /// The messages received so far: topic and JSON object.
    package var messages: [(topic: String, json: [String: Any])] {
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let tab = line.firstIndex(of: "\t"),
                let object = try? JSONSerialization.jsonObject(with: Data(line[line.index(after: tab)...].utf8))
                    as? [String: Any]
            else { return nil }
            return (String(line[..<tab]), object)
        }
    }

    package func stop() {
        child.reap()
    }

    deinit {
        child.reap()
    }
}
