package import WalkJournal
import WalkModel

/// What the recorder is doing, as one value: `WalkRecorder.status` gives it, `status.json` encodes it beside the
/// process's own facts (`StatusFile.Contents`), `fieldlog status` prints it and the live page's status line
/// shows it beside photos and sharing (`LiveStatus`).
package struct RecordingStatus: Sendable, Equatable {
    /// The walk being recorded, or the one a restart may resume; nil before the first.
    package var walkID: String?
    package var distance: Double
    package var milestones: Int
    /// GPS time of the last fix journaled.
    package var lastFixTime: Double?
    /// Set while journal records cannot be written and are held in memory.
    package var storage: StorageTrouble?
    /// Fixes dropped this session for an implausible GPS time, and the first GPS time of the latest episode.
    package var suspectFixes: Int
    package var lastSuspectTime: Double?
    /// Fixes dropped this session for their accuracy, position, a jump or a time that did not advance.
    package var rejectedFixes: Int

    package init(
        walkID: String? = nil, distance: Double = 0, milestones: Int = 0, lastFixTime: Double? = nil,
        storage: StorageTrouble? = nil, suspectFixes: Int = 0, lastSuspectTime: Double? = nil, rejectedFixes: Int = 0
    ) {
        self.walkID = walkID
        self.distance = distance
        self.milestones = milestones
        self.lastFixTime = lastFixTime
        self.storage = storage
        self.suspectFixes = suspectFixes
        self.lastSuspectTime = lastSuspectTime
        self.rejectedFixes = rejectedFixes
    }
}

/// status.json's keys. Times are written as journal timestamps, the distance to a tenth of a metre.
extension RecordingStatus: Codable {
    enum CodingKeys: String, CodingKey {
        case walk, milestones, storage
        case distance = "distance_m"
        case lastFixTime = "last_fix_time"
        case suspectFixes = "suspect_fixes"
        case lastSuspectTime = "last_suspect_time"
        case rejectedFixes = "rejected_fixes"
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        walkID = try container.decodeIfPresent(String.self, forKey: .walk)
        distance = try container.decode(Double.self, forKey: .distance)
        milestones = try container.decode(Int.self, forKey: .milestones)
        lastFixTime = try container.decodeIfPresent(String.self, forKey: .lastFixTime).flatMap(Timestamp.parse)
        storage = try container.decodeIfPresent(StorageTrouble.self, forKey: .storage)
        suspectFixes = try container.decodeIfPresent(Int.self, forKey: .suspectFixes) ?? 0
        lastSuspectTime = try container.decodeIfPresent(String.self, forKey: .lastSuspectTime).flatMap(Timestamp.parse)
        rejectedFixes = try container.decodeIfPresent(Int.self, forKey: .rejectedFixes) ?? 0
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(walkID, forKey: .walk)
        try container.encode((distance * 10).rounded() / 10, forKey: .distance)
        try container.encode(milestones, forKey: .milestones)
        try container.encodeIfPresent(lastFixTime.map(Timestamp.format), forKey: .lastFixTime)
        try container.encodeIfPresent(storage, forKey: .storage)
        try container.encode(suspectFixes, forKey: .suspectFixes)
        try container.encodeIfPresent(lastSuspectTime.map(Timestamp.format), forKey: .lastSuspectTime)
        try container.encode(rejectedFixes, forKey: .rejectedFixes)
    }
}
