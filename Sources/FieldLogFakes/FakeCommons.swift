package import Foundation
import NIOHTTP1
import WalkModel

/// A stand-in for Wikimedia Commons on loopback: the Action API's geosearch with imageinfo and coordinates,
/// answered in the shape Commons sends (formatversion=2; Tests/Fixtures/commons/geosearch-note.json), over
/// files placed along a test walk; their thumbnails and originals on the same host; and faults to switch on.
/// Like Commons, it refuses a radius above 10 km and lists pages in no particular order.
package final class FakeCommons: @unchecked Sendable {
    package struct File {
        package var pageID: Int
        package var latitude: Double
        package var longitude: Double
        package var name: String
        package var mime = "image/jpeg"
        /// extmetadata values (HTML as Commons sends it); a nil value leaves the entry out.
        package var artist: String? =
            #"<a href="//commons.wikimedia.org/wiki/User:Ann_Example" title="User:Ann Example">Ann Example</a>"#
        package var license: String? = "CC BY-SA 4.0"
        package var licenseURL: String? = "https://creativecommons.org/licenses/by-sa/4.0"
        package var attributionRequired = "true"
        package var nonFree: String?
        package var objectName: String?
        package var taken: String? = "2019-05-04 10:21:33"
        /// The original's size; a file smaller than the width asked for is its own thumbnail.
        package var size = 2_483_110
        package var width = 4000
        package var thumbURL: String?
        package var coordinateType: String?
        package var dim: Int?
        /// The image served as its thumbnail.
        package var jpeg: [UInt8]

        package init(
            pageID: Int, latitude: Double, longitude: Double, name: String, mime: String = "image/jpeg",
            artist: String? =
                #"<a href="//commons.wikimedia.org/wiki/User:Ann_Example" title="User:Ann Example">Ann Example</a>"#,
            license: String? = "CC BY-SA 4.0", licenseURL: String? = "https://creativecommons.org/licenses/by-sa/4.0",
            attributionRequired: String = "true", nonFree: String? = nil, objectName: String? = nil,
            taken: String? = "2019-05-04 10:21:33", size: Int = 2_483_110, width: Int = 4000, thumbURL: String? = nil,
            coordinateType: String? = nil, dim: Int? = nil, jpeg: [UInt8]
        ) {
            self.pageID = pageID
            self.latitude = latitude
            self.longitude = longitude
            self.name = name
            self.mime = mime
            self.artist = artist
            self.license = license
            self.licenseURL = licenseURL
            self.attributionRequired = attributionRequired
            self.nonFree = nonFree
            self.objectName = objectName
            self.taken = taken
            self.size = size
            self.width = width
            self.thumbURL = thumbURL
            self.coordinateType = coordinateType
            self.dim = dim
            self.jpeg = jpeg
        }
    }

    package enum Fault: Equatable {
        case none
        /// HTTP 200 with the API's `maxlag` error, and Retry-After.
        case maxlag(retryAfter: Int)
        case rateLimited(retryAfter: Int)
        case serverError
        /// 503 with an error page of 1 MiB.
        case hugeErrorPage
        case forbidden
        case hang
        case malformedJSON
        case trickle
        case endless
        case huge
    }

    private let lock = NSLock()
    private var files: [File] = []
    private var fault = Fault.none
    /// Requests the fault applies to before the server answers normally again; nil: all.
    private var faultCount: Int?
    private var requestLog: [(uri: String, userAgent: String, time: Date)] = []
    private var server: LoopbackHTTPServer?
    package private(set) var port = 0

    package init() {}

    package private(set) var scheme = "http"
    package var endpoint: String { "\(scheme)://127.0.0.1:\(port)/w/api.php" }
    package var thumbBase: String { "\(scheme)://127.0.0.1:\(port)/thumb/" }

    package func add(_ file: File) { lock.withLock { files.append(file) } }
    package func setFault(_ fault: Fault, times: Int? = nil) {
        lock.withLock {
            self.fault = fault
            faultCount = times
        }
    }
    package var requests: [String] { lock.withLock { requestLog.map(\.uri) } }
    package var userAgents: [String] { lock.withLock { requestLog.map(\.userAgent) } }
    package var requestTimes: [Date] { lock.withLock { requestLog.map(\.time) } }

    /// With `tls`, it serves https with the test certificate of Tests/Fixtures/tls (signed by its ca.pem).
    package func start(tls: Bool = false) async throws {
        let server = try await LoopbackHTTPServer.start(tls: tls) { [self] head in
            lock.withLock { requestLog.append((head.uri, head.headers.first(name: "User-Agent") ?? "", Date())) }
            return respond(to: head.uri)
        }
        port = server.port
        scheme = server.scheme
        lock.withLock { self.server = server }
    }

    package func stop() async {
        await lock.withLock { server }?.stop()
    }

    private func json(_ object: Any) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object))
    }

    private func respond(to uri: String) -> LoopbackHTTPServer.Response {
        let html = Array("<!DOCTYPE html><html><body>Wikimedia Error</body></html>".utf8)
        let components = URLComponents(string: uri)
        let path = components?.path ?? ""
        if path.hasPrefix("/thumb/") || path.hasPrefix("/orig/") {
            let id = Int(path.split(separator: "/").dropFirst().first ?? "") ?? -1
            return lock.withLock {
                guard let file = files.first(where: { $0.pageID == id }) else {
                    return .whole(.notFound, contentType: "text/html", html)
                }
                return .whole(.ok, contentType: file.mime, file.jpeg)
            }
        }
        let fault: Fault = lock.withLock {
            if let count = faultCount {
                if count <= 0 { return .none }
                faultCount = count - 1
            }
            return self.fault
        }
        switch fault {
        case let .maxlag(seconds):
            return .whole(
                .ok, contentType: "application/json",
                json([
                    "error": [
                        "code": "maxlag", "info": "Waiting for 10.64.48.35: 7 seconds lagged.", "host": "db1", "lag": 7,
                        "type": "db",
                    ],
                    "servedby": "mw1",
                ]), headers: [("Retry-After", String(seconds)), ("X-Database-Lag", "7")])
        case let .rateLimited(seconds):
            return .whole(.tooManyRequests, contentType: "text/html", html, headers: [("Retry-After", String(seconds))])
        case .serverError: return .whole(.serviceUnavailable, contentType: "text/html", html)
        case .hugeErrorPage:
            return .whole(
                .serviceUnavailable, contentType: "text/html",
                html + Array(repeating: UInt8(ascii: " "), count: 1 << 20))
        case .forbidden: return .whole(.forbidden, contentType: "text/html", html)
        case .hang: return .nothing
        case .malformedJSON:
            return .whole(
                .ok, contentType: "application/json", Array(#"{"batchcomplete":true,"query":{"pages":[{"#.utf8))
        case .endless: return .endless(UInt8(ascii: " "))
        case .none, .trickle, .huge: break
        }
        let query = Dictionary(
            (components?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let point = (query["ggscoord"] ?? "").split(separator: "|").compactMap { Double($0) }
        guard query["action"] == "query", query["generator"] == "geosearch", query["ggsnamespace"] == "6",
            point.count == 2, let radius = query["ggsradius"].flatMap(Int.init)
        else {
            return .whole(
                .ok, contentType: "application/json",
                json(["error": ["code": "invalid-coord", "info": "Invalid coordinate provided"]]))
        }
        guard (10...10_000).contains(radius) else {
            return .whole(
                .ok, contentType: "application/json",
                json(["error": ["code": "outofrange", "info": "Invalid value \(radius) for ggsradius"]]))
        }
        let width = Int(query["iiurlwidth"] ?? "") ?? 0
        let answer = json(searchResult(lat: point[0], lon: point[1], radius: Double(radius), width: width))
        switch fault {
        case .trickle: return .trickle(answer)
        case .huge:
            return .whole(
                .ok, contentType: "application/json", answer + Array(repeating: UInt8(ascii: " "), count: 5 << 20))
        default: return .whole(.ok, contentType: "application/json", answer)
        }
    }

    private func searchResult(lat: Double, lon: Double, radius: Double, width: Int) -> [String: Any] {
        lock.withLock {
            // The nearest 50 (ggslimit), then listed by page id, as the page-id lookup of generator mode lists them.
            let found = files.map { ($0, Geodesy.distance(lat, lon, $0.latitude, $0.longitude)) }
                .filter { $0.1 <= radius }.sorted { $0.1 < $1.1 }.prefix(50).sorted { $0.0.pageID > $1.0.pageID }
            let pages: [[String: Any]] = found.map { file, distance in
                var coordinate: [String: Any] = [
                    "lat": file.latitude, "lon": file.longitude, "primary": true, "globe": "earth", "dist": distance,
                ]
                if let type = file.coordinateType { coordinate["type"] = type }
                if let dim = file.dim { coordinate["dim"] = dim }
                var meta: [String: Any] = [:]
                for (key, value) in [
                    ("Artist", file.artist), ("LicenseShortName", file.license), ("LicenseUrl", file.licenseURL),
                    ("AttributionRequired", file.attributionRequired), ("NonFree", file.nonFree),
                    ("ObjectName", file.objectName), ("DateTimeOriginal", file.taken), ("Restrictions", ""),
                ] {
                    if let value { meta[key] = ["value": value, "source": "commons-desc-page"] }
                }
                let encoded =
                    file.name.replacingOccurrences(of: " ", with: "_").addingPercentEncoding(
                        withAllowedCharacters: .urlPathAllowed) ?? "x"
                let original = "\(scheme)://127.0.0.1:\(port)/orig/\(file.pageID)/\(encoded)"
                // Commons serves the original as the thumbnail when it is not wider than asked for.
                let isOwnThumbnail = file.width <= width
                let thumb =
                    file.thumbURL ?? (isOwnThumbnail ? original : thumbBase + "\(file.pageID)/\(width)px-\(encoded)")
                return [
                    "pageid": file.pageID, "ns": 6, "title": "File:" + file.name, "coordinates": [coordinate],
                    "imagerepository": "local",
                    "imageinfo": [
                        [
                            "size": file.size, "width": file.width, "height": file.width * 3 / 4,
                            "thumburl": thumb, "thumbwidth": min(width, file.width),
                            "thumbheight": min(width, file.width) * 3 / 4,
                            "url": original, "descriptionurl": "https://commons.wikimedia.org/wiki/File:" + encoded,
                            "descriptionshorturl": "https://commons.wikimedia.org/w/index.php?curid=\(file.pageID)",
                            "mime": file.mime, "extmetadata": meta,
                        ]
                    ],
                ]
            }
            return pages.isEmpty ? ["batchcomplete": true] : ["batchcomplete": true, "query": ["pages": pages]]
        }
    }
}
