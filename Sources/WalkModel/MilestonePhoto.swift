/// What became of a milestone's photo, as journaled.
package struct MilestonePhoto: Sendable, Equatable {
    package enum Outcome: Sendable, Equatable {
        /// A photo, with its thumbnail stored in the cache under `cacheKey`.
        case found(PhotoCandidate, distance: Double, cacheKey: String)
        /// Nothing within the widest search radius (metres).
        case noneNearby(radius: Double)
    }

    package var milestone: Int
    /// "flickr", "commons" or "local".
    package var source: String
    package var outcome: Outcome
    /// Why this photo was picked, in a few words (journaled as `why`; absent from older journals).
    package var why: String?

    package init(milestone: Int, source: String, outcome: Outcome) {
        self.milestone = milestone
        self.source = source
        self.outcome = outcome
    }

    package var photo: PhotoCandidate? {
        if case let .found(candidate, _, _) = outcome { return candidate }
        return nil
    }
}
