import ArgumentParser
import FieldLogCommands

struct Walks: ParsableCommand, ConfiguredCommand {
    static let configuration = CommandConfiguration(
        abstract: "List recorded walks.",
        discussion: """
            One line per walk, oldest first: id, start and end (GPS time, UTC), distance, milestones, and \
            favourites (`fieldlog star`).
            """
    )

    static let configKeys: Set<String> = ["state-dir"]

    @OptionGroup var configOption: ConfigOption

    @OptionGroup var stateDirectory: StateDirectoryOption

    func run() throws {
        try writeStandardOutput(
            try command { () throws(CommandError) in
                try WalkList.text(stateDirectory: stateDirectory.path)
            })
    }
}
