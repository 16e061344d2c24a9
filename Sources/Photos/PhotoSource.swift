package import WalkModel

/// Why a source could not answer, and what to do about it.
package struct PhotoSourceError: Error, CustomStringConvertible, Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        /// Try again later (network down, timeouts, 429, 5xx, Flickr's temporary codes).
        case temporary
        /// Asking again will not help, for this request (image gone, not a photo).
        case permanent
        /// The source cannot be used at all until a person fixes it (invalid API key).
        case fatal
    }

    package var kind: Kind
    /// Safe to log and journal: never holds the API key.
    package var message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message }
}

/// Where milestone photos come from: Flickr, or a local folder of geotagged JPEGs.
package protocol PhotoSource: Sendable {
    /// Photos taken within `radius` metres of a point, in any order.
    func search(latitude: Double, longitude: Double, radius: Double) async throws(PhotoSourceError) -> [PhotoCandidate]
    /// The image bytes of a candidate, at most `limit` bytes.
    func image(of candidate: PhotoCandidate, limit: Int) async throws(PhotoSourceError) -> [UInt8]
}
