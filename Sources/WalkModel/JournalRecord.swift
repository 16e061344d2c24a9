/// One line of a walk journal. The journal is append-only JSON Lines: each record is one line, and a
/// line cut short by a power cut is the only damage it can take.
package enum JournalRecord: Sendable, Equatable {
    case walkStart(id: String, time: Double, every: Double)
    case point(TrackPoint)
    case milestone(Milestone)
    case segment(SegmentBreak)
    /// Something that happened to the recorder: a session began or ended, gpsd came or went, an error.
    /// `wall` is the system clock on purpose (the only field that is), `time` the GPS time if known.
    case event(JournalEvent)
    case walkEnd(time: Double, distance: Double)
    /// A milestone's photo (or the news that there is none), journaled after the milestone, possibly much
    /// later: photos are fetched off the walk's path and back-filled after network outages.
    case photo(MilestonePhoto)
    /// The walker marked a milestone as a favourite (`fieldlog star`) or took the mark back; the last
    /// record for a milestone counts. `wall` is the system clock: starring happens off the walk's time.
    case star(milestone: Int, starred: Bool, wall: Double)
}

package struct JournalEvent: Sendable, Equatable {
    package enum Kind: String, Sendable, Codable {
        case sessionStart = "session_start"
        case sessionEnd = "session_end"
        case resumed
        case gpsdConnected = "gpsd_connected"
        case gpsdLost = "gpsd_lost"
        case photoSourceUnavailable = "photo_source_unavailable"
        /// A photo is about to be decoded: the candidate's id in `message`. An attempt without an outcome
        /// means the recorder died meanwhile; a photo with two such attempts is not tried again.
        case photoAttempt = "photo_attempt"
        /// Journal records could not be written and are held in memory; `storage_recovered` when written.
        case storageFailed = "storage_failed"
        case storageRecovered = "storage_recovered"
        /// Fixes held for an implausible GPS time and dropped: one per episode, with their number.
        case timeSuspect = "time_suspect"
        /// A run of fixes agreeing on a new GPS time, accepted (see GPSTimeGuard).
        case timeJump = "time_jump"
        /// A sharing destination refused the credentials (asking stopped), or could not be reached for a while:
        /// one per episode, the destination's URL and the reason in `message`.
        case shareRejected = "share_rejected"
        case shareUnavailable = "share_unavailable"
        case error
    }

    package var kind: Kind
    package var time: Double?
    package var wall: Double
    package var message: String?

    package init(kind: Kind, time: Double? = nil, wall: Double, message: String? = nil) {
        self.kind = kind
        self.time = time
        self.wall = wall
        self.message = message
    }
}
