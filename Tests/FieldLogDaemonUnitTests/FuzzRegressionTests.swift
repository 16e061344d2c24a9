import FieldLogDaemon
import FieldLogTestSupport
import Foundation
import Testing
import WalkJournal
import WalkModel

// Inputs that made a fuzz target fail (fuzz/regressions/TARGET/, see fuzz/README.md), fed to the real code
// with the invariant the target checks, and the findings as plain cases.

private func regressions(_ target: String) throws -> [(name: String, bytes: [UInt8])] {
    let directory = Harness.repository + "/fuzz/regressions/" + target
    return try FileManager.default.contentsOfDirectory(atPath: directory).sorted().map {
        ($0, Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0))))
    }
}

struct FuzzRegressionTests {
    /// The byte scanner only takes lines JSONDecoder takes, and reads them the same.
    @Test func journalScannerAgreesWithJSONDecoder() throws {
        let inputs = try regressions("journal")
        #expect(!inputs.isEmpty)
        for (name, bytes) in inputs {
            _ = WalkLog.parse(id: "regression", contents: bytes)
            for line in bytes.split(separator: UInt8(ascii: "\n")) {
                Array(line).withUnsafeBufferPointer { line in
                    guard let scanned = JournalLineScanner.scan(line) else { return }
                    let slow = try? JSONDecoder().decode(JournalLine.self, from: Data(line))
                    #expect(slow?.record == scanned, "\(name)")
                }
            }
        }
    }

    /// Found by the journal target: a string holding bytes that are not UTF-8 was taken by the scanner (with
    /// U+FFFD in their place) though JSONDecoder refuses the line; now the line is damaged for both.
    @Test func aJournalLineThatIsNotUTF8IsDamaged() {
        var line = Array(#"{"event":"gpsd_lost","message":"conn"#.utf8)
        line += [0xFF, 0xC3, 0x28]
        line += Array(#"","type":"event","wall":"2026-11-23T17:01:00Z"}"#.utf8)
        line.withUnsafeBufferPointer { bytes in
            #expect(JournalLineScanner.scan(bytes) == nil)
            #expect(JournalCodec.decode(bytes) == nil)
        }
        let log = WalkLog.parse(id: "w", contents: line + Array("\n".utf8))
        #expect(log.damagedLines == [1] && log.events.isEmpty)
    }

    /// Settings printed as --check-config prints them read back as the same settings.
    @Test func printedSettingsReadBack() throws {
        let inputs = try regressions("config")
        #expect(!inputs.isEmpty)
        for (name, bytes) in inputs {
            guard let text = String(validating: bytes, as: UTF8.self),
                let file = try? ConfigFile(path: name, text: text)
            else { continue }
            let printed = file.entries.map { "\($0.key): \(ConfigFile.quoted($0.value))" }.joined(separator: "\n")
            let again = try ConfigFile(path: name, text: printed)
            #expect(again.entries.map(\.value) == file.entries.map(\.value), "\(name)")
        }
    }

    /// Found by the config target: a double-quoted value with line breaks (YAML folds them, but an empty
    /// line is a newline) was printed with raw newlines, which read back as spaces.
    @Test func quotedEscapesLineBreaksAndControlCharacters() throws {
        for text in ["a\nb", "a\n\nb", "x\r\ny", "tab\there", "\u{1}", "nel\u{85}", "ls\u{2028}", "end\n"] {
            let entries = try ConfigFile(path: "t", text: "k: " + ConfigFile.quoted(text)).entries
            #expect(entries.first?.value == text, "\(text.debugDescription)")
        }
    }
}
