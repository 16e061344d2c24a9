import ArgumentParser
import FieldLogCommands

/// `fieldlog star` and `fieldlog unstar`: one type, two names, differing only in the mark they leave.
struct Star: ParsableCommand, ConfiguredCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mark a milestone of a walk as a favourite.",
        discussion: """
            Appends a record to the walk's journal (synced, like the recorder's own lines; safe while \
            the walk is being recorded). Favourites show as ★ in `fieldlog tail`, are counted by \
            `fieldlog walks`, and are marked in every export ("starred" in journal.json and GeoJSON, \
            <sym>Favorite</sym><type>favourite</type> in GPX, a filter in the HTML page). \
            `fieldlog unstar` takes the mark back.
            """)

    static let configKeys: Set<String> = ["state-dir"]

    @OptionGroup var options: FavouriteOptions
    var configOption: ConfigOption { options.configOption }

    func run() throws {
        try options.mark(starred: true)
    }
}

struct Unstar: ParsableCommand, ConfiguredCommand {
    static let configuration = CommandConfiguration(
        abstract: "Take back a milestone's favourite mark.",
        discussion: "Appends a record to the walk's journal; see `fieldlog star`.")

    static let configKeys: Set<String> = ["state-dir"]

    @OptionGroup var options: FavouriteOptions
    var configOption: ConfigOption { options.configOption }

    func run() throws {
        try options.mark(starred: false)
    }
}

struct FavouriteOptions: ParsableArguments {
    @OptionGroup var configOption: ConfigOption

    @OptionGroup var stateDirectory: StateDirectoryOption

    @Option(help: "The walk: an id from `fieldlog walks`, or latest.")
    var walk: String = "latest"

    @Argument(help: "The milestone's number, as `fieldlog tail` and the exports show it.")
    var milestone: Int

    func mark(starred: Bool) throws {
        try writeStandardOutput(
            try command { () throws(CommandError) in
                try Favourites.mark(starred, milestone: milestone, walk: walk, stateDirectory: stateDirectory.path)
            })
    }
}
