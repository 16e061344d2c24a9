import ArgumentParser
import FieldLogDaemon
import FoundationEssentials
import Glibc

/// `--config FILE`, for `fieldlog run` and the commands that read what it records.
struct ConfigOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Read settings from this file (default: $FIELDLOG_CONFIG, else \(ConfigFile.defaultPath) if it exists).",
            discussion: "Options on the command line win over the file's. /dev/null reads none.",
            valueName: "file"))
    var config: String?
}

/// A command that takes settings from fieldlog.conf: those of its options named in `configKeys`.
protocol ConfiguredCommand: ParsableCommand {
    static var configKeys: Set<String> { get }
    var configOption: ConfigOption { get }
}

/// fieldlog.conf put in front of a command line. For an option given twice the parser keeps the last
/// value, so `fieldlog run --every 50` runs with 50 whatever the file says.
enum ConfiguredArguments {
    static let commands: [any ConfiguredCommand.Type] = [
        Run.self, Tail.self, Status.self, Walks.self, Export.self, Star.self, Unstar.self, Share.self,
        LivePageCommand.self, LiveShareCommand.self,
    ]

    /// `arguments` (without the program name) with the file's settings inserted after the subcommand.
    /// A file with any error stops everything: fieldlog does not run on a half-understood configuration.
    static func resolve(_ arguments: [String]) throws(ConfigFileError) -> [String] {
        guard let name = arguments.first,
            let command = commands.first(where: { $0._commandName == name })
        else { return arguments }
        let rest = Array(arguments.dropFirst())
        // Bad usage and --help are the parser's to report, after this returns.
        guard let parsed = try? command.parse(rest) else { return arguments }
        let explicitPath = parsed.configOption.config ?? ProcessInfo.processInfo.environment["FIELDLOG_CONFIG"]
        guard
            let file = try ConfigFile.load(path: explicitPath ?? ConfigFile.defaultPath, required: explicitPath != nil)
        else { return arguments }
        try check(file)
        let settings = file.entries.filter { command.configKeys.contains($0.key) }.map { "--\($0.key)=\($0.value)" }
        return [name] + settings + rest
    }

    /// Every entry must be an option of `fieldlog run` with a value its parser accepts.
    static func check(_ file: ConfigFile) throws(ConfigFileError) {
        for entry in file.entries {
            guard Run.configKeys.contains(entry.key) else {
                throw ConfigFileError(
                    path: file.path, line: entry.line, key: entry.key,
                    problem:
                        "not a setting of fieldlog; the settings are \(Run.configKeys.sorted().joined(separator: ", "))"
                )
            }
            do {
                _ = try Run.parse(["--\(entry.key)=\(entry.value)"])
            } catch {
                throw ConfigFileError(
                    path: file.path, line: entry.line, key: entry.key, problem: Run.message(for: error))
            }
        }
    }
}
