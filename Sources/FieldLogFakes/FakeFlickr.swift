import Foundation
import NIOHTTP1
import WalkModel

/// A stand-in for Flickr on loopback: `flickr.photos.search` with real geo filtering over photos placed
/// along a test walk, the photos' JPEG files as images, and faults to switch on.
package final class FakeFlickr: @unchecked Sendable {
    package struct Photo {
        package var id: String
        package var latitude: Double
        package var longitude: Double
        package var title: String
        package var owner = "12345678@N00"
        package var ownerName = "Test Walker"
        package var license = 4
        /// `datetaken`; nil: ten minutes after the photo added before it (so no two are one burst).
        package var taken: String?
        /// Flickr's position accuracy (16 street level, 11 city) and geo context (1 indoors, 2 outdoors).
        package var accuracy = 16
        package var context = 0
        /// The image served for it.
        package var jpeg: [UInt8]

        package init(
            id: String, latitude: Double, longitude: Double, title: String, owner: String = "12345678@N00",
            ownerName: String = "Test Walker", license: Int = 4, taken: String? = nil, accuracy: Int = 16,
            context: Int = 0,
            jpeg: [UInt8]
        ) {
            self.id = id
            self.latitude = latitude
            self.longitude = longitude
            self.title = title
            self.owner = owner
            self.ownerName = ownerName
            self.license = license
            self.taken = taken
            self.accuracy = accuracy
            self.context = context
            self.jpeg = jpeg
        }
    }

    package enum Fault: Equatable {
        case none
        /// 503 with an HTML body, as Flickr's front end sends.
        case serverError
        /// 429 with an HTML body.
        case rateLimited
        /// Accepts the request and never answers.
        case hang
        case malformedJSON
        /// HTTP 200 with `stat: fail` and this code.
        case statFail(Int)
        /// A whole answer, sent one byte a second.
        case trickle
        /// A chunked answer that never ends (a byte every 50 ms).
        case endless
        /// A valid answer padded to 3 MiB.
        case huge
        /// 302 to this URL.
        case redirect(String)
        /// This text as the answer, as it is.
        case raw(String)
    }

    package enum ImageFault {
        case notFound, truncated, corrupt, png, html, bomb, trickle, endless
        case redirect(String)
    }

    /// A made-up key of a real key's shape (32 hex digits), which only this fake accepts.
    package static let apiKey = String(repeating: "0123456789abcdef", count: 2)

    private let lock = NSLock()
    private var photos: [Photo] = []
    private var fault = Fault.none
    private var imageFaults: [String: ImageFault] = [:]
    /// Numbers as strings, the way Flickr sometimes sends them.
    private var numbersAsStrings = false
    private var requestLog: [String] = []
    /// Photo entries sent as they are instead of the photos' own (hostile answers).
    private var crafted: [[String: Any]]?
    /// The image of the photo near every search, and how many searches found one.
    private var nearby: (jpeg: [UInt8], searches: Int)?
    private var server: LoopbackHTTPServer?
    package private(set) var port = 0

    package init() {}

    package private(set) var scheme = "http"
    package var endpoint: String { "\(scheme)://127.0.0.1:\(port)/services/rest/" }
    package var imageBase: String { "\(scheme)://127.0.0.1:\(port)/img/" }

    package func add(_ photo: Photo) { lock.withLock { photos.append(photo) } }
    package func setFault(_ fault: Fault) { lock.withLock { self.fault = fault } }
    package func setImageFault(_ fault: ImageFault?, for id: String) { lock.withLock { imageFaults[id] = fault } }
    package func setNumbersAsStrings(_ value: Bool) { lock.withLock { numbersAsStrings = value } }
    /// Every search answers these photo entries first, then the photos within the radius.
    package func setCrafted(_ entries: [[String: Any]]?) { lock.withLock { crafted = entries } }
    package var requests: [String] { lock.withLock { requestLog } }

    /// From now on every search also finds one photo 20 m north-east of its point, taken ten minutes after the
    /// one the search before found (so no two are one burst), and every image not added is `jpeg`: photos for
    /// a walk of any length anywhere, for the benchmarks (`fieldlog-fakes flickr`).
    package func placePhotoNearEverySearch(jpeg: [UInt8]) { lock.withLock { nearby = (jpeg, 0) } }

    /// Starts listening on `port` (0: any free port). With `tls`, it serves https with the test certificate of
    /// Tests/Fixtures/tls (signed by its ca.pem).
    package func start(port: Int = 0, tls: Bool = false) async throws {
        let server = try await LoopbackHTTPServer.start(port: port, tls: tls) { [self] head in
            lock.withLock { requestLog.append(head.uri) }
            return respond(to: head.uri)
        }
        self.port = server.port
        scheme = server.scheme
        lock.withLock { self.server = server }
    }

    package func stop() async {
        await lock.withLock { server }?.stop()
    }

    private func respond(to uri: String) -> LoopbackHTTPServer.Response {
        let html = Array("<html><body><h1>Something went wrong</h1></body></html>".utf8)
        let components = URLComponents(string: uri)
        let path = components?.path ?? ""
        if path.hasPrefix("/img/") {
            let id = String(path.dropFirst(5).dropLast(4))
            return lock.withLock {
                guard let photo = photos.first(where: { $0.id == id }) else {
                    if let nearby { return .whole(.ok, contentType: "image/jpeg", nearby.jpeg) }
                    return .whole(.notFound, contentType: "text/html", html)
                }
                switch imageFaults[id] {
                case nil: return .whole(.ok, contentType: "image/jpeg", photo.jpeg)
                case .notFound: return .whole(.notFound, contentType: "text/html", html)
                case .truncated:
                    return .whole(.ok, contentType: "image/jpeg", Array(photo.jpeg.prefix(photo.jpeg.count / 2)))
                case .corrupt:
                    var bytes = photo.jpeg
                    for index in stride(from: bytes.count / 3, to: bytes.count - 2, by: 7) { bytes[index] = 0xFF }
                    return .whole(.ok, contentType: "image/jpeg", bytes)
                case .png:
                    return .whole(
                        .ok, contentType: "image/jpeg",
                        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 0, count: 64))
                case .html: return .whole(.ok, contentType: "image/jpeg", html)
                case .bomb: return .whole(.ok, contentType: "image/jpeg", Self.decompressionBomb)
                case .trickle: return .trickle(photo.jpeg)
                case .endless: return .endless(UInt8(ascii: "x"))
                case let .redirect(url):
                    return .whole(.found, contentType: "text/html", html, headers: [("Location", url)])
                }
            }
        }
        let query = Dictionary(
            (components?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let fault = lock.withLock { self.fault }
        switch fault {
        case .serverError: return .whole(.serviceUnavailable, contentType: "text/html", html)
        case .rateLimited: return .whole(.tooManyRequests, contentType: "text/html", html)
        case .hang: return .nothing
        case .malformedJSON:
            return .whole(.ok, contentType: "application/json", Array(#"{"photos":{"page":1,"photo":[{"id":"#.utf8))
        case let .statFail(code):
            return .whole(
                .ok, contentType: "application/json",
                Array(#"{"stat":"fail","code":\#(code),"message":"Fake failure"}"#.utf8))
        case .endless: return .endless(UInt8(ascii: "x"))
        case let .redirect(url): return .whole(.found, contentType: "text/html", html, headers: [("Location", url)])
        case let .raw(text): return .whole(.ok, contentType: "application/json", Array(text.utf8))
        case .none, .trickle, .huge: break
        }
        guard query["api_key"] == Self.apiKey else {
            return .whole(
                .ok, contentType: "application/json",
                Array(#"{"stat":"fail","code":100,"message":"Invalid API Key (Key has invalid format)"}"#.utf8))
        }
        guard query["method"] == "flickr.photos.search", let lat = query["lat"].flatMap(Double.init),
            let lon = query["lon"].flatMap(Double.init), let radius = query["radius"].flatMap(Double.init),
            query["min_taken_date"] != nil || query["min_upload_date"] != nil
        else {
            return .whole(
                .ok, contentType: "application/json",
                Array(#"{"stat":"fail","code":3,"message":"Parameterless searches have been disabled"}"#.utf8))
        }
        let answer = searchResult(lat: lat, lon: lon, radiusKm: radius)
        switch fault {
        case .trickle: return .trickle(answer)
        case .huge:
            return .whole(
                .ok, contentType: "application/json", answer + Array(repeating: UInt8(ascii: " "), count: 3 << 20))
        default: return .whole(.ok, contentType: "application/json", answer)
        }
    }

    private func searchResult(lat: Double, lon: Double, radiusKm: Double) -> [UInt8] {
        lock.withLock {
            var found = nearbyPhoto(lat: lat, lon: lon).map { [($0, 0.0)] } ?? []
            found += photos.map { ($0, Geodesy.distance(lat, lon, $0.latitude, $0.longitude)) }
                .filter { $0.1 <= radiusKm * 1000 }
                .sorted { $0.1 < $1.1 }
            func number(_ value: Double) -> Any { numbersAsStrings ? String(value) : value }
            let list: [[String: Any]] =
                (crafted ?? [])
                + found.map { photo, _ in
                    let order = photos.firstIndex { $0.id == photo.id } ?? 0
                    let taken =
                        photo.taken
                        ?? "2024-05-18 \(String(format: "%02d:%02d", 9 + order / 6 % 14, order % 6 * 10)):00"
                    return [
                        "id": photo.id, "owner": photo.owner, "secret": "abc123", "server": "65535", "farm": 66,
                        "title": photo.title, "ispublic": 1,
                        "license": numbersAsStrings ? String(photo.license) : photo.license,
                        "ownername": photo.ownerName, "datetaken": taken, "context": photo.context,
                        "latitude": number(photo.latitude), "longitude": number(photo.longitude),
                        "accuracy": String(photo.accuracy),
                        "url_z": imageBase + photo.id + ".jpg", "height_z": 480, "width_z": "640",
                    ]
                }
            let root: [String: Any] = [
                "photos": [
                    "page": 1, "pages": list.isEmpty ? 0 : 1, "perpage": 100,
                    "total": list.isEmpty ? "" : (numbersAsStrings ? String(list.count) : list.count) as Any,
                    "photo": list,
                ] as [String: Any],
                "stat": "ok",
            ]
            return Array(try! JSONSerialization.data(withJSONObject: root))
        }
    }

    /// The photo near this search's point, when every search finds one; the caller holds the lock.
    private func nearbyPhoto(lat: Double, lon: Double) -> Photo? {
        guard let jpeg = nearby?.jpeg else { return nil }
        nearby?.searches += 1
        let taken = DateFormatter()
        taken.locale = Locale(identifier: "en_US_POSIX")
        taken.timeZone = TimeZone(identifier: "UTC")
        taken.dateFormat = "yyyy-MM-dd HH:mm:ss"
        // 2024-05-18 09:00:00 UTC, and ten minutes more for each search.
        let time = Date(timeIntervalSince1970: 1_716_022_800 + 600 * Double(nearby?.searches ?? 0))
        func digits(_ degrees: Double) -> String { String(abs(Int((degrees * 1e5).rounded(.toNearestOrEven)))) }
        return Photo(
            id: digits(lat) + digits(lon), latitude: lat + 0.00013, longitude: lon + 0.00022,
            title: String(format: "Near %.4f, %.4f", lat, lon), ownerName: "Bench", taken: taken.string(from: time),
            jpeg: jpeg)
    }

    /// A valid JPEG header claiming 60000 x 60000 pixels, and almost nothing after it.
    package static let decompressionBomb: [UInt8] = {
        var bytes: [UInt8] = [
            0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01,
            0x00, 0x00,
        ]
        // SOF0: 8-bit, 60000 x 60000, 1 component
        bytes += [0xFF, 0xC0, 0x00, 0x0B, 0x08, 0xEA, 0x60, 0xEA, 0x60, 0x01, 0x01, 0x11, 0x00]
        // DHT (a minimal DC table) and SOS, then a few bytes of scan data
        bytes += [0xFF, 0xC4, 0x00, 0x14, 0x00, 0x01] + Array(repeating: 0, count: 15) + [0x00]
        bytes += [0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3F, 0x00, 0x00, 0x00, 0xFF, 0xD9]
        return bytes
    }()
}
