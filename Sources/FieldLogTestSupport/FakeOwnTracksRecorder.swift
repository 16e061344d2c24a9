import Foundation
import Synchronization

/// A stand-in for the OwnTracks Recorder's HTTP mode on loopback, as its documentation and http.c describe it:
/// `POST /pub` with the user and device in `?u=&d=` or `X-Limit-U`/`X-Limit-D`, the body an OwnTracks JSON
/// message, the answer 200 with a JSON array (here `[]`). Basic auth checked as the reverse proxy in front of a
/// real Recorder would, or none asked for (no password). Faults switch at run time.
package final class FakeOwnTracksRecorder: @unchecked Sendable {
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

    package struct Request {
        package var path: String
        package var headers: [String: String]
        package var body: Data
    }

    package let port: UInt16
    private let listener: Int32
    private let state = Mutex<(fault: Fault, stored: [Request], seen: Int, stopped: Bool, authorizations: Set<String>)>(
        (.none, [], 0, false, []))
    package let user: String
    /// nil: no login asked for, and the URL names no user.
    package let password: String?

    package init(user: String, password: String?) {
        self.user = user
        self.password = password
        (listener, port) = Harness.listeningSocket(backlog: 16)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    package var url: String {
        password == nil ? "http://127.0.0.1:\(port)/pub" : "http://\(user)@127.0.0.1:\(port)/pub"
    }

    package func setFault(_ fault: Fault) { state.withLock { $0.fault = fault } }

    /// Messages stored (answered with a real acknowledgement).
    package var stored: [Request] { state.withLock { $0.stored } }
    /// What the real Recorder serves of what it stored: it reads its `.rec` files in 32 KiB lines (the time, a tab,
    /// the topic's column, a tab, the payload with its `"_http":true`, a newline); a longer one is never served.
    package var served: [Request] { stored.filter { Self.recorderLineBytes($0.body) <= 32 << 10 } }

    package static func recorderLineBytes(_ body: Data) -> Int {
        "2026-05-18T09:47:47Z\t*                 \t".utf8.count + body.count + #","_http":true"#.utf8.count + 1
    }

    /// Requests seen, answered or not.
    package var seen: Int { state.withLock { $0.seen } }
    /// Every `Authorization` header received, decoded from base64 (`user:password`), or as sent if it is not Basic.
    package var authorizations: Set<String> { state.withLock { $0.authorizations } }

    package func stop() {
        state.withLock { $0.stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if state.withLock({ $0.stopped }) { return }
                continue
            }
            let thread = Thread { [self] in serve(fd) }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var buffer = Data()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            // One request: the head, then Content-Length bytes of body.
            var headEnd = buffer.range(of: Data("\r\n\r\n".utf8))
            while headEnd == nil {
                let count = read(fd, &chunk, chunk.count)
                if count <= 0 { return }
                buffer.append(contentsOf: chunk[0..<count])
                headEnd = buffer.range(of: Data("\r\n\r\n".utf8))
            }
            let head = String(decoding: buffer[..<headEnd!.lowerBound], as: UTF8.self)
            var lines = head.components(separatedBy: "\r\n")
            let requestLine = lines.removeFirst().split(separator: " ")
            var headers: [String: String] = [:]
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            let bodyStart = headEnd!.upperBound
            while buffer.count - bodyStart < length {
                let count = read(fd, &chunk, chunk.count)
                if count <= 0 { return }
                buffer.append(contentsOf: chunk[0..<count])
            }
            let body = buffer[bodyStart..<(bodyStart + length)]
            buffer = Data(buffer[(bodyStart + length)...])
            let request = Request(
                path: requestLine.count > 1 ? String(requestLine[1]) : "", headers: headers, body: Data(body))
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
            let expected = password.map { "Basic " + Data("\(user):\($0)".utf8).base64EncodedString() }
            guard requestLine.first == "POST", request.path.hasPrefix("/pub") else {
                respond(fd, "405 Method Not Allowed", body: "")
                continue
            }
            guard expected == nil || headers["authorization"] == expected else {
                respond(fd, "401 Unauthorized", body: "", extra: "WWW-Authenticate: Basic realm=\"owntracks\"\r\n")
                continue
            }
            switch fault {
            case .forbiddenOnce:
                respond(fd, "403 Forbidden", body: "")
            case .none:
                state.withLock { $0.stored.append(request) }
                respond(fd, "200 OK", body: "[]")
            case .serverError:
                respond(fd, "503 Service Unavailable", body: "busy")
            case let .slow(seconds):
                Thread.sleep(forTimeInterval: seconds)
                state.withLock { $0.stored.append(request) }
                respond(fd, "200 OK", body: "[]")
            case .dropBody:
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"
                _ = head.withCString { write(fd, $0, strlen($0)) }
                return
            case .notOwnTracks:
                respond(fd, "200 OK", body: "<html></html>", type: "text/html")
            case .encryptedAnswer:
                state.withLock { $0.stored.append(request) }
                respond(fd, "200 OK", body: #"{"_type":"encrypted","data":"bm9uY2UrY2lwaGVydGV4dA=="}"#)
            }
        }
    }

    private func respond(
        _ fd: Int32, _ status: String, body: String, type: String = "application/json", extra: String = ""
    ) {
        let text =
            "HTTP/1.1 \(status)\r\nContent-Type: \(type)\r\nContent-Length: \(body.utf8.count)\r\n\(extra)\r\n\(body)"
        _ = text.withCString { write(fd, $0, strlen($0)) }
    }
}
