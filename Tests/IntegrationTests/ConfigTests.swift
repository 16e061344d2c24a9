import FieldLogDaemon
import FieldLogTestSupport
import Foundation
import Testing

/// fieldlog.conf: the parser's errors point at the line and key, and the real binary applies the file
/// under the command line and refuses to run on a file it does not fully understand.
struct ConfigTests {
    let directory = Harness.temporaryDirectory()

    func parse(_ text: String) throws(ConfigFileError) -> [ConfigFile.Entry] {
        try ConfigFile(path: "f.conf", text: text).entries
    }

    func error(_ text: String) -> ConfigFileError? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func entriesKeepTheirTextAndLine() throws {
        let entries = try parse(
            """
            # comment

            every: 50   # a trailing comment
            gpsd: "[::1]:2948"
            photos-dir: /srv/my photos
            max-eph: 1e2
            """)
        #expect(
            entries == [
                .init(key: "every", value: "50", line: 3),
                .init(key: "gpsd", value: "[::1]:2948", line: 4),
                .init(key: "photos-dir", value: "/srv/my photos", line: 5),
                .init(key: "max-eph", value: "1e2", line: 6),
            ])
        #expect(try parse("").isEmpty)
        #expect(try parse("# only comments\n\n").isEmpty)
    }

    @Test func errorsNameTheLineAndKey() {
        #expect(
            error("gap: 3\nevery: [1, 2]\n")
                == .init(
                    path: "f.conf", line: 2, key: "every", problem: "expected a single value, not a list or a table"))
        #expect(error("gap: 3\n\nevery:\n") == .init(path: "f.conf", line: 3, key: "every", problem: "has no value"))
        #expect(error("every: ~\n")?.problem == "has no value")
        #expect(
            error("gap: 3\nevery: 4\ngap: 5\n")
                == .init(
                    path: "f.conf", line: 3, key: "gap", problem: "given more than once"))
        #expect(error("- every\n- gap\n")?.problem == "expected lines of `key: value`")
        let broken = error("gap: 3\nevery: \"unterminated\nmore: 1\n")
        #expect(broken?.line == 2 || broken?.line == 3 || broken?.line == 4)
        #expect(broken?.problem.hasPrefix("not valid YAML") == true)
        #expect(
            ConfigFileError(path: "/etc/fieldlog/fieldlog.conf", line: 7, key: "every", problem: "bad").description
                == "/etc/fieldlog/fieldlog.conf:7: every: bad")
    }

    @Test func quotedValuesReadBackAsThemselves() throws {
        for text in [
            "127.0.0.1:2947", "[::1]:2947", "/srv/my photos", "null", "", " lead", "a #b", "x: y", "\"q\"", "~",
        ] {
            let entries = try parse("k: " + ConfigFile.quoted(text))
            #expect(entries.first?.value == text, "\(text)")
        }
        #expect(ConfigFile.quoted("/var/lib/fieldlog") == "/var/lib/fieldlog")
    }

    /// What fieldlog reads from a file is what a full YAML parser reads from it (PyYAML, every scalar as text),
    /// and what it writes (`quoted`) reads back the same there too; the YAML it does not take is refused.
    @Test(
        .enabled(
            if: FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/yaml"),
            "needs python3-yaml (scripts/install-deps --tests)"))
    func valuesReadAsAYAMLParserReadsThem() async throws {
        let texts = [
            "127.0.0.1:2947", "[::1]:2947", "/srv/my photos", "null", "", " lead", "trail ", "a #b", "a# b", "x: y",
            "\"q\"", "'s'", "it's", "~", "-5", "- 5", "#", "yes", "1e2", "tab\there", "line\nbreak", "back\\slash",
            "ünïcödé 🚶", "\u{7}bell", "\u{2028}", "{a}", "[a]", "&anchor", "*alias", "!tag", "|", ">", "%", "@", "`",
            "?", ":", "a:b", "a :b", "key: 'x'",
        ]
        let quotedLines = texts.enumerated().map { "k\($0.offset): \(ConfigFile.quoted($0.element))" }
        let handWritten = [
            "plain: some value   # comment", "single: 'it''s # not a comment'",
            "double: \"a\\tb\\u00e9\\x41\\U0001F6B6\\/\"",
            "spaced  :   x", "colon:in:key: v", "empty-double: \"\"", "empty-single: ''", "dashed: -x", "hash#key: v",
        ]
        let file = (["# fieldlog.conf", "---"] + quotedLines + ["", "  # indented comment"] + handWritten).joined(
            separator: "\n")
        let entries = try ConfigFile(path: "f.conf", text: file).entries
        #expect(Array(entries.prefix(texts.count).map(\.value)) == texts)
        let path = directory + "/f.conf"
        try file.write(toFile: path, atomically: true, encoding: .utf8)
        let pyyaml = try await Child(
            "/usr/bin/python3",
            [
                "-c",
                "import json, sys, yaml; print(json.dumps(yaml.load(open(sys.argv[1], encoding='utf-8'), Loader=yaml.BaseLoader)))",
                path,
            ],
            in: directory
        ).wait(timeout: 30)
        #expect(pyyaml.status == 0, "\(pyyaml.stderr)")
        let parsed = try JSONDecoder().decode([String: String].self, from: Data(pyyaml.stdout.utf8))
        #expect(parsed == Dictionary(uniqueKeysWithValues: entries.map { ($0.key, $0.value) }))

        // YAML fieldlog does not take: each refused, with its line.
        for (text, problem) in [
            ("every:\n  - 1\n", "expected a single value, not a list or a table"),
            ("every:\n  sub: 1\n", "expected a single value, not a list or a table"),
            ("every: {a: 1}\n", "expected a single value, not a list or a table"),
            ("photos-dir: /srv/my\n  photos\n", "not valid YAML: a value must be on the line of its key"),  // line 2
            ("every: &a 5\n", "not valid YAML: a value beginning with & (quote the value)"),
            ("every: |\n  5\n", "not valid YAML: a value beginning with | (quote the value)"),
            ("every: \"5\" 6\n", "not valid YAML: text after the quoted value"),
            ("every: \"\\q\"\n", "not valid YAML: unknown escape \\q"),
            ("every: a: b\n", "not valid YAML: a colon and a space in a value (quote the value)"),
            ("\"every\": 5\n", "a key must be a plain name"),
            ("just text\n", "expected lines of `key: value`"),
            (
                "every: 5\u{7}\n",
                "not valid YAML: a control character or line separator (write it as an escape in double quotes)"
            ),
            ("every: 5\t6\n", "not valid YAML: a tab in a value (quote the value)"),
        ] {
            #expect(error(text)?.problem == problem, "\(text)")
            #expect(error(text)?.line == (text.hasPrefix("photos-dir") ? 2 : 1), "\(text)")
        }
    }

    @Test func aMissingFileIsAnErrorOnlyWhenAskedFor() throws {
        #expect(try ConfigFile.load(path: directory + "/none.conf", required: false) == nil)
        #expect(throws: ConfigFileError(path: directory + "/none.conf", line: nil, key: nil, problem: "no such file")) {
            try ConfigFile.load(path: directory + "/none.conf", required: true)
        }
    }

    /// CR LF is one Character in Swift: a file with Windows line ends was one line, refused as "not valid YAML".
    @Test func windowsLineEndsReadTheSameAsUnixOnes() throws {
        let unix = "# settings\nevery: 50   # a comment\ngpsd: \"[::1]:2948\"\n\nphotos-dir: /srv/my photos\n"
        let windows = unix.replacingOccurrences(of: "\n", with: "\r\n")
        #expect(windows.unicodeScalars.filter { $0 == "\r" }.count == 5)
        let entries = try parse(windows)
        #expect(entries == (try parse(unix)))
        #expect(entries.map(\.value) == ["50", "[::1]:2948", "/srv/my photos"])
        // A CR alone inside a line is still refused.
        #expect(error("every: 5\r0\n")?.problem.hasPrefix("not valid YAML") == true)
    }

    /// A 50 MB file of comments took 28 s and 1.2 GB: the size is checked before the file is read.
    @Test func anOversizedFileIsRefusedBeforeItIsRead() async throws {
        let path = directory + "/huge.conf"
        let comments = String(repeating: "# a comment line of forty characters..\n", count: 1 << 20 / 40 + 1)
        try ("every: 50\n" + comments).write(toFile: path, atomically: true, encoding: .utf8)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let started = Date()
        #expect(
            throws: ConfigFileError(
                path: path, line: nil, key: nil,
                problem: "too large (\(size) bytes); a configuration file is at most 65536 bytes")
        ) {
            try ConfigFile.load(path: path, required: true)
        }
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed < 0.5)
        print("configuration of \(size) bytes refused in \(String(format: "%.4f", elapsed)) s")
        let outcome = try await fieldlog(["run", "--check-config", "--config", path], in: directory)
        #expect(outcome.status == 1)
        #expect(outcome.stdout.isEmpty)
        #expect(
            outcome.stderr
                == "fieldlog: \(path): too large (\(size) bytes); a configuration file is at most 65536 bytes\n")
        // A file just under the bound is read.
        try ("every: 50\n" + comments.prefix(60_000)).write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try ConfigFile.load(path: path, required: true)?.entries.map(\.key) == ["every"])
    }

    // MARK: the binary

    func checkConfig(_ arguments: [String] = [], file: String? = nil) async throws -> Outcome {
        var environment: [String: String] = [:]
        if let file {
            let path = directory + "/fieldlog.conf"
            try file.write(toFile: path, atomically: true, encoding: .utf8)
            environment["FIELDLOG_CONFIG"] = path
        }
        return try await fieldlog(["run", "--check-config"] + arguments, in: directory, environment: environment)
    }

    func settings(_ outcome: Outcome) -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: outcome.stdout.split(separator: "\n").compactMap { line in
                line.firstRange(of: ": ").map { (String(line[..<$0.lowerBound]), String(line[$0.upperBound...])) }
            })
    }

    @Test func theCommandLineWinsOverTheFile() async throws {
        let outcome = try await checkConfig(["--every", "75"], file: "every: 50\ngap: 45\nlog-level: debug\n")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let values = settings(outcome)
        #expect(values["every"] == "75.0")
        #expect(values["gap"] == "45.0")
        #expect(values["log-level"] == "debug")
        #expect(values["idle-gap"] == "1800.0", "untouched settings keep their defaults")
    }

    @Test func flickrsRateLimitBindsFlickrOnly() async throws {
        let flickr = try await checkConfig(["--flickr-rate", "100000"])
        #expect(flickr.status != 0)
        #expect(flickr.stderr.contains("1 to 3599"))
        let mirror = try await checkConfig([
            "--flickr-rate", "100000", "--flickr-endpoint", "http://127.0.0.1:8080/rest",
        ])
        #expect(mirror.status == 0, "\(mirror.stderr)")
        #expect(settings(mirror)["flickr-rate"] == "100000")
    }

    @Test func anInvalidFileStopsFieldlogWithTheLineAndKey() async throws {
        for (file, message) in [
            ("gap: 3\nevery: -5\n", "fieldlog.conf:2: every: --every must be a positive number of metres"),
            ("gap: 3\nevry: 5\n", "fieldlog.conf:2: evry: not a setting of fieldlog"),
            ("every: 50\nonce: true\n", "fieldlog.conf:2: once: not a setting"),
            ("gap: 3\nevery: abc\n", "fieldlog.conf:2: every: The value 'abc' is invalid"),
            ("gpsd: localhost\n", "fieldlog.conf:1: gpsd:"),
            ("log-level: loud\n", "fieldlog.conf:1: log-level:"),
        ] {
            let outcome = try await checkConfig(file: file)
            #expect(outcome.status == 1, "\(file)")
            #expect(outcome.stdout.isEmpty, "\(file)")
            #expect(outcome.stderr.hasPrefix("fieldlog: \(directory)/"), "\(outcome.stderr)")
            #expect(outcome.stderr.contains(message), "\(outcome.stderr)")
        }
        // Not even the reading commands run on a broken file.
        try "every: [\n".write(toFile: directory + "/broken.conf", atomically: true, encoding: .utf8)
        let walks = try await fieldlog(["walks", "--config", directory + "/broken.conf"], in: directory)
        #expect(walks.status == 1)
        #expect(walks.stderr.contains("broken.conf:"))
        let missing = try await fieldlog(
            ["run", "--config", directory + "/none.conf", "--check-config"], in: directory)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("none.conf: no such file"))
    }

    /// deploy/fieldlog.conf lists every setting, commented out, with the default fieldlog really has; with
    /// its lines uncommented it is a valid file.
    @Test func theShippedExampleDocumentsEveryDefault() async throws {
        let defaults = try await checkConfig(["--config", "/dev/null"])
        #expect(defaults.status == 0, "\(defaults.stderr)")
        let example = try String(contentsOfFile: Harness.repository + "/deploy/fieldlog.conf", encoding: .utf8)
        let documented = example.split(separator: "\n").filter { $0.wholeMatch(of: /# [a-z-]+: \S.*/) != nil }
            .map { $0.dropFirst(2) }
        let exampleValues = Dictionary(
            uniqueKeysWithValues: documented.map { line in
                let colon = line.firstIndex(of: ":")!
                return (String(line[..<colon]), String(line[line.index(colon, offsetBy: 2)...]))
            })
        let defaultLines = defaults.stdout.split(separator: "\n")
        #expect(exampleValues.count == defaultLines.count)
        for line in defaultLines {
            if line.hasPrefix("# ") {  // not set by default: the example shows a value to use
                let key = String(line.dropFirst(2).prefix { $0 != ":" })
                #expect(exampleValues[key] != nil, "\(key) is documented")
            } else {
                let key = String(line.prefix { $0 != ":" })
                #expect("\(key): \(exampleValues[key] ?? "missing")" == line, "the example's default for \(key)")
            }
        }
        let uncommented = try await checkConfig(file: documented.joined(separator: "\n"))
        #expect(uncommented.status == 0, "\(uncommented.stderr)")
    }
}
