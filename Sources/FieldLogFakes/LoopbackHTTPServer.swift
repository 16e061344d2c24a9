import Foundation
import NIOCore
package import NIOHTTP1
import NIOPosix
import NIOSSL

/// The HTTP server under the fakes of web services (FakeFlickr, FakeCommons, FakeOwnTracksRecorder): listens on
/// 127.0.0.1, over http or https, and answers each request with what the fake's `respond` says, including answers
/// that a client must survive (none at all, late, cut short, one byte a second, a body without end).
package final class LoopbackHTTPServer: Sendable {
    /// What the server does with one request.
    package enum Response: Sendable {
        case whole(HTTPResponseStatus, contentType: String, [UInt8], headers: [(String, String)] = [])
        /// Accepts the request and never answers: the connection stays open until the client gives up.
        case nothing
        /// A 200 with these bytes, sent one a second.
        case trickle([UInt8])
        /// A chunked 200 that never ends: this byte every 50 ms.
        case endless(UInt8)
        /// That answer, this many seconds later.
        indirect case after(Double, Response)
        /// A 200 head that promises this many bytes, and then the connection closed: the answer never arrives whole.
        case cutShort(contentLength: Int)
    }

    /// A request as a fake that reads bodies sees it (`start(port:tls:answer:)`).
    package struct Request: Sendable {
        package var head: HTTPRequestHead
        package var body: [UInt8]
    }

    /// The checkout's Tests/Fixtures/tls (this file is Sources/FieldLogFakes/LoopbackHTTPServer.swift): the
    /// test certificate https is served with, and the CA that signed it (ca.pem).
    package static let tlsFixtures =
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path + "/Tests/Fixtures/tls"

    private let channel: any Channel
    package let port: Int
    package let scheme: String

    /// Starts listening on `port` (0: any free port). Requests are answered on NIO's event loop, not on Swift's
    /// cooperative pool, which tests waiting for child processes can hold for seconds; so `respond` must not block.
    package static func start(
        port: Int = 0, tls: Bool = false, respond: @escaping @Sendable (HTTPRequestHead) -> Response
    ) async throws -> LoopbackHTTPServer {
        try await start(port: port, tls: tls, answer: .head(respond))
    }

    /// Starts listening as above, answering each request once its body has arrived whole.
    package static func start(
        port: Int = 0, tls: Bool = false, answer: @escaping @Sendable (Request) -> Response
    ) async throws -> LoopbackHTTPServer {
        try await start(port: port, tls: tls, answer: .whole(answer))
    }

    private enum Answer: Sendable {
        case head(@Sendable (HTTPRequestHead) -> Response)
        case whole(@Sendable (Request) -> Response)
    }

    private static func start(port: Int, tls: Bool, answer: Answer) async throws -> LoopbackHTTPServer {
        let context =
            try tls
            ? NIOSSLContext(
                configuration: .makeServerConfiguration(
                    certificateChain: try NIOSSLCertificate.fromPEMFile(tlsFixtures + "/server.pem").map {
                        .certificate($0)
                    },
                    privateKey: .privateKey(try NIOSSLPrivateKey(file: tlsFixtures + "/server.key", format: .pem))))
            : nil
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let context {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(answer: answer))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        return LoopbackHTTPServer(channel: channel, scheme: tls ? "https" : "http")
    }

    private init(channel: any Channel, scheme: String) {
        self.channel = channel
        self.port = channel.localAddress?.port ?? 0
        self.scheme = scheme
    }

    package func stop() async {
        try? await channel.close()
    }

    /// Stops listening without waiting for it (from a `defer`).
    package func close() {
        channel.close(promise: nil)
    }

    /// One connection: answers each request as its head arrives.
    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let answer: Answer
        /// The request being read, for an `Answer.whole`.
        var request: Request?

        init(answer: Answer) { self.answer = answer }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch (unwrapInboundIn(data), answer) {
            case let (.head(head), .head(respond)):
                send(respond(head), to: head, context: context)
            case let (.head(head), .whole):
                request = Request(head: head, body: [])
            case (.body(var buffer), .whole):
                request?.body += buffer.readBytes(length: buffer.readableBytes) ?? []
            case let (.end, .whole(respond)):
                guard let request else { return }
                self.request = nil
                send(respond(request), to: request.head, context: context)
            default:
                return
            }
        }

        private func send(_ response: Response, to head: HTTPRequestHead, context: ChannelHandlerContext) {
            var headers = HTTPHeaders()
            switch response {
            case .nothing:
                return
            case let .after(seconds, response):
                context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(seconds * 1000))) { [self] in
                    guard context.channel.isActive else { return }
                    send(response, to: head, context: context)
                }
            case let .cutShort(length):
                headers.add(name: "Content-Type", value: "application/json")
                headers.add(name: "Content-Length", value: String(length))
                context.writeAndFlush(
                    wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))),
                    promise: nil)
                context.close(promise: nil)
            case let .whole(status, contentType, body, extra):
                headers.add(name: "Content-Type", value: contentType)
                for (name, value) in extra { headers.add(name: name, value: value) }
                headers.add(name: "Content-Length", value: String(body.count))
                context.write(
                    wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
                    promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            case let .trickle(bytes):
                headers.add(name: "Content-Length", value: String(bytes.count))
                context.writeAndFlush(
                    wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))),
                    promise: nil)
                drip(bytes[...], filler: 0, every: .seconds(1), context: context)
            case let .endless(filler):
                headers.add(name: "Transfer-Encoding", value: "chunked")
                context.writeAndFlush(
                    wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))),
                    promise: nil)
                drip(nil, filler: filler, every: .milliseconds(50), context: context)
            }
        }

        /// Sends one byte of `bytes` (or `filler`, endlessly, when nil) at each interval, until the bytes run out
        /// or the client leaves.
        private func drip(
            _ bytes: ArraySlice<UInt8>?, filler: UInt8, every interval: TimeAmount, context: ChannelHandlerContext
        ) {
            context.eventLoop.assumeIsolated().scheduleTask(in: interval) { [self] in
                guard context.channel.isActive else { return }
                if let bytes, bytes.isEmpty {
                    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                    return
                }
                let byte = bytes?.first ?? filler
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: [byte])))), promise: nil)
                drip(bytes?.dropFirst(), filler: filler, every: interval, context: context)
            }
        }
    }
}
