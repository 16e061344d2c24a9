import FieldLogTestSupport
import Foundation
import Testing

// udev/61-fieldlog-gps.rules: syntax, known keys, and the USB ids of the common GPS receivers.

private let rulesPath = Harness.repository + "/udev/61-fieldlog-gps.rules"

/// `udevadm verify` exists from systemd 253 (Debian 12 has 252).
private let udevadmVerify: String? = {
    guard
        let udevadm = ["/usr/bin/udevadm", "/bin/udevadm"].first(where: {
            FileManager.default.isExecutableFile(atPath: $0)
        })
    else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: udevadm)
    process.arguments = ["verify", "--help"]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return nil }
    process.waitUntilExit()
    return process.terminationStatus == 0 ? udevadm : nil
}()

struct UdevRule: CustomStringConvertible {
    struct Pair {
        var key: String
        var argument: String?
        var op: String
        var value: String
    }

    var line: Int
    var pairs: [Pair]

    var description: String { "line \(line)" }

    /// The value of the first `key` compared with `==`.
    func match(_ key: String, _ argument: String? = nil) -> String? {
        pairs.first { $0.key == key && $0.argument == argument && $0.op == "==" }?.value
    }
}

struct UdevSyntaxError: Error, CustomStringConvertible {
    var line: Int
    var reason: String
    var description: String { "line \(line): \(reason)" }
}

enum UdevRules {
    /// Keys that only match, keys that only assign, and those that take an `{argument}`.
    static let matchKeys: Set = [
        "ACTION", "DEVPATH", "KERNEL", "KERNELS", "NAME", "SYMLINK", "SUBSYSTEM", "SUBSYSTEMS", "DRIVER", "DRIVERS",
        "ATTR", "ATTRS", "SYSCTL", "ENV", "CONST", "TAG", "TAGS", "TEST", "PROGRAM", "RESULT",
    ]
    static let assignKeys: Set = [
        "NAME", "SYMLINK", "OWNER", "GROUP", "MODE", "SECLABEL", "ATTR", "SYSCTL", "ENV", "TAG", "RUN", "LABEL",
        "GOTO", "IMPORT", "OPTIONS",
    ]
    static let keysWithArgument: Set = [
        "ATTR", "ATTRS", "SYSCTL", "ENV", "CONST", "TEST", "SECLABEL", "RUN", "IMPORT",
    ]
    static let matchOperators: Set = ["==", "!="]
    static let assignOperators: Set = ["=", "+=", "-=", ":="]

    /// Every rule of the file; throws at the first line that is neither a comment nor well-formed pairs.
    static func parse(_ text: String) throws -> [UdevRule] {
        var rules: [UdevRule] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard !line.hasSuffix("\\") else {
                throw UdevSyntaxError(line: number, reason: "continuation lines not used here")
            }
            rules.append(UdevRule(line: number, pairs: try pairs(Substring(line), line: number)))
        }
        return rules
    }

    private static func pairs(_ line: Substring, line number: Int) throws -> [UdevRule.Pair] {
        var rest = line
        var result: [UdevRule.Pair] = []
        while true {
            let keyEnd = rest.firstIndex { !($0.isUppercase || $0 == "_") } ?? rest.endIndex
            let key = String(rest[..<keyEnd])
            guard !key.isEmpty else { throw UdevSyntaxError(line: number, reason: "expected a key at \"\(rest)\"") }
            rest = rest[keyEnd...]
            var argument: String?
            if rest.first == "{" {
                guard let close = rest.firstIndex(of: "}") else {
                    throw UdevSyntaxError(line: number, reason: "unclosed {")
                }
                argument = String(rest[rest.index(after: rest.startIndex)..<close])
                guard let argument, !argument.isEmpty, argument.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" })
                else { throw UdevSyntaxError(line: number, reason: "bad {argument} of \(key)") }
                rest = rest[rest.index(after: close)...]
            }
            let op = ["==", "!=", "+=", "-=", ":=", "="].first { rest.hasPrefix($0) }
            guard let op else { throw UdevSyntaxError(line: number, reason: "expected an operator after \(key)") }
            rest = rest.dropFirst(op.count)
            guard rest.first == "\"", let close = rest.dropFirst().firstIndex(of: "\"") else {
                throw UdevSyntaxError(line: number, reason: "value of \(key) is not in double quotes")
            }
            let value = String(rest[rest.index(after: rest.startIndex)..<close])
            rest = rest[rest.index(after: close)...]

            let isMatch = matchOperators.contains(op)
            guard isMatch ? matchKeys.contains(key) : assignKeys.contains(key) else {
                throw UdevSyntaxError(line: number, reason: "\(key) does not take \(op) (or is not a udev key)")
            }
            guard keysWithArgument.contains(key) == (argument != nil) else {
                throw UdevSyntaxError(
                    line: number, reason: "\(key) \(argument == nil ? "needs" : "takes no") {argument}")
            }
            if ["LABEL", "GOTO"].contains(key) && op != "=" {
                throw UdevSyntaxError(line: number, reason: "\(key) takes only =")
            }
            result.append(.init(key: key, argument: argument, op: op, value: value))

            if rest.isEmpty { return result }
            guard rest.hasPrefix(", "), rest.dropFirst(2).first?.isUppercase == true else {
                throw UdevSyntaxError(line: number, reason: "pairs must be separated by \", \" at \"\(rest)\"")
            }
            rest = rest.dropFirst(2)
        }
    }
}

@Suite
struct UdevRulesTests {
    static let required: [(vendor: String, product: String)] = [
        ("1546", "01a5"), ("1546", "01a6"), ("1546", "01a7"), ("1546", "01a8"), ("1546", "01a9"),
        ("067b", "2303"), ("067b", "aaa0"), ("10c4", "ea60"), ("10c4", "ea71"), ("091e", "0003"),
        ("0e8d", "3329"), ("1163", "0100"), ("1163", "0200"),
    ]

    func rules() throws -> [UdevRule] {
        try UdevRules.parse(String(contentsOfFile: rulesPath, encoding: .utf8))
    }

    @Test func fileSortsAfterDebiansGpsdRules() {
        let name = URL(fileURLWithPath: rulesPath).lastPathComponent
        #expect(name.hasSuffix(".rules"))
        #expect(name > "60-gpsd.rules")
        #expect(name < "70-")
    }

    @Test func everyLineIsACommentOrWellFormedPairs() throws {
        let rules = try rules()
        #expect(rules.count > 10)
        // Every GOTO lands on a LABEL after it, and labels are unique.
        let labels = rules.flatMap { rule in rule.pairs.filter { $0.key == "LABEL" }.map { ($0.value, rule.line) } }
        #expect(Set(labels.map(\.0)).count == labels.count)
        for rule in rules {
            for jump in rule.pairs where jump.key == "GOTO" {
                #expect(labels.contains { $0.0 == jump.value && $0.1 > rule.line }, "\(rule): GOTO \(jump.value)")
            }
        }
    }

    @Test func parserRejectsMalformedLines() {
        for bad in [
            #"SUBSYSTEM=="tty" GOTO="x""#, #"SUBSYSTEM==tty"#, #"BOGUS=="1""#, #"ENV=="1""#, #"ATTRS{idVendor}="1546""#,
            #"GROUP=="dialout""#, #"SUBSYSTEM=="tty","#, #"LABEL+="x""#, #"SYMLINK+="gps", "#,
        ] {
            #expect(throws: UdevSyntaxError.self, "\(bad)") { try UdevRules.parse(bad) }
        }
        #expect((try? UdevRules.parse(#"SUBSYSTEM=="tty", ENV{A}+="b c", TAG+="systemd""#))?.count == 1)
    }

    @Test func everyRequiredReceiverIsMatched() throws {
        let rules = try rules()
        var ids: [String] = []
        for rule in rules {
            let vendor = rule.match("ATTRS", "idVendor")
            let product = rule.match("ATTRS", "idProduct")
            guard vendor != nil || product != nil else { continue }
            let pair = "\(vendor ?? "?"):\(product ?? "?")"
            for id in [vendor, product] {
                let isHex = id.map { $0.count == 4 && $0.allSatisfy { "0123456789abcdef".contains($0) } } ?? false
                #expect(isHex, "\(rule): \(pair) is not a pair of 4 lowercase hex digits")
            }
            // Each id line marks the device; what is done to it is said once, below.
            #expect(rule.pairs.contains { $0.key == "ENV" && $0.argument == "FIELDLOG_GPS" && $0.op == "=" }, "\(rule)")
            ids.append(pair)
        }
        #expect(Set(ids).count == ids.count, "duplicate ids")
        for (vendor, product) in Self.required {
            #expect(ids.contains("\(vendor):\(product)"), "\(vendor):\(product) missing")
        }
    }

    @Test func ttyOnlyWithLinkGroupAndGpsdHandOff() throws {
        let rules = try rules()
        #expect(rules.first?.pairs.first.map { "\($0.key)\($0.op)\($0.value)" } == "SUBSYSTEM!=tty")
        let all = rules.flatMap(\.pairs)
        #expect(all.contains { $0.key == "SYMLINK" && $0.op == "+=" && $0.value == "gps-fieldlog" })
        #expect(all.contains { $0.key == "GROUP" && $0.op == "=" && $0.value == "dialout" })
        // The hand-off to gpsd, but only where 60-gpsd.rules has not asked for gpsdctl@ already.
        let handOff = try #require(
            rules.first { $0.pairs.contains { $0.key == "ENV" && $0.argument == "SYSTEMD_WANTS" && $0.op == "+=" } })
        #expect(handOff.pairs.contains { $0.key == "TAG" && $0.op == "+=" && $0.value == "systemd" })
        #expect(
            handOff.pairs.contains {
                $0.key == "ENV" && $0.argument == "SYSTEMD_WANTS" && $0.value == "gpsdctl@%k.service"
            })
        #expect(
            handOff.pairs.contains {
                $0.key == "ENV" && $0.argument == "SYSTEMD_WANTS" && $0.op == "!=" && $0.value.contains("gpsdctl@")
            })
        // Never overwrite what 60-gpsd.rules set, never a MODE or OWNER of our own.
        #expect(!all.contains { $0.argument == "SYSTEMD_WANTS" && $0.op == "=" })
        #expect(!all.contains { $0.key == "SYMLINK" && $0.op != "+=" })
        #expect(!all.contains { ["MODE", "OWNER", "RUN", "PROGRAM"].contains($0.key) })
    }

    @Test(.enabled(if: udevadmVerify != nil, "udevadm verify needs systemd 253 or later (Debian 12 has 252)"))
    func udevadmVerifyAcceptsTheRules() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(udevadmVerify))
        process.arguments = ["verify", rulesPath]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
    }
}
