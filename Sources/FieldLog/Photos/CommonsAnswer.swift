/// The MediaWiki API's answer to a geosearch with imageinfo and coordinates (formatversion=2), read leniently:
/// a field of another type reads as absent, and a page that cannot be read is left out, never the answer.
struct CommonsAnswer: Decodable {
    var error: APIError?
    var query: Query?

    struct APIError: Decodable {
        var code: String?
        var info: String?
    }

    struct Query: Decodable {
        var pages: [Tolerant<Page>]?
    }

    struct Page: Decodable {
        var pageid: Int?
        var ns: Int?
        var title: String?
        var coordinates: [Coordinate]?
        var imageinfo: [ImageInfo]?
    }

    struct Coordinate: Decodable {
        var lat: Double?
        var lon: Double?
        var primary: Bool?
        var globe: String?
        var type: String?
        var dim: FlickrScalar?
    }

    struct ImageInfo: Decodable {
        var size: Int?
        var width: Int?
        var height: Int?
        var thumburl: String?
        var url: String?
        var descriptionurl: String?
        var mime: String?
        /// Each entry `{value, source}`; values are strings (often HTML), now and then numbers.
        var extmetadata: [String: Tolerant<MetadataEntry>]?
    }

    struct MetadataEntry: Decodable {
        var value: FlickrScalar?
    }

    private enum CodingKeys: String, CodingKey { case error, query }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        error = try? container.decode(APIError.self, forKey: .error)
        query = try? container.decode(Query.self, forKey: .query)
    }
}

/// A value that reads as nil when it is not a `Value`, so that one odd element leaves its list readable.
struct Tolerant<Value: Decodable>: Decodable {
    var value: Value?

    init(from decoder: any Decoder) {
        value = try? Value(from: decoder)
    }
}
