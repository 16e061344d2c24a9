package import WalkModel

/// What a service beside the recorder may write into the walk journal: its events and a milestone's photo,
/// into a walk by its id (which may have ended since). The recorder provides it, the only writer of the
/// walk being recorded, so that those records are serialized with the fixes; the photo service writes
/// through it and knows nothing else of the recorder.
package protocol JournalPort: Sendable {
    /// The walk being recorded, or nil before the first fix of a session.
    var currentWalkID: String? { get }
    /// Journals an event into walk `id` with the system clock as its wall time, and syncs it.
    func note(_ kind: JournalEvent.Kind, message: String?, toWalk id: String)
    /// Journals a milestone's photo outcome into walk `id` and syncs it: a photo recorded is a photo not
    /// fetched again.
    func attach(_ photo: MilestonePhoto, toWalk id: String)
}
