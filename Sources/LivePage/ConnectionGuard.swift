import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization
import Exports

/// The live page's connections: at most `limit` admitted at once. A connection beyond it takes the place
/// of the admitted one that has waited longest without a request running (an idle keep-alive socket, or
/// one that has not finished its request head); when every admitted connection is running a request it is
/// refused with 503 at once. Idle sockets, however many, therefore never make a page wait, and a refusal
/// never waits either.
package final class ConnectionBoard: Sendable {
    private struct Entry {
        let channel: any Channel
        /// Requests read and not yet answered in full.
        var running = 0
        var idleSince = ContinuousClock.now
    }

    package let limit: Int
    private let entries = Mutex([ObjectIdentifier: Entry]())

    package init(limit: Int) {
        self.limit = limit
    }

    /// Whether `channel` may be served; closes the idle connection it replaces, if any.
    package func admit(_ channel: any Channel) -> Bool {
        let (admitted, evicted) = entries.withLock { entries -> (Bool, (any Channel)?) in
            var evicted: (any Channel)?
            if entries.count >= limit {
                guard let oldest = entries.filter({ $0.value.running == 0 }).min(by: { $0.value.idleSince < $1.value.idleSince })
                else { return (false, nil) }
                entries[oldest.key] = nil
                evicted = oldest.value.channel
            }
            entries[ObjectIdentifier(channel)] = Entry(channel: channel)
            return (true, evicted)
        }
        evicted?.close(promise: nil)
        return admitted
    }

    package func started(_ channel: any Channel) {
        entries.withLock { $0[ObjectIdentifier(channel)]?.running += 1 }
    }

    package func answered(_ channel: any Channel) {
        entries.withLock { entries in
            guard var entry = entries[ObjectIdentifier(channel)] else { return }
            entry.running = max(0, entry.running - 1)
            entry.idleSince = .now
            entries[ObjectIdentifier(channel)] = entry
        }
    }

    package func remove(_ channel: any Channel) {
        _ = entries.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }
}

/// One connection of the live page, between the HTTP codec and Hummingbird's handler: admission on the
/// `ConnectionBoard`, deadlines, no request bodies, and the security headers on every answer, the HTTP
/// parser's 400 included (Hummingbird writes that one below the router, so no middleware sees it).
///
/// Deadlines, so that no client can hold a connection by trickling bytes: Hummingbird's idle timeout closes
/// a connection with no request running (a request head sent a byte at a time included: only a whole head
/// counts as activity); a response other than an event stream must be sent within `responseTime`; and every
/// connection, event streams too, ends after `lifetime` (a page's EventSource reconnects by itself and is sent
/// what it missed). Request bodies are refused when the head arrives: nothing here takes one, and reading
/// one a byte at a time kept a connection busy for ever.
package final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = HTTPRequestPart
    package typealias InboundOut = HTTPRequestPart
    package typealias OutboundIn = HTTPResponsePart
    package typealias OutboundOut = HTTPResponsePart

    package static let responseTime = TimeAmount.seconds(30)
    package static let lifetime = TimeAmount.minutes(15)
    /// How long a refused connection's input is still taken (and dropped) before it is closed: closing on
    /// unread bytes sends a reset, which can destroy the answer before the client reads it.
    package static let linger = TimeAmount.seconds(2)

    private enum Phase {
        case new, admitted, refused
    }

    private let board: ConnectionBoard
    private var phase = Phase.new
    /// Requests read and not yet answered in full.
    private var running = 0
    private var responseDeadline: Scheduled<Void>?
    private var end: Scheduled<Void>?

    package init(board: ConnectionBoard) {
        self.board = board
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        admit(context)
        context.fireChannelActive()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        board.remove(context.channel)
        responseDeadline?.cancel()
        end?.cancel()
        context.fireChannelInactive()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        responseDeadline?.cancel()
        end?.cancel()
    }

    private func admit(_ context: ChannelHandlerContext) {
        guard phase == .new else { return }
        guard board.admit(context.channel) else {
            refuse(context, .serviceUnavailable, "too many connections (\(board.limit)); try again later\n",
                   extra: [.retryAfter: "10"])
            return
        }
        phase = .admitted
        end = context.eventLoop.assumeIsolated().scheduleTask(in: Self.lifetime) { context.close(promise: nil) }
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard phase == .admitted else { return }  // a refused connection's input is dropped
        if case let .head(request) = unwrapInboundIn(data) {
            let body = request.headerFields[.transferEncoding] != nil
                || request.headerFields[values: .contentLength].contains { $0 != "0" }
            if body {
                if request.method == .get || request.method == .head {
                    refuse(context, .contentTooLarge, "requests with a body are not accepted\n")
                } else {
                    refuse(context, .methodNotAllowed, "405 Method Not Allowed\n", extra: [.allow: "GET, HEAD"])
                }
                return
            }
            running += 1
            board.started(context.channel)
            if responseDeadline == nil { startResponseDeadline(context) }
        }
        context.fireChannelRead(data)
    }

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case var .head(response):
            Self.secure(&response.headerFields)
            if response.headerFields[.contentType] == "text/event-stream" {
                // Runs as long as the page is open; `lifetime` bounds it.
                responseDeadline?.cancel()
                responseDeadline = nil
            }
            context.write(wrapOutboundOut(.head(response)), promise: promise)
        case .end:
            responseDeadline?.cancel()
            responseDeadline = nil
            if running > 0 {
                running -= 1
                board.answered(context.channel)
                if running > 0 { startResponseDeadline(context) }
            }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        }
    }

    private func startResponseDeadline(_ context: ChannelHandlerContext) {
        responseDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: Self.responseTime) { context.close(promise: nil) }
    }

    /// Answers `status` in place of the application, then ends the connection: output closed at once, input
    /// read and dropped for `linger`, then closed.
    private func refuse(_ context: ChannelHandlerContext, _ status: HTTPResponse.Status, _ text: String, extra: HTTPFields = [:]) {
        phase = .refused
        board.remove(context.channel)
        responseDeadline?.cancel()
        end?.cancel()
        let body = context.channel.allocator.buffer(string: text)
        var fields: HTTPFields = [
            .contentType: "text/plain; charset=utf-8", .contentLength: String(body.readableBytes), .connection: "close",
        ]
        fields.append(contentsOf: extra)
        Self.secure(&fields)
        context.write(wrapOutboundOut(.head(HTTPResponse(status: status, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        written.futureResult.assumeIsolated().whenComplete { _ in
            context.close(mode: .output, promise: nil)
            context.eventLoop.assumeIsolated().scheduleTask(in: Self.linger) { context.close(promise: nil) }
        }
    }

    /// The security headers docs/usage.md promises on every answer; a policy set by the route (the export's
    /// stricter one) is kept.
    package static func secure(_ fields: inout HTTPFields) {
        if fields[.contentSecurityPolicy] == nil {
            fields[.contentSecurityPolicy] = HTMLExport.liveContentSecurityPolicy + "; frame-ancestors 'none'"
        }
        if fields[.cacheControl] == nil { fields[.cacheControl] = "no-store" }
        fields[.xContentTypeOptions] = "nosniff"
        fields[.referrerPolicy] = "no-referrer"
        fields[.xFrameOptions] = "DENY"
        fields[.crossOriginResourcePolicy] = "same-origin"
    }
}
