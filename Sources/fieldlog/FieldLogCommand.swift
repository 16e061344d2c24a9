import ArgumentParser

@main
struct FieldLogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fieldlog",
        abstract: "Record a walk from gpsd, follow it live, and take it home.",
        discussion: """
            fieldlog reads live fixes from gpsd, records the walk in a crash-safe journal with a \
            milestone every --every metres, and exports it as JSON, GPX or GeoJSON.
            """,
        subcommands: [Run.self, Tail.self, Status.self, Walks.self, Export.self, ThumbnailCommand.self]
    )
}
