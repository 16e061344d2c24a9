import Foundation
import Yams

/// fieldlog.conf: a flat YAML mapping of option names to values (`every: 50`), read before the command
/// line, which overrides it. Values stay text: the command-line parser that owns each option judges them,
/// so an option means the same in the file and on the command line.
public struct ConfigFile: Sendable, Equatable {
    public static let defaultPath = "/etc/fieldlog/fieldlog.conf"

    /// One `key: value` line.
    public struct Entry: Sendable, Equatable {
        public var key: String
        public var value: String
        public var line: Int

        public init(key: String, value: String, line: Int) {
            self.key = key
            self.value = value
            self.line = line
        }
    }

    public let path: String
    public let entries: [Entry]

    /// Parses `text` as the contents of `path`; an empty file, or one of comments only, has no entries.
    public init(path: String, text: String) throws(ConfigFileError) {
        self.path = path
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch YamlError.duplicatedKeysInMapping(let duplicates, _) {
            // Yams points at the mapping; the line to fix is the key's second appearance.
            let key = duplicates.first ?? ""
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().filter {
                $0.element.drop(while: { $0 == " " }).hasPrefix(key + ":")
            }
            throw ConfigFileError(
                path: path, line: lines.dropFirst().first.map { $0.offset + 1 }, key: key,
                problem: "given more than once")
        } catch let error as YamlError {
            throw ConfigFileError(path: path, line: error.line, key: nil, problem: error.problem)
        } catch {
            throw ConfigFileError(path: path, line: nil, key: nil, problem: "\(error)")
        }
        guard let root, !(root.scalar.map(Self.isNull) ?? false) else {
            entries = []
            return
        }
        guard let mapping = root.mapping else {
            throw ConfigFileError(
                path: path, line: root.mark?.line, key: nil, problem: "expected lines of `key: value`")
        }
        entries = try mapping.map { (key, value) throws(ConfigFileError) in
            guard let name = key.scalar?.string else {
                throw ConfigFileError(path: path, line: key.mark?.line, key: nil, problem: "a key must be a plain name")
            }
            guard let scalar = value.scalar else {
                throw ConfigFileError(
                    path: path, line: value.mark?.line ?? key.mark?.line, key: name,
                    problem: "expected a single value, not a list or a table")
            }
            if Self.isNull(scalar) {
                throw ConfigFileError(path: path, line: key.mark?.line, key: name, problem: "has no value")
            }
            return Entry(key: name, value: scalar.string, line: key.mark?.line ?? 0)
        }
    }

    /// `key:`, `key: ~` and `key: null` (YAML's null): an option without a value.
    private static func isNull(_ scalar: Node.Scalar) -> Bool {
        scalar.style == .plain && ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    /// Why a file could not be read, as the system says it: "Permission denied", "Is a directory".
    private static func reason(_ error: any Error) -> String {
        if (error as? CocoaError)?.code == .fileReadNoSuchFile { return "no such file" }
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        if let underlying, underlying.domain == NSPOSIXErrorDomain {
            return "cannot read it: " + String(cString: strerror(Int32(underlying.code)))
        }
        return "cannot read it"
    }

    /// `text` as a YAML scalar that reads back as itself: plain when it can be, else double-quoted.
    public static func quoted(_ text: String) -> String {
        if let node = try? Yams.compose(yaml: "k: " + text), node.mapping?["k"]?.scalar?.string == text,
            !isNull(node.mapping?["k"]?.scalar ?? .init(""))
        {
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
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}"
                || scalar == "\u{2029}":
                let hex = String(scalar.value, radix: 16, uppercase: true)
                quoted += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }

    /// The file at `path`, or nil when it does not exist and `required` is false.
    public static func load(path: String, required: Bool) throws(ConfigFileError) -> ConfigFile? {
        let data: Data
        do {
            // A FileHandle, not Data(contentsOf:), which cannot read /dev/null.
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            data = try handle.readToEnd() ?? Data()
        } catch CocoaError.fileReadNoSuchFile where !required {
            return nil
        } catch {
            throw ConfigFileError(path: path, line: nil, key: nil, problem: Self.reason(error))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigFileError(path: path, line: nil, key: nil, problem: "not UTF-8 text")
        }
        return try ConfigFile(path: path, text: text)
    }
}

/// What is wrong with a configuration file, and where: `fieldlog.conf:12: every: must be positive`.
public struct ConfigFileError: Error, Equatable, CustomStringConvertible {
    public var path: String
    public var line: Int?
    public var key: String?
    public var problem: String

    public init(path: String, line: Int?, key: String?, problem: String) {
        self.path = path
        self.line = line
        self.key = key
        self.problem = problem
    }

    public var description: String {
        var text = path
        if let line { text += ":\(line)" }
        if let key { text += ": \(key)" }
        return text + ": " + problem
    }
}

extension YamlError {
    fileprivate var line: Int? {
        switch self {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): mark.line
        default: nil
        }
    }

    fileprivate var problem: String {
        switch self {
        case .scanner(_, let problem, _, _), .parser(_, let problem, _, _), .composer(_, let problem, _, _):
            "not valid YAML: \(problem)"
        default:
            "not valid YAML: \(self)"
        }
    }
}
