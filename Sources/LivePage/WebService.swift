import Exports
import FoundationEssentials
import Glibc
package import HTTPTypes
package import Hummingbird
package import HummingbirdCore
package import Logging
package import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Thumbnailing
package import WalkJournal

/// `fieldlog run --http`: the live page of the walk being recorded, read-only, on Hummingbird.
///
/// - `GET /`: the walk as `fieldlog export walk.html` shows it, with thumbnails from `/thumbnails/KEY`,
///   the status line and the newest 50 milestones; `/?before=N` the 50 before milestone N.
/// - `GET /events`: server-sent events (see `LiveEvents`). `GET /live.js`: the page's script.
/// - `GET /walk.json`, `/walk.gpx`, `/walk.geojson`, `/walk.html`: the walk's exports.
/// - `GET /thumbnails/KEY`: a thumbnail from the cache.
///
/// Nothing else is reachable: no method but GET and HEAD, no file outside the thumbnail cache and the
/// walk's journal, never the API key (the server is not given it). Connections, event subscribers, header
/// sizes, idle time, response time and each connection's lifetime are bounded, request bodies refused (see
/// `ConnectionGuard`); the recorder's thread is never touched (the walk is read from its journal), so a
/// crowd of pages cannot slow it down. Answers are streamed a chunk at a time as the client reads, exports
/// from one shared rendering (`ExportFiles`), thumbnails from their files: what a connection holds is
/// bounded, whatever the walk's size and whether the client reads or not.
package struct WebService: Service {
    package struct Configuration: Sendable {
        package var host: String
        package var port: Int
        /// Connections served at once; one more takes the place of another (see `ConnectionBoard`), or is
        /// answered 503 at once.
        package var maxConnections = 64
        /// Open event streams at once; beyond it a page takes the place of the oldest stream of the address
        /// holding the most, or is answered 503 if that is its own.
        package var maxSubscribers = 32
        /// A connection that sends nothing for this long while it has no response running is closed.
        package var idleTimeout: TimeAmount = .seconds(30)

        package init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    private let configuration: Configuration
    private let walk: LiveWalk
    private let events: LiveEvents
    private let exports = ExportFiles()
    private let board: ConnectionBoard
    private let thumbnails: ThumbnailFiles
    private let status: @Sendable () -> LiveStatus
    private let logger: Logger

    /// `currentWalk` names the walk being recorded; `status` describes the recorder now. A server that
    /// cannot listen logs why and returns.
    package init(
        configuration: Configuration, store: JournalStore, cacheDirectory: String,
        currentWalk: @escaping @Sendable () -> String?, status: @escaping @Sendable () -> LiveStatus, logger: Logger
    ) {
        self.configuration = configuration
        let thumbnails = ThumbnailFiles(directory: cacheDirectory)
        walk = LiveWalk(store: store, currentWalk: currentWalk)
        events = LiveEvents(
            walk: walk, status: status, isCached: { thumbnails.contains($0) },
            maxSubscribers: configuration.maxSubscribers)
        self.thumbnails = thumbnails
        board = ConnectionBoard(limit: configuration.maxConnections)
        self.status = status
        self.logger = logger
    }

    package func run() async throws {
        let router = Router(context: PageContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: ReadOnlyMiddleware())
        router.get("/") { request, context in
            page(before: request.uri.queryParameters.get("before").flatMap { Int($0) }, outbox: context.outbox)
        }
        // The page's one script (`Page/live.js`, embedded at build time); its Content-Security-Policy allows
        // scripts from this server only. Without it the page still works: it is the export, paged by links.
        router.get("live.js") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/javascript; charset=utf-8", .cacheControl: "no-cache"],
                body: .init(byteBuffer: ByteBuffer(bytes: PackageResources.live_js)))
        }
        router.get("events") { request, context in eventStream(request, client: context.client) }
        // Explicit, so that a HEAD does not take an event stream's place it would never give back.
        router.head("events") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"])
        }
        for format in ExportFormat.allCases {
            router.get("walk.\(format.rawValue)") { _, context in await export(format, outbox: context.outbox) }
        }
        router.get("thumbnails/:key") { _, context in
            try thumbnail(context.parameters.require("key"), outbox: context.outbox)
        }
        let (host, port) = (configuration.host, configuration.port)
        let responder = router.buildResponder()
        // HummingbirdCore's server with the router, not Hummingbird's Application: an Application refreshes
        // its Date header every second, which woke the process up to four times a second with nobody looking.
        do {
            let server = try HTTPServerBuilder.http1(
                configuration: .init(
                    additionalChannelHandlers: [ConnectionGuard(board: board)],
                    idleTimeout: configuration.idleTimeout,
                    httpDecoderConfiguration: .init(
                        maxHeaderFieldSize: 8 << 10, maxHeaderListSize: 16 << 10, maxHeaderFieldCount: 64))
            ).buildServer(
                configuration: .init(
                    address: .hostname(host, port: port),
                    // Only a bound on descriptors: connections over `maxConnections` are answered or replace
                    // an idle one at once, and refused ones close within a few seconds.
                    availableConnectionsDelegate: MaximumAvailableConnections(4 * configuration.maxConnections)),
                eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger,
                responder: { [logger, board] request, writer, channel in
                    var response: Response
                    do {
                        response = try await responder.respond(
                            to: request,
                            context: PageContext(
                                source: .init(channel: channel, logger: logger), outbox: board.outbox(for: channel)))
                    } catch let error as HTTPParserError {
                        throw error
                    } catch {
                        logger.debug("live page: \(error)")
                        response = Response(status: .internalServerError)
                    }
                    response.headers[.date] = HTTPDate.now()
                    try await writer.write(response: response.head, body: response.body)
                },
                onServerRunning: { [logger] channel in
                    let bound = channel.localAddress?.port ?? port
                    logger.notice("live page on http://\(host.contains(":") ? "[\(host)]" : host):\(bound)/")
                })
            try await withGracefulShutdownHandler {
                try await server.run()
            } onGracefulShutdown: { [events] in
                // Event streams never end by themselves: end them, or shutdown would wait for every page to close.
                events.close()
            }
        } catch {
            // A page that cannot be served (the address taken, or not on this device) is logged; the walk is
            // recorded all the same.
            logger.error("live page not served on \(host):\(port): \(error)")
        }
    }

    private func page(before: Int?, outbox: Outbox) -> Response {
        let now = status()
        let cached = thumbnails.listing()
        let bytes = walk.look { view in
            HTMLExport.render(
                view?.log ?? WalkLog(id: ""), isCached: { cached.contains($0) }, images: .linked,
                live: .init(before: before, status: now.line(now: Date().timeIntervalSince1970), seq: view?.seq ?? 0))
        }
        return Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
            body: .chunked(ByteBuffer(bytes: bytes), through: outbox))
    }

    private func eventStream(_ request: Request, client: String) -> Response {
        let since = request.headers[.lastEventID] ?? request.uri.queryParameters.get("since")
        guard let stream = events.subscribe(since: since, client: client) else {
            return Response(
                status: .serviceUnavailable, headers: [.contentType: "text/plain; charset=utf-8", .retryAfter: "10"],
                body: .init(
                    byteBuffer: ByteBuffer(
                        string: "too many live pages open (\(events.maxSubscribers)); try again later\n")))
        }
        return Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
            body: .init { writer in
                // Ends when the stream does (shutdown, a subscriber too slow) or the client goes away.
                try? await request.body.consumeWithCancellationOnInboundClose { _ in
                    for await message in stream {
                        try await writer.write(ByteBuffer(string: message))
                    }
                }
                try await writer.finish(nil)
            })
    }

    private func export(_ format: ExportFormat, outbox: Outbox) async -> Response {
        let cached = thumbnails.listing()
        // The log is taken out of the walk's lock (a copy-on-write value) and rendered off the event loop: a
        // download never holds up the page, the event stream or other connections.
        let snapshot: (log: WalkLog, length: off_t)? = walk.look { view in view.map { ($0.log, $0.length) } }
        let rendered: ResponseFile?? =
            if let snapshot {
                .some(
                    await exports.file(format, walk: snapshot.log.id, length: snapshot.length, cached: cached) {
                        [thumbnails] sink in
                        try WalkExport.write(
                            snapshot.log, as: format, isCached: { cached.contains($0) },
                            thumbnail: { thumbnails.read($0) }, to: sink)
                    })
            } else {
                nil
            }
        guard let rendered else {
            return Response(
                status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: "no walk recorded yet\n")))
        }
        guard let file = rendered else {
            return Response(
                status: .serviceUnavailable, headers: [.contentType: "text/plain; charset=utf-8", .retryAfter: "10"],
                body: .init(byteBuffer: ByteBuffer(string: "too many downloads under way; try again later\n")))
        }
        let type: String =
            switch format {
            case .json: "application/json"
            case .gpx: "application/gpx+xml"
            case .geojson: "application/geo+json"
            case .html: "text/html; charset=utf-8"
            }
        var headers: HTTPFields = [.contentType: type]
        if format == .html {
            // The export loads nothing: its own policy, stricter than the live page's.
            headers[.contentSecurityPolicy] = HTMLExport.contentSecurityPolicy + "; frame-ancestors 'none'"
        }
        return Response(status: .ok, headers: headers, body: file.body(through: outbox))
    }

    private func thumbnail(_ key: String, outbox: Outbox) throws -> Response {
        guard let (descriptor, size) = thumbnails.opened(key) else { throw HTTPError(.notFound) }
        return Response(
            status: .ok, headers: [.contentType: "image/jpeg", .cacheControl: "private, max-age=86400"],
            body: ResponseFile(descriptor: descriptor, size: size).body(through: outbox))
    }
}

/// Hummingbird's basic context, the client's address (by which event streams are shared out) and the
/// connection's outbox (which answers wait on).
struct PageContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let client: String
    let outbox: Outbox

    init(source: ApplicationRequestContextSource, outbox: Outbox) {
        coreContext = .init(source: source)
        client = source.channel.remoteAddress?.ipAddress ?? ""
        self.outbox = outbox
    }

    init(source: ApplicationRequestContextSource) {
        self.init(source: source, outbox: Outbox())
    }
}

/// GET and HEAD only (the security headers are added to every answer by `ConnectionGuard`).
package struct ReadOnlyMiddleware<Context: RequestContext>: RouterMiddleware {
    package func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws
        -> Response
    {
        guard request.method == .get || request.method == .head else {
            return Response(status: .methodNotAllowed, headers: [.allow: "GET, HEAD"])
        }
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError {
            // A plain status and nothing of the request echoed back.
            return Response(
                status: error.status, headers: [.contentType: "text/plain; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: "\(error.status.code) \(error.status.reasonPhrase)\n")))
        }
    }
}

extension HTTPField.Name {
    package static let lastEventID = Self("Last-Event-ID")!
    package static let referrerPolicy = Self("Referrer-Policy")!
    package static let xFrameOptions = Self("X-Frame-Options")!
    package static let crossOriginResourcePolicy = Self("Cross-Origin-Resource-Policy")!
}
