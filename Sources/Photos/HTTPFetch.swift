package import AsyncHTTPClient
package import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization
import SystemIO

/// One GET, body included, within a deadline and a size: a body that trickles or never ends is cut off. It
/// returns whatever status came; the caller decides what the status means.
package enum HTTPFetch {
    package struct Answer: Sendable {
        package var status: UInt
        package var body: [UInt8]
        /// `Retry-After` in seconds (the number form; a date or nonsense reads as absent), at most 10 minutes.
        package var retryAfter: Double?
    }

    /// Failures of the transport, named for logs: never holding more than `what` says.
    package enum Failure: Error {
        case deadline
        case tooLarge
        case cancelled
        case transport(String)
    }

    package static func get(
        _ url: String, headers: [(String, String)], client: HTTPClient, timeout: TimeAmount, limit: Int
    ) async throws(Failure) -> Answer {
        do {
            return try await within(timeout) {
                var request = HTTPClientRequest(url: url)
                for (name, value) in headers { request.headers.add(name: name, value: value) }
                let response = try await client.execute(request, timeout: timeout)
                let retryAfter = response.headers.first(name: "Retry-After").flatMap { Double($0) }
                    .flatMap { $0.isFinite && $0 >= 0 ? min($0, 600) : nil }
                guard response.status.code == 200 else {
                    // Error pages are read too, so the connection can be reused; one too long to read does
                    // not change what the status says.
                    let page = try? await response.body.collect(upTo: 64 << 10)
                    return Answer(
                        status: response.status.code, body: page.map { Array($0.readableBytesView) } ?? [],
                        retryAfter: retryAfter)
                }
                let buffer = try await response.body.collect(upTo: limit)
                return Answer(status: 200, body: Array(buffer.readableBytesView), retryAfter: retryAfter)
            }
        } catch is DeadlineExceeded {
            throw .deadline
        } catch is NIOTooManyBytesError {
            throw .tooLarge
        } catch is CancellationError {
            throw .cancelled
        } catch {
            throw .transport("\(error)")
        }
    }

    /// One client per CA file for the life of the process (an HTTPClient must be shut down before it is
    /// released; these never are). It follows no redirects, since a redirect could lead anywhere.
    private static let clients = Mutex<[String: HTTPClient]>([:])

    /// The client trusting `caFile` (PEM) besides the system's roots; `option` names the file in the error.
    package static func client(trusting caFile: String?, option: String) throws(PhotoSourceError) -> HTTPClient {
        do {
            return try clients.withLock { clients in
                if let client = clients[caFile ?? ""] { return client }
                var tls = TLSConfiguration.makeClientConfiguration()
                if let caFile {
                    tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(caFile))]
                }
                let client = HTTPClient(
                    eventLoopGroupProvider: .singleton,
                    configuration: .init(
                        tlsConfiguration: tls, redirectConfiguration: .disallow,
                        timeout: .init(connect: .seconds(10), read: .seconds(30))))
                clients[caFile ?? ""] = client
                return client
            }
        } catch {
            throw PhotoSourceError(.fatal, "\(option) \(caFile ?? ""): not a readable PEM certificate (\(error))")
        }
    }

    private struct DeadlineExceeded: Error {}

    /// `work`'s result, or DeadlineExceeded once `timeout` has passed (`work` is then cancelled).
    private static func within<T: Sendable>(
        _ timeout: TimeAmount, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await sleepOnEventLoop(for: .nanoseconds(max(timeout.nanoseconds, 0)))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else { throw DeadlineExceeded() }
            return value
        }
    }
}

extension HTTPFetch.Failure {
    /// As a photo source error: a deadline, a drop or a cancellation is worth retrying; a body over the limit
    /// is not (the same file would be as large next time).
    package func named(_ what: String, timeout: TimeAmount, limit: Int) -> PhotoSourceError {
        switch self {
        case .deadline:
            return PhotoSourceError(
                .temporary, "\(what): no complete answer within \(timeout.nanoseconds / 1_000_000_000) s")
        case .tooLarge:
            return PhotoSourceError(.permanent, "\(what): response larger than \(limit) bytes")
        case .cancelled:
            return PhotoSourceError(.temporary, "\(what): cancelled")
        case let .transport(message):
            return PhotoSourceError(.temporary, "\(what): \(message)")
        }
    }
}
