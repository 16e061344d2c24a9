import FoundationEssentials
import WalkJournal

/// `fieldlog star` and `fieldlog unstar`: a favourite mark appended to a walk's journal, synced.
package enum Favourites {
    /// Marks (or unmarks) `milestone` of `walk` (an id, or latest); what it did, as a line.
    package static func mark(
        _ starred: Bool, milestone: Int, walk: String, stateDirectory: String
    ) throws(CommandError) -> String {
        let store = JournalStore(directory: stateDirectory)
        do {
            let id = try store.resolve(walk)
            let changed = try store.setStarred(
                starred, milestone: milestone, walk: id, wall: Date().timeIntervalSince1970)
            let state = starred ? "a favourite" : "not a favourite"
            return "milestone \(milestone) of walk \(id) is \(changed ? "now" : "already") \(state)\n"
        } catch {
            throw CommandError("\(error)")
        }
    }
}
