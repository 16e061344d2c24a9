/// A photo a source offers for a spot, with everything the journal records about it.
package struct PhotoCandidate: Sendable, Equatable {
    /// The source's id: validated (letters, digits, `_`, `-`; at most 64) before it names a cache file.
    package var id: String
    package var title: String
    package var ownerName: String
    package var ownerID: String
    /// Licence as people read it, e.g. "CC BY 2.0" or "All rights reserved".
    package var license: String
    /// The photo's page (Flickr: https://www.flickr.com/photos/{owner}/{id}/); nil for local files.
    package var pageURL: String?
    /// Where the photo was taken.
    package var latitude: Double
    package var longitude: Double
    /// Where the image comes from: an https URL, or a file path for the local folder source.
    package var imageURL: String
    /// When it was taken, as the source states it.
    package var taken: String?
    /// The licence's text (Commons: LicenseUrl); journaled as `license_url`.
    package var licenseURL: String?
    /// How exactly its position is known, on Flickr's scale (16 street level, 11 city, 1 world); nil when
    /// the source does not say. Used to pick, not journaled.
    package var accuracy: Int?
    /// Taken indoors, as the source says (Flickr's geo context); used to pick, not journaled.
    package var indoors = false
    /// Why this file cannot be used (not a JPEG, no licence): the service journals it and skips the file.
    package var skipReason: String?

    package init(
        id: String, title: String, ownerName: String, ownerID: String, license: String, pageURL: String?,
        latitude: Double, longitude: Double, imageURL: String, taken: String? = nil
    ) {
        self.id = id
        self.title = title
        self.ownerName = ownerName
        self.ownerID = ownerID
        self.license = license
        self.pageURL = pageURL
        self.latitude = latitude
        self.longitude = longitude
        self.imageURL = imageURL
        self.taken = taken
    }

    /// Ids that may name a file: nothing from the network reaches a path unchecked.
    package static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64
            && id.utf8.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool {
        (48...57).contains(self) || (65...90).contains(self) || (97...122).contains(self)
    }
}
