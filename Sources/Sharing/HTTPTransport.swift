import AsyncHTTPClient
import FoundationEssentials
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization
import SystemIO

/// OwnTracks over HTTP: `POST` of the JSON to the OwnTracks Recorder's `/pub` (user and device as `?u=&d=` and
/// `X-Limit-U`/`X-Limit-D`) or Traccar's OwnTracks port, with basic auth when the URL names a user and a password
/// is set for it.
///
/// One message at a time, in order. Only a real acknowledgement counts: a complete 2xx answer whose body is
/// empty (Traccar) or a JSON array (the Recorder's list of friends, `[]`). A cut or unreadable answer, 5xx, 429,
/// a timeout or a dropped connection is retried with backoff (full jitter); after 401 or 403 the same message is
/// tried again on `ShareRetry`'s slow schedule.
package final class HTTPTransport: ShareTransport, @unchecked Sendable {
    package struct Settings: Sendable {
        package var destination: ShareDestination
        package var password: String?
        package var caFile: String?
        package var timeout: Double = 15
        package var backoffMin = 1.0
        package var backoffMax = 120.0
        package var rejectedRetry = ShareRetry.rejectedDefault
    }

    package let window = 1
    private let settings: Settings
    private let client: HTTPClient
    private let url: String
    private struct State {
        var queue: [(payload: [UInt8], token: Int)] = []
        var acknowledged: [Int] = []
        var connection: ShareConnection = .connecting
        var error: String?
        var worker: Task<Void, Never>?
    }
    private let state = Mutex(State())

    package init(_ settings: Settings) throws(ShareError) {
        self.settings = settings
        let destination = settings.destination
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile = settings.caFile {
            do {
                tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(caFile))]
            } catch {
                throw ShareError("--share-ca-file \(caFile): not a readable PEM certificate")
            }
        }
        client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(
                tlsConfiguration: tls, redirectConfiguration: .disallow,
                timeout: .init(connect: .seconds(10), read: .seconds(Int64(settings.timeout)))))
        let host = destination.host.contains(":") ? "[\(destination.host)]" : destination.host
        let user = destination.ownTracksUser.lowercased()
        let separator = destination.path.contains("?") ? "&" : "?"
        url =
            "\(destination.tls ? "https" : "http")://\(host):\(destination.port)\(destination.path)"
            + "\(separator)u=\(Self.queryEscaped(user))&d=\(Self.queryEscaped(destination.device))"
    }

    package func submit(_ payload: [UInt8], token: Int) -> ShareSubmission {
        state.withLock { state in
            state.queue.append((payload, token))
            if state.worker == nil {
                state.worker = Task { [weak self] in await self?.work() }
            }
            return .accepted
        }
    }

    package func poll() -> ShareTransportPoll {
        state.withLock { state in
            defer { state.acknowledged = [] }
            return ShareTransportPoll(
                acknowledged: state.acknowledged, connection: state.connection, error: state.error)
        }
    }

    package func stop() async {
        let worker = state.withLock { state in
            defer { state.worker = nil }
            return state.worker
        }
        worker?.cancel()
        await worker?.value
        try? await client.shutdown()
    }

    private enum Outcome {
        case acknowledged
        case retry(String)
        case rejected(String)
    }

    private func work() async {
        var attempt = 0
        var refusals = 0
        while !Task.isCancelled {
            // Taken and, when there is nothing, the worker retired under one lock: a submit never finds a worker
            // that is on its way out.
            let next = state.withLock { state -> (payload: [UInt8], token: Int)? in
                if let first = state.queue.first { return first }
                state.worker = nil
                return nil
            }
            guard let next else { return }
            switch await post(next.payload) {
            case .acknowledged:
                attempt = 0
                refusals = 0
                state.withLock { state in
                    state.queue.removeFirst()
                    state.acknowledged.append(next.token)
                    state.connection = .connected
                    state.error = nil
                }
            case let .retry(reason):
                state.withLock { state in
                    state.connection = .disconnected
                    state.error = reason
                }
                let ceiling = min(settings.backoffMax, settings.backoffMin * Double(1 << min(attempt, 20)))
                attempt += 1
                let delay = max(0.05, Double.random(in: 0...ceiling))
                try? await sleepOnEventLoop(for: .nanoseconds(UInt64(delay * 1e9)))
            case let .rejected(reason):
                state.withLock { state in
                    state.connection = .rejected
                    state.error = reason
                }
                refusals += 1
                let delay = ShareRetry.afterRejection(first: settings.rejectedRetry, refusals: refusals)
                try? await sleepOnEventLoop(for: .nanoseconds(UInt64(delay * 1e9)))
            }
        }
    }

    private func post(_ payload: [UInt8]) async -> Outcome {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "fieldlog")
        let destination = settings.destination
        request.headers.add(name: "X-Limit-U", value: destination.ownTracksUser.lowercased())
        request.headers.add(name: "X-Limit-D", value: destination.device)
        if let user = destination.user, let password = settings.password {
            let credentials = Array((user + ":" + password).utf8)
            request.headers.add(name: "Authorization", value: "Basic " + Data(credentials).base64EncodedString())
        }
        request.body = .bytes(ByteBuffer(bytes: payload))
        let timeout = settings.timeout
        let prepared = request
        do {
            return try await withThrowingTaskGroup(of: Outcome?.self) { group in
                group.addTask { [client] in
                    let response = try await client.execute(prepared, timeout: .seconds(Int64(timeout)))
                    let code = response.status.code
                    // The whole answer, or an error: an answer cut short is no acknowledgement.
                    let body = try await response.body.collect(upTo: 1 << 20)
                    switch code {
                    case 200...299:
                        let bytes = Array(body.readableBytesView)
                        return Self.isAcknowledgement(bytes)
                            ? .acknowledged
                            : .retry(
                                "HTTP \(code) without an OwnTracks answer (neither a JSON array nor an encrypted one)")
                    case 401, 403:
                        return .rejected("the server refused the credentials (HTTP \(code))")
                    default:
                        return .retry("HTTP \(code)")
                    }
                }
                group.addTask {
                    try await sleepOnEventLoop(for: .nanoseconds(UInt64(timeout * 1e9)))
                    return nil
                }
                let first = try await group.next() ?? nil
                group.cancelAll()
                return first ?? .retry("no complete answer within \(Int(timeout)) s")
            }
        } catch is CancellationError {
            return .retry("cancelled")
        } catch {
            return .retry(Self.describe(error))
        }
    }

    /// Traccar answers an empty 200; the Recorder a JSON array (friends' cards and locations, often `[]`), or, for a
    /// user with an encryption key, that array encrypted in an object `{"_type":"encrypted","data":…}`.
    package static func isAcknowledgement(_ body: [UInt8]) -> Bool {
        let trimmed = body.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        guard let first = trimmed.first else { return true }
        if first == UInt8(ascii: "{") {
            return (try? JSONDecoder().decode(EncryptedAnswer.self, from: Data(trimmed)))?.type == "encrypted"
        }
        guard first == UInt8(ascii: "[") else { return false }
        return (try? JSONSerializationLite.isArray(Array(trimmed))) ?? false
    }

    private struct EncryptedAnswer: Decodable {
        var type: String
        var data: String
        enum CodingKeys: String, CodingKey {
            case type = "_type"
            case data
        }
    }

    private static func describe(_ error: any Error) -> String {
        let text = "\(error)"
        // AsyncHTTPClient's errors name no credentials; keep them short all the same.
        return String(text.prefix(160))
    }

    private static func queryEscaped(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }
}

/// Whether bytes are one JSON array, decoded with FoundationEssentials' JSONDecoder.
package enum JSONSerializationLite {
    private struct AnyJSON: Decodable {
        init(from decoder: any Decoder) throws {
            if var array = try? decoder.unkeyedContainer() {
                while !array.isAtEnd { _ = try array.decode(AnyJSON.self) }
            } else if let object = try? decoder.container(keyedBy: AnyKey.self) {
                for key in object.allKeys { _ = try object.decode(AnyJSON.self, forKey: key) }
            } else {
                let value = try decoder.singleValueContainer()
                if value.decodeNil() { return }
                if (try? value.decode(Bool.self)) != nil { return }
                if (try? value.decode(Double.self)) != nil { return }
                _ = try value.decode(String.self)
            }
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    package static func isArray(_ bytes: [UInt8]) throws -> Bool {
        _ = try JSONDecoder().decode([AnyJSON].self, from: Data(bytes))
        return true
    }
}
