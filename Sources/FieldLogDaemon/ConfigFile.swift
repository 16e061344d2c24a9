import Glibc
import SystemIO

/// fieldlog.conf: a flat YAML mapping of option names to values (`every: 50`), read before the command
/// line, which overrides it. Values stay text: the command-line parser that owns each option judges them,
/// so an option means the same in the file and on the command line.
package struct ConfigFile: Sendable, Equatable {
    package static let defaultPath = "/etc/fieldlog/fieldlog.conf"
    /// A few dozen settings take a few KiB: anything much larger is not a configuration file, and is refused
    /// before it is read (a 50 MB file of comments took 28 s and 1.2 GB).
    package static let maximumSize = 64 << 10

    /// One `key: value` line.
    package struct Entry: Sendable, Equatable {
        package var key: String
        package var value: String
        package var line: Int

        package init(key: String, value: String, line: Int) {
            self.key = key
            self.value = value
            self.line = line
        }
    }

    package let path: String
    package let entries: [Entry]

    /// Parses `text` as the contents of `path`; an empty file, or one of comments only, has no entries.
    ///
    /// The file is YAML, of the one shape fieldlog needs: a mapping of plain keys to single values, plain,
    /// 'single-' or "double-quoted" (with YAML's escapes), one per line, with `#` comments. Anything else YAML
    /// has (lists, tables, anchors, tags, block scalars, values over several lines) is refused with the line,
    /// so that a file never means something other than what fieldlog reads.
    package init(path: String, text: String) throws(ConfigFileError) {
        self.path = path
        var entries: [Entry] = []
        // A key without a value: a list or a table may follow, indented; else it has no value.
        var keyWithoutValue: Entry?
        // CR LF is one Character in Swift: split on it too, so that a file with Windows line ends reads the same.
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })[...]
        if let first = lines.first, first.hasPrefix("\u{FEFF}") { lines[lines.startIndex] = first.dropFirst() }
        var started = false
        for (offset, rawLine) in lines.enumerated() {
            let number = offset + 1
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            let content = line.drop { $0 == " " || $0 == "\t" }
            func fail(_ problem: String, key: String? = nil) -> ConfigFileError {
                ConfigFileError(path: path, line: number, key: key, problem: problem)
            }
            if line.unicodeScalars.contains(where: Self.isUnprintable) {
                throw fail(
                    "not valid YAML: a control character or line separator (write it as an escape in double quotes)")
            }
            if content.isEmpty || content.hasPrefix("#") { continue }
            if content.startIndex != line.startIndex {
                if let keyWithoutValue {
                    throw ConfigFileError(
                        path: path, line: keyWithoutValue.line, key: keyWithoutValue.key,
                        problem: "expected a single value, not a list or a table")
                }
                throw fail("not valid YAML: a value must be on the line of its key")
            }
            if let keyWithoutValue {
                throw ConfigFileError(
                    path: path, line: keyWithoutValue.line, key: keyWithoutValue.key, problem: "has no value")
            }
            if !started && (line == "---" || line.hasPrefix("--- ")) {
                started = true
                continue
            }
            started = true
            if line.hasPrefix("- ") || line == "-" || line.hasPrefix("[") || line.hasPrefix("{") {
                throw fail("expected lines of `key: value`")
            }
            guard let colon = Self.keyEnd(line) else { throw fail("expected lines of `key: value`") }
            let key = String(line[..<colon]).trimmingSpaces()
            guard let first = key.first, !"\"'&*!|>%@`?,[]{}#".contains(first) else {
                throw fail("a key must be a plain name")
            }
            if entries.contains(where: { $0.key == key }) { throw fail("given more than once", key: key) }
            let entry = Entry(key: key, value: "", line: number)
            if let value = try Self.value(line[line.index(after: colon)...], error: { fail($0, key: key) }) {
                entries.append(Entry(key: key, value: value, line: number))
            } else {
                keyWithoutValue = entry
                entries.append(entry)
            }
        }
        if let keyWithoutValue {
            throw ConfigFileError(
                path: path, line: keyWithoutValue.line, key: keyWithoutValue.key, problem: "has no value")
        }
        self.entries = entries
    }

    /// What YAML does not allow written as it is (its readers differ on U+0085, U+2028 and U+2029: some
    /// break the line there).
    private static func isUnprintable(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x20...0x7E, 0xA0...0x2027, 0x202A...0xFEFE, 0xFF00...0xFFFD, 0x10000...: false
        default: true
        }
    }

    /// What ends a plain key or value: a colon followed by a space, a tab or the end of the line, or a `#`
    /// after a space or tab (a comment), whichever comes first.
    private enum Mark { case colon, comment }

    private static func firstMark(in text: Substring) -> (Mark, Substring.Index)? {
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(after: index)
            if text[index] == "#" && index > text.startIndex && [" ", "\t"].contains(text[text.index(before: index)]) {
                return (.comment, index)
            }
            if text[index] == ":" && (next == text.endIndex || text[next] == " " || text[next] == "\t") {
                return (.colon, index)
            }
            index = next
        }
        return nil
    }

    /// The colon that ends the key.
    private static func keyEnd(_ line: Substring) -> Substring.Index? {
        guard let (mark, index) = firstMark(in: line), mark == .colon else { return nil }
        return index
    }

    /// The value after a key's colon; nil for YAML's null (nothing, `~`, `null`).
    private static func value(
        _ text: Substring, error: (String) -> ConfigFileError
    ) throws(ConfigFileError) -> String? {
        let text = text.drop { $0 == " " || $0 == "\t" }
        guard let first = text.first, first != "#" else { return nil }
        var rest: Substring
        let value: String
        switch first {
        case "\"":
            (value, rest) = try doubleQuoted(text.dropFirst(), error: error)
        case "'":
            var out = ""
            rest = text.dropFirst()
            while true {
                guard let quote = rest.firstIndex(of: "'") else {
                    throw error("not valid YAML: a quoted value must end on its line")
                }
                out += rest[..<quote]
                rest = rest[rest.index(after: quote)...]
                guard rest.first == "'" else { break }
                out += "'"
                rest = rest.dropFirst()
            }
            value = out
        case "[", "{":
            throw error("expected a single value, not a list or a table")
        case "&", "*", "!", "|", ">", "%", "@", "`", ",", "]", "}":
            throw error("not valid YAML: a value beginning with \(first) (quote the value)")
        default:
            var end = text.endIndex
            switch firstMark(in: text) {
            case (.colon, _)?: throw error("not valid YAML: a colon and a space in a value (quote the value)")
            case let (.comment, index)?: end = index
            case nil: break
            }
            let plain = String(text[..<end]).trimmingSpaces()
            if plain.contains("\t") { throw error("not valid YAML: a tab in a value (quote the value)") }
            if ["-", "?", ":"].contains(plain.first) && (plain.count == 1 || plain.dropFirst().first == " ") {
                throw error("not valid YAML: a value beginning with \(plain.first!) (quote the value)")
            }
            return ["~", "null", "Null", "NULL"].contains(plain) ? nil : plain
        }
        rest = rest.drop { $0 == " " || $0 == "\t" }
        guard rest.isEmpty || rest.hasPrefix("#") else {
            throw error("not valid YAML: text after the quoted value")
        }
        return value
    }

    /// A double-quoted value after its opening quote, with YAML's escapes: the value and what follows it.
    private static func doubleQuoted(
        _ text: Substring, error: (String) -> ConfigFileError
    ) throws(ConfigFileError) -> (String, Substring) {
        var out = String.UnicodeScalarView()
        var scalars = text.unicodeScalars
        func hex(_ digits: Int) throws(ConfigFileError) -> Unicode.Scalar {
            let text = String(Substring(scalars.prefix(digits)))
            guard text.count == digits, let value = UInt32(text, radix: 16), let scalar = Unicode.Scalar(value) else {
                throw error("not valid YAML: a \\x, \\u or \\U escape needs \(digits) hex digits of a character")
            }
            scalars = scalars.dropFirst(digits)
            return scalar
        }
        while let scalar = scalars.popFirst() {
            switch scalar {
            case "\"":
                return (String(out), Substring(scalars))
            case "\\":
                guard let escape = scalars.popFirst() else { break }
                switch escape {
                case "0": out.append("\u{0}")
                case "a": out.append("\u{7}")
                case "b": out.append("\u{8}")
                case "t", "\t": out.append("\t")
                case "n": out.append("\n")
                case "v": out.append("\u{B}")
                case "f": out.append("\u{C}")
                case "r": out.append("\r")
                case "e": out.append("\u{1B}")
                case " ", "\"", "/", "\\": out.append(escape)
                case "N": out.append("\u{85}")
                case "_": out.append("\u{A0}")
                case "L": out.append("\u{2028}")
                case "P": out.append("\u{2029}")
                case "x": out.append(try hex(2))
                case "u": out.append(try hex(4))
                case "U": out.append(try hex(8))
                default: throw error("not valid YAML: unknown escape \\\(escape)")
                }
            default:
                out.append(scalar)
            }
        }
        throw error("not valid YAML: a quoted value must end on its line")
    }

    /// `text` as a value that reads back as itself: plain when it can be, else double-quoted.
    package static func quoted(_ text: String) -> String {
        if (try? ConfigFile(path: "", text: "k: " + text))?.entries == [Entry(key: "k", value: text, line: 1)] {
            return text
        }
        // Line breaks and other control characters as escapes: written raw, YAML folds or refuses them.
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": quoted += "\\\\"
            case "\"": quoted += "\\\""
            case "\n": quoted += "\\n"
            case "\t": quoted += "\\t"
            case _
            where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}"
                || scalar == "\u{2029}" || scalar == "\u{FEFF}":
                let hex = String(scalar.value, radix: 16, uppercase: true)
                quoted += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }

    /// The file at `path`, or nil when it does not exist and `required` is false.
    package static func load(path: String, required: Bool) throws(ConfigFileError) -> ConfigFile? {
        let bytes: [UInt8]
        do {
            bytes = try FileIO.readAll(path, limit: maximumSize)
        } catch {
            if error.number == EFBIG {
                throw ConfigFileError(
                    path: path, line: nil, key: nil,
                    problem: "too large (\(error.reason)); a configuration file is at most \(maximumSize) bytes")
            }
            if error.number == ENOENT {
                if !required { return nil }
                throw ConfigFileError(path: path, line: nil, key: nil, problem: "no such file")
            }
            throw ConfigFileError(path: path, line: nil, key: nil, problem: "cannot read it: " + error.reason)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigFileError(path: path, line: nil, key: nil, problem: "not UTF-8 text")
        }
        return try ConfigFile(path: path, text: text)
    }
}

/// What is wrong with a configuration file, and where: `fieldlog.conf:12: every: must be positive`.
package struct ConfigFileError: Error, Equatable, CustomStringConvertible {
    package var path: String
    package var line: Int?
    package var key: String?
    package var problem: String

    package init(path: String, line: Int?, key: String?, problem: String) {
        self.path = path
        self.line = line
        self.key = key
        self.problem = problem
    }

    package var description: String {
        var text = path
        if let line { text += ":\(line)" }
        if let key { text += ": \(key)" }
        return text + ": " + problem
    }
}

extension StringProtocol {
    /// Without the spaces and tabs at either end.
    fileprivate func trimmingSpaces() -> String {
        let isSpace = { (character: Character) in character == " " || character == "\t" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
