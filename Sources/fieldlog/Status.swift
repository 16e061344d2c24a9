import ArgumentParser
import FieldLogCommands

struct Status: ParsableCommand, ConfiguredCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what the recorder is doing.",
        discussion: """
            The current walk, its distance and milestones, how long ago the last fix arrived, and \
            whether the recorder is running and connected to gpsd.
            """
    )

    static let configKeys: Set<String> = ["state-dir"]

    @OptionGroup var configOption: ConfigOption

    @OptionGroup var stateDirectory: StateDirectoryOption

    func run() throws {
        try writeStandardOutput(
            try command { () throws(CommandError) in
                try StatusReport.text(stateDirectory: stateDirectory.path)
            })
    }
}
