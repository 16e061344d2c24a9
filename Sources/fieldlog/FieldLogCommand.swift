import ArgumentParser
import CBuildStamp

struct FieldLogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fieldlog",
        abstract: "Record a walk from gpsd, follow it live, and take it home.",
        discussion: """
            fieldlog reads live fixes from gpsd, records the walk in a crash-safe journal with a \
            milestone every --every metres, and exports it as JSON, GPX, GeoJSON or one HTML page.
            """,
        version: String(cString: fieldlog_build_version()),
        subcommands: [
            Run.self, Tail.self, Status.self, Walks.self, Export.self, Star.self, Unstar.self, ThumbnailCommand.self,
            Share.self,
            LivePageCommand.self, LiveShareCommand.self,
        ]
    )

    /// The command line with fieldlog.conf's settings in front of it.
    static func main() async {
        let arguments: [String]
        do {
            arguments = try ConfiguredArguments.resolve(Array(CommandLine.arguments.dropFirst()))
        } catch {
            exit(withError: CleanExit.failure("fieldlog: \(error)"))
        }
        await main(arguments)
    }
}
