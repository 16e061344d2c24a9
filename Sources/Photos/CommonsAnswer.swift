/// The MediaWiki API's answer to a geosearch with imageinfo and coordinates (formatversion=2), read leniently:
/// a field of another type reads as absent, and a page that cannot be read is left out, never the answer.
package struct CommonsAnswer: Decodable {
    package var error: APIError?
    package var query: Query?

    package struct APIError: Decodable {
        package var code: String?
        package var info: String?
    }

    package struct Query: Decodable {
        package var pages: [Tolerant<Page>]?
    }

    package struct Page: Decodable {
        package var pageid: Int?
        package var ns: Int?
        package var title: String?
        package var coordinates: [Coordinate]?
        package var imageinfo: [ImageInfo]?
    }

    package struct Coordinate: Decodable {
        package var lat: Double?
        package var lon: Double?
        package var primary: Bool?
        package var globe: String?
        package var type: String?
        package var dim: FlickrScalar?
    }

    package struct ImageInfo: Decodable {
        package var size: Int?
        package var width: Int?
        package var height: Int?
        package var thumburl: String?
        package var url: String?
        package var descriptionurl: String?
        package var mime: String?
        /// Each entry `{value, source}`; values are strings (often HTML), now and then numbers.
        package var extmetadata: [String: Tolerant<MetadataEntry>]?
    }

    package struct MetadataEntry: Decodable {
        package var value: FlickrScalar?
    }

    private enum CodingKeys: String, CodingKey { case error, query }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        error = try? container.decode(APIError.self, forKey: .error)
        query = try? container.decode(Query.self, forKey: .query)
    }
}

/// A value that reads as nil when it is not a `Value`, so that one odd element leaves its list readable.
package struct Tolerant<Value: Decodable>: Decodable {
    package var value: Value?

    package init(from decoder: any Decoder) {
        value = try? Value(from: decoder)
    }
}
