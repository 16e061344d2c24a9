import AsyncHTTPClient
import FoundationEssentials
package import NIOCore
package import WalkModel

/// Photos from Wikimedia Commons, which needs no key: one MediaWiki Action API request finds the files near
/// a point (geosearch in the File namespace) with their thumbnail URL and attribution (imageinfo with
/// extmetadata). Only JPEG files are offered; an image comes at a standard thumbnail width from the upload
/// host, never the original. Requests go one at a time, carry `maxlag` and a User-Agent naming fieldlog
/// and a contact, and wait as long as `Retry-After` says (Wikimedia's API etiquette and User-Agent policy).
package struct CommonsSource: PhotoSource {
    package static let defaultEndpoint = "https://commons.wikimedia.org/w/api.php"
    /// Where Commons serves images: the only host besides the endpoint's that fieldlog fetches from.
    package static let uploadHost = "upload.wikimedia.org"
    /// Commons refuses a geosearch radius above 10 km ($wgMaxGeoSearchRadius): it answers `outofrange`.
    package static let maxRadius = 10_000.0
    /// The widths Wikimedia renders thumbnails at; others are refused.
    package static let thumbnailSteps = [20, 40, 60, 120, 250, 330, 500, 960, 1280, 1920, 3840]
    /// At most 50 scaled images per request (imageinfo's transform limit): no continuation is needed.
    package static let searchLimit = 50
    /// An original served as its own thumbnail (smaller than the width asked for) larger than this is skipped.
    package static let originalLimit = 4 << 20
    private static let searchBodyLimit = 4 << 20

    private let endpoint: String
    private let endpointHost: String
    private let acceptsLoopbackImages: Bool
    private let client: HTTPClient
    private let budget: RequestBudget
    private let turn = RequestTurn()
    private let userAgent: String
    private let width: Int
    private let timeout: TimeAmount

    /// `endpoint` must be https, or plain http on a loopback address (tests, local proxies); `caFile` (PEM) is
    /// trusted besides the system's roots. `userAgent` comes from `userAgent(version:contact:)`.
    package init(
        endpoint: String = defaultEndpoint, caFile: String? = nil, budget: RequestBudget, userAgent: String,
        thumbnailSize: Int = 320, timeout: TimeAmount = .seconds(15)
    ) throws(PhotoSourceError) {
        guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(), let host = url.host else {
            throw PhotoSourceError(.fatal, "--commons-endpoint \(endpoint) is not a URL")
        }
        guard scheme == "https" || (scheme == "http" && FlickrSource.isLoopback(host)) else {
            throw PhotoSourceError(.fatal, "--commons-endpoint must use https (plain http only on loopback)")
        }
        self.endpoint = endpoint
        endpointHost = host.lowercased()
        acceptsLoopbackImages = scheme == "http"
        client = try HTTPFetch.client(trusting: caFile, option: "--commons-ca-file")
        self.budget = budget
        self.userAgent = userAgent
        self.timeout = timeout
        // At least one and a half times the thumbnail, for a sharper downscale, at a width Commons renders.
        let wanted = thumbnailSize * 3 / 2
        width = Self.thumbnailSteps.first { $0 >= wanted } ?? Self.thumbnailSteps.last!
    }

    /// `fieldlog/VERSION (CONTACT)`: Wikimedia wants a User-Agent that names the tool and how to reach its
    /// operator; a shared generic one gets blocked for everybody.
    package static func userAgent(version: String, contact: String?) -> String {
        let reach = contact.map { PlainText.fromHTML($0, limit: 200) }.flatMap { $0.isEmpty ? nil : $0 }
        let printable = { (text: String) in
            String(text.unicodeScalars.filter { $0.value >= 32 && $0.value < 127 }.map(Character.init))
        }
        return "fieldlog/\(printable(version)) (\(printable(reach ?? "no contact configured")))"
    }

    package func search(
        latitude: Double, longitude: Double, radius: Double
    ) async throws(PhotoSourceError)
        -> [PhotoCandidate]
    {
        let point = FlickrSource.decimal(latitude) + "|" + FlickrSource.decimal(longitude)
        let metres = Int(min(max(radius, 10), Self.maxRadius).rounded(.down))
        let query: [(String, String)] = [
            ("action", "query"), ("format", "json"), ("formatversion", "2"),
            ("generator", "geosearch"), ("ggscoord", point), ("ggsradius", String(metres)), ("ggsnamespace", "6"),
            ("ggslimit", String(Self.searchLimit)), ("ggsprimary", "all"),
            ("prop", "imageinfo|coordinates"), ("iiprop", "url|size|mime|extmetadata"), ("iiurlwidth", String(width)),
            (
                "iiextmetadatafilter",
                "Artist|Attribution|LicenseShortName|LicenseUrl|AttributionRequired|NonFree|ObjectName|DateTimeOriginal"
            ),
            ("coprimary", "all"), ("coprop", "type|name|dim"), ("colimit", "max"), ("maxlag", "5"),
        ]
        let answer = try await fetch(
            endpoint + "?" + FlickrSource.encode(query), what: "Commons search", isSearch: true, timeout: timeout,
            limit: Self.searchBodyLimit)
        return try await decodeSearch(answer.body, retryAfter: answer.retryAfter)
    }

    package func image(of candidate: PhotoCandidate, limit: Int) async throws(PhotoSourceError) -> [UInt8] {
        guard isAcceptableImageURL(candidate.imageURL) else {
            throw PhotoSourceError(.permanent, "photo \(candidate.id): image not on \(Self.uploadHost)")
        }
        return try await fetch(
            candidate.imageURL, what: "photo \(candidate.id)", isSearch: false, timeout: timeout * 2, limit: limit
        ).body
    }

    /// https from the upload host, or from the endpoint's own host (a test server, a proxy): an answer must
    /// not send fieldlog anywhere else.
    func isAcceptableImageURL(_ text: String) -> Bool {
        guard text.utf8.count <= 2048, let url = URL(string: text), let host = url.host?.lowercased(),
            url.user == nil, url.password == nil
        else { return false }
        if url.scheme == "https" {
            return host == endpointHost || (host == Self.uploadHost && url.port == nil)
        }
        return acceptsLoopbackImages && url.scheme == "http" && host == endpointHost
    }

    /// A search that fails is retried, whatever went wrong (a captive portal, a proxy, an answer too large);
    /// an image that fails for good is skipped.
    private func fetch(
        _ url: String, what: String, isSearch: Bool, timeout: TimeAmount, limit: Int
    )
        async throws(PhotoSourceError) -> Answer
    {
        await turn.begin()
        await budget.acquire()
        let answer: Answer
        do {
            answer = try await HTTPFetch.get(
                url, headers: [("User-Agent", userAgent)], client: client, timeout: timeout, limit: limit)
        } catch {
            await turn.end()
            let named = error.named(what, timeout: timeout, limit: limit)
            throw isSearch ? PhotoSourceError(.temporary, named.message) : named
        }
        let retryAfter = answer.retryAfter
        if let retryAfter { await turn.holdOff(seconds: retryAfter) }
        await turn.end()
        switch answer.status {
        case 200:
            return answer
        case 429, 500...599:
            if answer.status == 429 && retryAfter == nil { await turn.holdOff(seconds: 5) }
            throw PhotoSourceError(.temporary, "\(what): HTTP \(answer.status)")
        case 403 where isSearch:
            // Wikimedia refuses User-Agents it has blocked: asking again only makes it worse.
            throw PhotoSourceError(
                .fatal, "Commons refused fieldlog's requests (HTTP 403); set `contact` and restart")
        default:
            throw PhotoSourceError(isSearch ? .temporary : .permanent, "\(what): HTTP \(answer.status)")
        }
    }

    typealias Answer = HTTPFetch.Answer

    /// The candidates in a search's answer; `retryAfter` is the answer's header, already honoured.
    package func decodeSearch(
        _ body: [UInt8], retryAfter: Double? = nil
    ) async throws(PhotoSourceError) -> [PhotoCandidate] {
        guard let root = try? JSONDecoder().decode(CommonsAnswer.self, from: Data(body)) else {
            throw PhotoSourceError(.temporary, "Commons search: the answer is not JSON")
        }
        if let error = root.error {
            let code = PlainText.fromHTML(error.code ?? "unknown", limit: 40)
            if (code == "maxlag" || code == "ratelimited") && retryAfter == nil {
                // Lag comes with HTTP 200 and, normally, a Retry-After header; without one, 5 s (Manual:Maxlag).
                await turn.holdOff(seconds: 5)
            }
            throw PhotoSourceError(
                .temporary, "Commons search: error \(code) (\(PlainText.fromHTML(error.info ?? "", limit: 120)))")
        }
        return (root.query?.pages ?? []).compactMap { $0.value.flatMap(candidate(from:)) }
    }

    private func candidate(from page: CommonsAnswer.Page) -> PhotoCandidate? {
        guard let pageID = page.pageid, page.ns == 6 || page.ns == nil else { return nil }
        let id = String(pageID)
        // The camera's position when the file states one (Commons' {{Location}}), else its primary one.
        let coordinates = (page.coordinates ?? []).filter { coordinate in
            guard let lat = coordinate.lat, let lon = coordinate.lon else { return false }
            return abs(lat) <= 90 && abs(lon) <= 180 && (lat != 0 || lon != 0)
                && (coordinate.globe ?? "earth") == "earth"
        }
        guard
            let position = coordinates.first(where: { $0.type == "camera" })
                ?? coordinates.first(where: { $0.primary == true }) ?? coordinates.first,
            let latitude = position.lat, let longitude = position.lon
        else { return nil }
        let info = page.imageinfo?.first
        let meta = { (key: String) -> String? in
            info?.extmetadata?[key]?.value?.value?.string.map { PlainText.fromHTML($0) }.flatMap {
                $0.isEmpty ? nil : $0
            }
        }
        let name = PlainText.fromHTML(page.title ?? "")
        let fileName = name.hasPrefix("File:") ? String(name.dropFirst(5)) : name
        let title = meta("ObjectName") ?? fileName.lastIndex(of: ".").map { String(fileName[..<$0]) } ?? fileName
        let artist = info?.extmetadata?["Artist"]?.value?.value?.string
        let author = meta("Attribution") ?? meta("Artist")
        var candidate = PhotoCandidate(
            id: id, title: title, ownerName: author ?? "unknown author",
            ownerID: artist.flatMap(Self.userName) ?? author ?? "", license: meta("LicenseShortName") ?? "",
            pageURL: info?.descriptionurl.flatMap { isWikimediaPage($0) ? $0 : nil }, latitude: latitude,
            longitude: longitude, imageURL: info?.thumburl ?? "", taken: meta("DateTimeOriginal").map(Self.taken))
        candidate.licenseURL = meta("LicenseUrl").flatMap {
            $0.hasPrefix("https://") || $0.hasPrefix("http://") ? $0 : nil
        }
        // An object's extent (`dim`) of kilometres is a place, not where the photo was taken.
        if let dim = position.dim?.double, dim >= 2_000 { candidate.accuracy = 11 }
        candidate.skipReason = skipReason(
            info, candidate: candidate, author: author, attributionRequired: meta("AttributionRequired"),
            nonFree: meta("NonFree"))
        return candidate
    }

    /// Why a file cannot be shown: not a JPEG, not free, unattributable, or no thumbnail fieldlog may fetch.
    private func skipReason(
        _ info: CommonsAnswer.ImageInfo?, candidate: PhotoCandidate, author: String?, attributionRequired: String?,
        nonFree: String?
    ) -> String? {
        guard let info else { return "no image information" }
        guard info.mime == "image/jpeg" else {
            return "\(PlainText.fromHTML(info.mime ?? "no type", limit: 40)), not a JPEG"
        }
        if let nonFree, nonFree != "false", nonFree != "0" { return "not a free licence" }
        if candidate.license.isEmpty { return "no licence in its metadata" }
        if author == nil && attributionRequired != "false" { return "no author in its metadata" }
        guard let thumbnail = info.thumburl, !thumbnail.isEmpty else { return "no thumbnail" }
        guard isAcceptableImageURL(thumbnail) else {
            let host = URL(string: thumbnail)?.host.map { PlainText.fromHTML($0, limit: 80) } ?? "an unreadable URL"
            return "image on another host (\(host))"
        }
        if thumbnail == info.url, (info.size ?? 0) > Self.originalLimit {
            return "no thumbnail, and the original is \(info.size ?? 0) bytes"
        }
        return nil
    }

    /// https links to a Wikimedia page (or the endpoint's own host): nothing else is offered as a link.
    private func isWikimediaPage(_ text: String) -> Bool {
        guard text.utf8.count <= 2048, let url = URL(string: text), url.scheme == "https",
            let host = url.host?.lowercased(), url.user == nil
        else { return false }
        return host == endpointHost || host.hasSuffix(".wikimedia.org")
    }

    /// `User:Name` from an Artist link to a user page (`//commons.wikimedia.org/wiki/User:Ann_Example`).
    static func userName(_ artistHTML: String) -> String? {
        guard let start = artistHTML.firstRange(of: "/wiki/User:") else { return nil }
        let name = artistHTML[start.upperBound...].prefix {
            $0 != "\"" && $0 != "'" && $0 != "/" && $0 != "?" && $0 != "#" && $0 != ">"
        }
        let plain = PlainText.fromHTML(String(name), limit: 80)
        return plain.isEmpty ? nil : "User:" + plain
    }

    /// "2019-05-04 10:21:33" (or EXIF's "2019:05:04 10:21:33") as Flickr writes taken dates; other free text
    /// as it is.
    static func taken(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars.prefix(19))
        let digitsAt = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
        guard scalars.count == 19,
            digitsAt.allSatisfy({ scalars[$0].properties.numericType != nil && scalars[$0].isASCII }),
            [4, 7].allSatisfy({ scalars[$0] == "-" || scalars[$0] == ":" }), scalars[10] == " " || scalars[10] == "T",
            scalars[13] == ":", scalars[16] == ":"
        else { return String(text.prefix(60)) }
        var normalized = String(String.UnicodeScalarView(scalars))
        normalized =
            String(normalized.prefix(4)) + "-" + normalized.dropFirst(5).prefix(2) + "-"
            + normalized.dropFirst(8).prefix(2) + " " + normalized.dropFirst(11)
        return normalized
    }
}
