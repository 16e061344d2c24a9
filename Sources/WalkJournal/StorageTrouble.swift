/// Where the storage stands while it fails: what `fieldlog status` and the log say.
package struct StorageTrouble: Sendable, Equatable {
    /// System-clock time of the first failure.
    package var since: Double
    /// The latest failure, worded for a person ("cannot write ...: No space left on device").
    package var reason: String
    /// Journal records held in memory, waiting to be written.
    package var heldRecords: Int
    /// Fixes not kept because the memory for held records was full.
    package var droppedFixes: Int

    package init(since: Double, reason: String, heldRecords: Int, droppedFixes: Int) {
        self.since = since
        self.reason = reason
        self.heldRecords = heldRecords
        self.droppedFixes = droppedFixes
    }
}

/// As status.json writes it.
extension StorageTrouble: Codable {
    enum CodingKeys: String, CodingKey {
        case since, reason
        case heldRecords = "held_records"
        case droppedFixes = "dropped_fixes"
    }
}
