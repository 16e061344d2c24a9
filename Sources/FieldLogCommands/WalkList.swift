import WalkJournal
import WalkModel

/// `fieldlog walks`: one line per walk, oldest first.
package enum WalkList {
    package static func text(stateDirectory: String) throws(CommandError) -> String {
        let store = JournalStore(directory: stateDirectory)
        let walks: [WalkSummary]
        do {
            // From walks.index: a stat per walk, a journal read only where it changed.
            walks = try WalkIndex.summaries(in: store)
        } catch {
            throw CommandError("\(error)")
        }
        guard !walks.isEmpty else { return "no walks in \(store.directory)\n" }
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
        return text
    }
}
