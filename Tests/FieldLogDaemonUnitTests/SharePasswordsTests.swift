import FieldLogDaemon
import FieldLogTestSupport
import Foundation
import Sharing
import Testing

/// Which password goes to which destination (`SharePasswords`): each its own, none to a URL without a user,
/// never in clear to another host, and a file that cannot be used leaves out only the destinations it was for.
final class SharePasswordsTests {
    let directory = Harness.temporaryDirectory()

    init() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func write(_ text: String, to name: String, mode: Int = 0o600) throws -> String {
        let path = directory + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    func targets(_ urls: [String], credentials: String? = nil, password: String? = nil) -> [ShareTarget] {
        var settings = ShareSettings.defaults
        settings.share = urls
        settings.shareDevice = "pi"
        settings.shareCredentials = credentials
        settings.sharePasswordFile = password
        return settings.targets(environment: [:])
    }

    /// (password, warning) of a ready target, or the reason of an unusable one.
    func describe(_ target: ShareTarget) -> String {
        switch target {
        case let .ready(_, password, warning): "ready \(password ?? "-") \(warning ?? "-")"
        case let .unusable(_, reason): "unusable: \(reason)"
        }
    }

    @Test func eachDestinationGetsItsOwnPasswordAndAURLWithoutAUserNone() throws {
        let broker = "mqtts://walker@broker.example.org/"
        let recorder = "https://hiker@recorder.example.org/pub"
        let open = "http://127.0.0.1:8083/pub"
        let credentials = try write(
            "# fieldlog's destinations\n\n\(broker) broker-Pa55\r\n\(recorder)\t \tpass with spaces \n",
            to: "credentials")
        let result = targets([broker, recorder, open], credentials: credentials).map(describe)
        #expect(result == ["ready broker-Pa55 -", "ready pass with spaces  -", "ready - -"], "\(result)")
        // The one-password file of one destination with a user; the URL without a user still gets none.
        let single = try write("only-Pa55\nsecond line\n", to: "password")
        #expect(targets([broker, open], password: single).map(describe) == ["ready only-Pa55 -", "ready - -"])
        // A line in the credentials file wins over the password file, which is then for the one other with a user.
        let one = try write("\(broker) broker-Pa55\n", to: "one")
        #expect(
            targets([broker, recorder], credentials: one, password: single).map(describe)
                == ["ready broker-Pa55 -", "ready only-Pa55 -"])
    }

    @Test func onePasswordForTwoDestinationsWithAUserGoesToNeither() throws {
        let single = try write("only-Pa55\n", to: "password")
        let result = targets(
            ["mqtts://walker@broker.example.org/", "https://hiker@recorder.example.org/pub"], password: single)
        for target in result {
            #expect(
                describe(target).hasPrefix("unusable: the share password file holds one password, and 2 destinations"))
        }
    }

    @Test func aPasswordNeverGoesInClearToAnotherHost() throws {
        let single = try write("only-Pa55\n", to: "password")
        #expect(
            describe(targets(["mqtt://walker@broker.example.org/"], password: single)[0]).hasPrefix(
                "unusable: --share mqtt://walker@broker.example.org/: a password goes only over mqtts://"))
        #expect(describe(targets(["mqtt://walker@127.0.0.1:1883/"], password: single)[0]) == "ready only-Pa55 -")
        // Without a password, plain MQTT is a choice the user may make.
        #expect(describe(targets(["mqtt://broker.example.org/"], password: single)[0]) == "ready - -")
    }

    @Test func aFileThatCannotBeUsedLeavesOutOnlyTheDestinationsItWasFor() throws {
        let open = "http://127.0.0.1:8083/pub"
        let broker = "mqtts://walker@broker.example.org/"
        let fifo = directory + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let huge = try write("", to: "huge")
        #expect(truncate(huge, 1 << 30) == 0)
        let link = directory + "/link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: try write("Pa55\n", to: "target"))
        for (path, reason) in [
            (directory + "/missing", "No such file or directory"), (fifo, "not a regular file"),
            (huge, "more than the 4096 it may hold"), (link, "a symbolic link"), ("/dev/zero", "not a regular file"),
        ] {
            let result = targets([broker, open], password: path).map(describe)
            #expect(
                result[0].hasPrefix("unusable: cannot read the share password file \(path): ")
                    && result[0].hasSuffix(reason), "\(result)")
            #expect(result[1] == "ready - -")
            let keyed = targets([broker, open], credentials: path).map(describe)
            #expect(keyed[0].hasPrefix("unusable: cannot read the share credentials file \(path): "), "\(keyed)")
        }
        // Every user may read it: used, with a warning.
        let readable = try write("Pa55\n", to: "readable", mode: 0o644)
        #expect(
            describe(targets([broker], password: readable)[0])
                == "ready Pa55 the share password file \(readable) is readable by every user of this device (chmod 600 it)"
        )
    }

    @Test func aMalformedCredentialsFileNamesTheLineNeverItsContents() throws {
        for (text, line) in [
            ("s3cret-alone\n", 1), ("# c\nmqtts://walker@b/\n", 2),
            ("mqtts://walker@b/ a\nmqtts://walker@b/ s3cret\n", 2),
        ] {
            let path = try write(text, to: "credentials")
            let result = describe(targets(["mqtts://walker@b/"], credentials: path)[0])
            #expect(result.hasPrefix("unusable: the share credentials file \(path), line \(line): "), "\(result)")
            #expect(!result.contains("s3cret"))
        }
    }

    @Test func aBadURLIsLeftOutAndTheOthersGoOn() {
        let result = targets(["mqtt://walker:s3cret@broker/", "http://127.0.0.1:8083/pub"]).map(describe)
        #expect(
            result.count == 2 && result[0].hasPrefix("unusable: --share: a password never goes in the URL")
                && result[1] == "ready - -")
        #expect(!result[0].contains("s3cret"))
    }
}
