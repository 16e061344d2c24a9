package import AsyncHTTPClient
import FoundationEssentials
package import NIOCore
package import WalkModel

/// Photos from Flickr's `flickr.photos.search`, nearest first.
///
/// Flickr answers failures with HTTP 200 and `stat: fail`, sends numbers as numbers or strings, and
/// serves 429/5xx with HTML bodies: everything is decoded defensively. The API key travels only in the
/// request URL and is never part of an error message. Images come only from Flickr's static hosts (or the
/// endpoint's own host), over https, without redirects; every request ends at its deadline, body included.
package struct FlickrSource: PhotoSource {
    package static let defaultEndpoint = "https://api.flickr.com/services/rest/"

    private let apiKey: String
    private let endpoint: String
    private let endpointHost: String
    private let client: HTTPClient
    private let budget: RequestBudget
    private let preferredSizes: [String]
    /// With a plain-http loopback endpoint (a test server or local proxy), its http loopback image URLs
    /// are accepted too; otherwise images come over https only.
    private let acceptsLoopbackImages: Bool
    /// Deadline of one search, body included; an image download gets twice as long.
    private let timeout: TimeAmount
    private static let searchBodyLimit = 2 << 20
    /// Longest title or owner name kept: the journal is not the place for a megabyte of somebody's text.
    package static let textLimit = 300

    /// `endpoint` must be https, or plain http on a loopback address (tests, local proxies). `caFile` (PEM)
    /// is trusted besides the system's roots: for a test server or a proxy with its own CA. Without a
    /// `client`, one that follows no redirects is used.
    package init(
        apiKey: String, endpoint: String = defaultEndpoint, client: HTTPClient? = nil, caFile: String? = nil,
        budget: RequestBudget, thumbnailSize: Int = 320, timeout: TimeAmount = .seconds(15)
    ) throws(PhotoSourceError) {
        guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(), let host = url.host else {
            throw PhotoSourceError(.fatal, "--flickr-endpoint \(endpoint) is not a URL")
        }
        guard scheme == "https" || (scheme == "http" && Self.isLoopback(host)) else {
            throw PhotoSourceError(.fatal, "--flickr-endpoint must use https (plain http only on loopback)")
        }
        guard !apiKey.isEmpty, apiKey.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            throw PhotoSourceError(.fatal, "the Flickr API key is empty or not printable ASCII")
        }
        self.apiKey = apiKey
        self.endpoint = endpoint
        endpointHost = host.lowercased()
        acceptsLoopbackImages = scheme == "http"
        if let client {
            self.client = client
        } else {
            self.client = try HTTPFetch.client(trusting: caFile, option: "--flickr-ca-file")
        }
        self.budget = budget
        self.timeout = timeout
        // Download at least twice the thumbnail size when Flickr has it (a sharper downscale), never
        // above 1024 px: url_n is 320 px, url_z 640, url_l 1024 (suffix _b).
        preferredSizes = thumbnailSize <= 320 ? ["url_z", "url_n", "url_l"] : ["url_l", "url_z", "url_n"]
    }

    /// https from Flickr's static hosts, or from the endpoint's own host (a proxy or a test server): an
    /// answer must not send fieldlog to any other host, nor anywhere over plain http.
    private func isAcceptableImageURL(_ text: String) -> Bool {
        guard text.utf8.count <= 2048, let url = URL(string: text), let host = url.host?.lowercased(),
            url.user == nil, url.password == nil
        else { return false }
        if url.scheme == "https" {
            return host == endpointHost || (host.hasSuffix(".staticflickr.com") && url.port == nil)
        }
        return acceptsLoopbackImages && url.scheme == "http" && host == endpointHost
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]"
    }

    package func search(
        latitude: Double, longitude: Double, radius: Double
    ) async throws(PhotoSourceError)
        -> [PhotoCandidate]
    {
        // Flickr's radius is in km, above 0 and below 32.
        let kilometres = min(max(radius / 1000, 0.01), 31.9)
        let query: [(String, String)] = [
            ("method", "flickr.photos.search"), ("api_key", apiKey),
            ("lat", Self.decimal(latitude)), ("lon", Self.decimal(longitude)),
            ("radius", Self.decimal(kilometres)), ("radius_units", "km"),
            // A geo query needs a limiting agent, or Flickr searches only the last 12 hours of uploads.
            ("min_taken_date", "1990-01-01 00:00:00"),
            ("has_geo", "1"), ("media", "photos"), ("content_types", "0"), ("safe_search", "1"),
            ("extras", "geo,owner_name,license,date_taken,path_alias,url_n,url_z,url_l"),
            ("per_page", "100"), ("format", "json"), ("nojsoncallback", "1"),
        ]
        let body: [UInt8]
        do {
            body = try await fetch(
                endpoint + "?" + Self.encode(query), what: "Flickr search",
                timeout: timeout, limit: Self.searchBodyLimit)
        } catch  where error.kind == .permanent {
            // A search that fails is retried, whatever the status (a captive portal's redirect, a proxy's
            // 403): giving up would lose the milestone's photo, and only an image can be rejected.
            throw PhotoSourceError(.temporary, error.message)
        }
        return try decodeSearch(body)
    }

    package func image(of candidate: PhotoCandidate, limit: Int) async throws(PhotoSourceError) -> [UInt8] {
        try await fetch(candidate.imageURL, what: "photo \(candidate.id)", timeout: timeout * 2, limit: limit)
    }

    private func fetch(
        _ url: String, what: String, timeout: TimeAmount, limit: Int
    ) async throws(PhotoSourceError)
        -> [UInt8]
    {
        await budget.acquire()
        let answer: HTTPFetch.Answer
        do {
            answer = try await HTTPFetch.get(
                url, headers: [("User-Agent", "fieldlog")], client: client, timeout: timeout, limit: limit)
        } catch {
            // A transport error's text never holds the URL, but redact anyway in case a library changes that.
            let named = error.named(what, timeout: timeout, limit: limit)
            throw PhotoSourceError(named.kind, redact(named.message))
        }
        switch answer.status {
        case 200: return answer.body
        case 429, 500...599: throw PhotoSourceError(.temporary, "\(what): HTTP \(answer.status)")
        default: throw PhotoSourceError(.permanent, "\(what): HTTP \(answer.status)")
        }
    }

    /// Removes the API key from any text that might be logged or journaled.
    package func redact(_ text: String) -> String {
        text.replacingScalars(apiKey, with: "<redacted>")
    }

    func decodeSearch(_ body: [UInt8]) throws(PhotoSourceError) -> [PhotoCandidate] {
        guard let root = try? JSONDecoder().decode(SearchAnswer.self, from: Data(body)) else {
            throw PhotoSourceError(.temporary, "Flickr search: the answer is not JSON")
        }
        if root.stat?.string == "fail" {
            let code = root.code?.int ?? -1
            let message = redact(root.message?.string ?? "no message")
            switch code {
            case 100:
                throw PhotoSourceError(.fatal, "Flickr rejected the API key (code 100: \(message)); fix it and restart")
            case 10, 105, 106:
                throw PhotoSourceError(.temporary, "Flickr is temporarily unavailable (code \(code): \(message))")
            default:
                throw PhotoSourceError(.fatal, "Flickr refused the search (code \(code): \(message))")
            }
        }
        guard root.stat?.string == "ok", let photos = root.photos else {
            throw PhotoSourceError(.temporary, "Flickr search: unexpected answer")
        }
        return photos.photo.compactMap { $0.fields.flatMap(candidate(from:)) }
    }

    private func candidate(from photo: [String: FlickrScalar]) -> PhotoCandidate? {
        guard let id = photo["id"]?.string, PhotoCandidate.isValidID(id),
            let owner = photo["owner"]?.string, PhotoCandidate.isValidOwner(owner),
            let latitude = photo["latitude"]?.double, let longitude = photo["longitude"]?.double,
            abs(latitude) <= 90, abs(longitude) <= 180, latitude != 0 || longitude != 0
        else { return nil }
        var imageURL = preferredSizes.lazy.compactMap { photo[$0]?.string }.first(where: isAcceptableImageURL)
        if imageURL == nil, let server = photo["server"]?.string, let secret = photo["secret"]?.string,
            PhotoCandidate.isValidID(server), PhotoCandidate.isValidID(secret)
        {
            imageURL = "https://live.staticflickr.com/\(server)/\(id)_\(secret)_z.jpg"
        }
        guard let imageURL else { return nil }
        var candidate = PhotoCandidate(
            id: id, title: Self.text(photo["title"]?.string) ?? "",
            ownerName: Self.text(photo["ownername"]?.string) ?? owner, ownerID: owner,
            license: photo["license"]?.int.map(Self.licenseName) ?? "unknown licence",
            pageURL: "https://www.flickr.com/photos/\(owner)/\(id)/", latitude: latitude, longitude: longitude,
            imageURL: imageURL, taken: Self.text(photo["datetaken"]?.string))
        // extras=geo brings `accuracy` (1 world .. 16 street) and `context` (geo_context: 1 indoors, 2 outdoors).
        candidate.accuracy = photo["accuracy"]?.int.flatMap { (1...16).contains($0) ? $0 : nil }
        candidate.indoors = photo["context"]?.int == 1
        return candidate
    }

    /// Text for the journal: control and format characters dropped, at most `textLimit` characters.
    static func text(_ text: String?) -> String? {
        guard let text else { return nil }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .format: continue
            default: scalars.append(scalar)
            }
        }
        return String(String(scalars).prefix(textLimit))
    }

    static func licenseName(_ id: Int) -> String {
        switch id {
        case 0: return "All rights reserved"
        case 1: return "CC BY-NC-SA 2.0"
        case 2: return "CC BY-NC 2.0"
        case 3: return "CC BY-NC-ND 2.0"
        case 4: return "CC BY 2.0"
        case 5: return "CC BY-SA 2.0"
        case 6: return "CC BY-ND 2.0"
        case 7: return "No known copyright restrictions"
        case 8: return "United States Government Work"
        case 9: return "CC0 1.0"
        case 10: return "Public Domain Mark 1.0"
        default: return "Flickr licence \(id)"
        }
    }

    static func decimal(_ value: Double) -> String {
        let scaled = Int((abs(value) * 1_000_000).rounded())
        let fraction = String(scaled % 1_000_000)
        return (value < 0 && scaled != 0 ? "-" : "") + "\(scaled / 1_000_000)."
            + String(repeating: "0", count: 6 - fraction.count) + fraction
    }

    /// `name=value&...`, every byte of a value but letters, digits and `-._~` percent-encoded.
    static func encode(_ query: [(String, String)]) -> String {
        query.map { name, value in
            var encoded = name + "="
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                    UInt8(ascii: "~"):
                    encoded.unicodeScalars.append(Unicode.Scalar(byte))
                default:
                    let hex = Array("0123456789ABCDEF".unicodeScalars)
                    encoded.unicodeScalars += ["%", hex[Int(byte >> 4)], hex[Int(byte & 15)]]
                }
            }
            return encoded
        }.joined(separator: "&")
    }
}

/// Flickr's search answer, read field by field: a field of another type than expected reads as absent, and
/// nothing is descended into beyond the answer's known shape.
private struct SearchAnswer: Decodable {
    var stat: FlickrScalar?
    var code: FlickrScalar?
    var message: FlickrScalar?
    var photos: Photos?

    struct Photos: Decodable {
        var photo: [Lenient<[String: FlickrScalar]>] = []

        private enum CodingKeys: String, CodingKey { case photo }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            photo = (try? container.decode([Lenient<[String: FlickrScalar]>].self, forKey: .photo)) ?? []
        }
    }

    private enum CodingKeys: String, CodingKey { case stat, code, message, photos }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        stat = try? container.decode(FlickrScalar.self, forKey: .stat)
        code = try? container.decode(FlickrScalar.self, forKey: .code)
        message = try? container.decode(FlickrScalar.self, forKey: .message)
        photos = try? container.decode(Photos.self, forKey: .photos)
    }
}

/// A value that reads as nil when it is not a `Value`, so that one odd element leaves its list readable.
private struct Lenient<Value: Decodable>: Decodable {
    var fields: Value?

    init(from decoder: any Decoder) {
        fields = try? Value(from: decoder)
    }
}

/// A string or a number: Flickr sends numbers as either ("total": "" when empty). Anything else reads as
/// neither, unread.
package struct FlickrScalar: Decodable {
    package var string: String?
    package var double: Double?

    package init(from decoder: any Decoder) {
        guard let container = try? decoder.singleValueContainer() else { return }
        if let text = try? container.decode(String.self) {
            string = text
            double = Double(text).flatMap { $0.isFinite ? $0 : nil }
        } else if let whole = try? container.decode(Int64.self) {
            string = String(whole)
            double = Double(whole)
        } else if let number = try? container.decode(Double.self), number.isFinite {
            string = "\(number)"
            double = number
        }
    }

    package var int: Int? {
        double.flatMap { $0 == $0.rounded() && abs($0) < 1e9 ? Int($0) : nil }
    }
}

extension PhotoCandidate {
    /// Flickr owner ids look like `12345678@N00`.
    static func isValidOwner(_ owner: String) -> Bool {
        isValidID(owner.replacingScalars("@", with: "_"))
    }
}
