import ArgumentParser
import WalkJournal
import WalkModel

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
        let store = JournalStore(directory: stateDirectory.path)
        let walks: [WalkSummary]
        do {
            // From walks.index: a stat per walk, a journal read only where it changed.
            walks = try WalkIndex.summaries(in: store)
        } catch {
            throw CleanExit.failure("fieldlog: \(error)")
        }
        guard !walks.isEmpty else {
            try writeStandardOutput("no walks in \(store.directory)\n")
            return
        }
        var text = "ID                  STARTED               ENDED                 DISTANCE  MILESTONES  FAVOURITES\n"
        for walk in walks {
            let started = walk.started.map(Timestamp.format) ?? "-"
            let ended = walk.ended.map(Timestamp.format) ?? "(open)"
            let distance = walk.distance.wholeText + " m"
            let columns: [String] = [
                walk.id.padding(19), started.padding(21), ended.padding(21), distance.padding(9, left: true),
                String(walk.milestones).padding(11, left: true), String(walk.favourites).padding(11, left: true),
            ]
            text += columns.joined(separator: " ") + "\n"
        }
        try writeStandardOutput(text)
    }
}

extension String {
    func padding(_ width: Int, left: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, width - count))
        return left ? fill + self : self + fill
    }
}
