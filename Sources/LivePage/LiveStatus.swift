import Exports
package import Recording
package import WalkJournal
import WalkModel

/// The live page's status line: the recorder's status beside the photo service's and sharing's.
package struct LiveStatus: Sendable, Equatable {
    package var recording: RecordingStatus
    package var gpsd: StatusFile.GPSDState
    /// System-clock time at which the last fix arrived.
    package var lastFixWall: Double?
    /// nil when this session has no photo source.
    package var photos: PhotoActivityState?
    /// The sharing destinations (`ShareStatus.pageLine`), nil when the walk is not shared.
    package var shares: [String]?

    package init(
        recording: RecordingStatus, gpsd: StatusFile.GPSDState, lastFixWall: Double?, photos: PhotoActivityState?,
        shares: [String]? = nil
    ) {
        self.recording = recording
        self.gpsd = gpsd
        self.lastFixWall = lastFixWall
        self.photos = photos
        self.shares = shares
    }

    /// What is worth telling at once; the rest (distance, the fix's age) waits for the periodic refresh.
    package var significant: LiveStatus {
        var copy = self
        copy.recording.distance = 0
        copy.recording.lastFixTime = nil
        copy.lastFixWall = nil
        // Records held change with each fix while the storage fails: the reason is what changes the line.
        copy.recording.storage = recording.storage.map {
            StorageTrouble(since: $0.since, reason: $0.reason, heldRecords: 0, droppedFixes: 0)
        }
        copy.recording.rejectedFixes = 0  // can grow every second with a poor sky: told with the periodic refresh
        copy.shares = nil  // messages waiting change with every one sent: told with the periodic refresh
        return copy
    }

    /// "1.2 km · 12 milestones · last fix 2 s ago · gpsd connected · photos: searching near milestone 12".
    package func line(now: Double) -> String {
        var out = ByteWriter(capacity: 160)
        HTMLExport.appendDistance(recording.distance, to: &out)
        var parts = [String(decoding: out.bytes, as: UTF8.self)]
        parts.append(recording.milestones == 1 ? "1 milestone" : "\(recording.milestones) milestones")
        if let lastFixWall {
            parts.append("last fix \(Self.age(now - lastFixWall)) ago")
        } else {
            parts.append("no fix yet")
        }
        parts.append("gpsd \(gpsd.rawValue)")
        // A recorder that has stopped has no photo source to speak of.
        if gpsd != .stopped { parts.append("photos: " + (photos?.description(now: now) ?? "no photo source")) }
        if let storage = recording.storage { parts.append("storage failing: \(storage.reason)") }
        if recording.suspectFixes > 0 {
            parts.append("\(Self.fixes(recording.suspectFixes)) dropped for an implausible GPS time")
        }
        if recording.rejectedFixes > 0 {
            parts.append("\(Self.fixes(recording.rejectedFixes)) dropped as inaccurate or impossible")
        }
        for share in shares ?? [] { parts.append("sharing: " + share) }
        return parts.joined(separator: " · ")
    }

    /// The photo service's state as one word, for scripts.
    package var photoState: String {
        switch photos {
        case nil: "none"
        case .idle: "idle"
        case .searching: "searching"
        case .downloading: "downloading"
        case .backingOff: "backing_off"
        case .unusable: "unusable"
        }
    }

    private static func fixes(_ count: Int) -> String { count == 1 ? "1 fix" : "\(count) fixes" }

    private static func age(_ seconds: Double) -> String {
        let whole = max(0, Int(seconds.rounded(.down)))
        if whole < 120 { return "\(whole) s" }
        if whole < 7200 { return "\(whole / 60) min" }
        return "\(whole / 3600) h"
    }
}
