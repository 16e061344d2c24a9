package import Foundation
import NIOHTTP1
import Synchronization

/// A stand-in for the OwnTracks Recorder's HTTP mode on loopback, as its documentation and http.c describe it:
/// `POST /pub` with the user and device in `?u=&d=` or `X-Limit-U`/`X-Limit-D`, the body an OwnTracks JSON
/// message, the answer 200 with a JSON array (here `[]`). Basic auth checked as the reverse proxy in front of a
/// real Recorder would, or none asked for (no password). Faults switch at run time. Over `LoopbackHTTPServer`.
package final class FakeOwnTracksRecorder: Sendable {
    package enum Fault: Sendable, Equatable {
        case none
        case serverError
        /// Answers after this many seconds.
        case slow(Double)
        /// 200 with `Content-Length: 2` and then the connection closed: the answer never arrives whole.
        case dropBody
        /// 200 with an empty HTML page, as a captive portal would: no OwnTracks answer.
        case notOwnTracks
        /// 403 to the next request, as a proxy or an authentication backend that blinked would; then none.
        case forbiddenOnce
        /// Stores the message and answers as the Recorder does for a user with an encryption key: the friends'
        /// array encrypted, in an object (http.c, `_type: encrypted`).
        case encryptedAnswer
    }

    package struct Request: Sendable {
        package var path: String
        package var headers: [String: String]
        package var body: Data
    }

    private struct State {
        var fault = Fault.none
        var stored: [Request] = []
        var seen = 0
        var authorizations: Set<String> = []
    }

    private let server: LoopbackHTTPServer
    /// Shared with the server's answers, which run on its event loop.
    private let book: Book
    package let user: String
    /// nil: no login asked for, and the URL names no user.
    package let password: String?

    private final class Book: Sendable {
        let state = Mutex(State())
    }

    private init(server: LoopbackHTTPServer, book: Book, user: String, password: String?) {
        self.server = server
        self.book = book
        self.user = user
        self.password = password
    }

    package static func start(user: String, password: String?) async throws -> FakeOwnTracksRecorder {
        let book = Book()
        let expected = password.map { "Basic " + Data("\(user):\($0)".utf8).base64EncodedString() }
        let server = try await LoopbackHTTPServer.start { request in
            Self.answer(request, expected: expected, state: book.state)
        }
        return FakeOwnTracksRecorder(server: server, book: book, user: user, password: password)
    }

    package var port: Int { server.port }

    package var url: String {
        password == nil ? "http://127.0.0.1:\(port)/pub" : "http://\(user)@127.0.0.1:\(port)/pub"
    }

    package func setFault(_ fault: Fault) { book.state.withLock { $0.fault = fault } }

    /// Messages stored (answered with a real acknowledgement).
    package var stored: [Request] { book.state.withLock { $0.stored } }
    /// What the real Recorder serves of what it stored: it reads its `.rec` files in 32 KiB lines (the time, a tab,
    /// the topic's column, a tab, the payload with its `"_http":true`, a newline); a longer one is never served.
    package var served: [Request] { stored.filter { Self.recorderLineBytes($0.body) <= 32 << 10 } }

    package static func recorderLineBytes(_ body: Data) -> Int {
        "2026-05-18T09:47:47Z\t*                 \t".utf8.count + body.count + #","_http":true"#.utf8.count + 1
    }

    /// Requests seen, answered or not.
    package var seen: Int { book.state.withLock { $0.seen } }
    /// Every `Authorization` header received, decoded from base64 (`user:password`), or as sent if it is not Basic.
    package var authorizations: Set<String> { book.state.withLock { $0.authorizations } }

    package func stop() {
        server.close()
    }

    private static func answer(
        _ request: LoopbackHTTPServer.Request, expected: String?, state: borrowing Mutex<State>
    ) -> LoopbackHTTPServer.Response {
        var headers: [String: String] = [:]
        for (name, value) in request.head.headers { headers[name.lowercased()] = value }
        let stored = Request(path: request.head.uri, headers: headers, body: Data(request.body))
        let fault = state.withLock { state -> Fault in
            state.seen += 1
            if let authorization = headers["authorization"] {
                let decoded =
                    authorization.hasPrefix("Basic ")
                    ? Data(base64Encoded: String(authorization.dropFirst(6))).map {
                        String(decoding: $0, as: UTF8.self)
                    } : nil
                state.authorizations.insert(decoded ?? authorization)
            }
            let fault = state.fault
            if fault == .forbiddenOnce { state.fault = .none }
            return fault
        }
        func json(_ status: HTTPResponseStatus, _ body: String) -> LoopbackHTTPServer.Response {
            .whole(status, contentType: "application/json", Array(body.utf8))
        }
        guard request.head.method == .POST, stored.path.hasPrefix("/pub") else {
            return json(.methodNotAllowed, "")
        }
        guard expected == nil || headers["authorization"] == expected else {
            return .whole(
                .unauthorized, contentType: "application/json", [],
                headers: [("WWW-Authenticate", "Basic realm=\"owntracks\"")])
        }
        switch fault {
        case .forbiddenOnce:
            return json(.forbidden, "")
        case .none:
            state.withLock { $0.stored.append(stored) }
            return json(.ok, "[]")
        case .serverError:
            return json(.serviceUnavailable, "busy")
        case let .slow(seconds):
            state.withLock { $0.stored.append(stored) }
            return .after(seconds, json(.ok, "[]"))
        case .dropBody:
            return .cutShort(contentLength: 2)
        case .notOwnTracks:
            return .whole(.ok, contentType: "text/html", Array("<html></html>".utf8))
        case .encryptedAnswer:
            state.withLock { $0.stored.append(stored) }
            return json(.ok, #"{"_type":"encrypted","data":"bm9uY2UrY2lwaGVydGV4dA=="}"#)
        }
    }
}
