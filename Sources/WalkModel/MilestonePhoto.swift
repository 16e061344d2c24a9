/// What became of a milestone's photo, as journaled.
public struct MilestonePhoto: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// A photo, with its thumbnail stored in the cache under `cacheKey`.
        case found(PhotoCandidate, distance: Double, cacheKey: String)
        /// Nothing within the widest search radius (metres).
        case noneNearby(radius: Double)
    }

    public var milestone: Int
    /// "flickr", "commons" or "local".
    public var source: String
    public var outcome: Outcome
    /// Why this photo was picked, in a few words (journaled as `why`; absent from older journals).
    public var why: String?

    public init(milestone: Int, source: String, outcome: Outcome) {
        self.milestone = milestone
        self.source = source
        self.outcome = outcome
    }

    public var photo: PhotoCandidate? {
        if case let .found(candidate, _, _) = outcome { return candidate }
        return nil
    }
}
