import Exports
package import HTTPTypes
package import NIOCore
package import NIOHTTPTypes
import Synchronization

/// How many places (connections, event streams) each client address holds: a newcomer may take a place of the
/// address holding the most only when it holds fewer itself, so that a client can only crowd out itself.
struct AddressShares {
    let heaviest: String
    private let most: Int
    private let counts: [String: Int]

    /// nil when no place is held.
    init?(_ addresses: some Sequence<String>) {
        var counts: [String: Int] = [:]
        for address in addresses { counts[address, default: 0] += 1 }
        guard let (heaviest, most) = counts.max(by: { $0.value < $1.value }) else { return nil }
        self.heaviest = heaviest
        self.most = most
        self.counts = counts
    }

    func holdsFewer(_ address: String) -> Bool {
        counts[address, default: 0] < most
    }
}

/// The live page's connections: at most `limit` admitted at once. A connection beyond it takes the place
/// of another, chosen so that a client can only crowd out itself:
/// 1. the one idle longest after a completed answer (a keep-alive socket);
/// 2. else the oldest one that has sent no request within `grace` of connecting;
/// 3. else, of the address holding the most connections, its oldest one that has sent no request yet;
/// 4. else, when the newcomer's address holds fewer connections than that address, its oldest one, even
///    while it runs a request (an export nobody reads, an event stream).
/// Otherwise it is refused with 503 at once. A phone's fresh connection is therefore never closed by
/// another address opening connections non-stop, and a refusal never waits.
package final class ConnectionBoard: Sendable {
    private struct Entry {
        let channel: any Channel
        let address: String
        let outbox = Outbox()
        let since = ContinuousClock.now
        /// Requests read and not yet answered in full.
        var running = 0
        /// When the last answer was completed; nil while none has been.
        var idleSince: ContinuousClock.Instant?
    }

    /// How long a new connection may take to send its first request before any newcomer may replace it.
    package static let grace = Duration.seconds(3)

    package let limit: Int
    private let entries = Mutex([ObjectIdentifier: Entry]())

    package init(limit: Int) {
        self.limit = limit
    }

    /// The outbox of `channel` if it may be served (nil: refused); closes the connection it replaces, if any.
    package func admit(_ channel: any Channel) -> Outbox? {
        let address = channel.remoteAddress?.ipAddress ?? ""
        let (admitted, evicted) = entries.withLock { entries -> (Outbox?, (any Channel)?) in
            var evicted: (any Channel)?
            if entries.count >= limit {
                guard let key = Self.replaceable(in: entries, by: address) else { return (nil, nil) }
                evicted = entries.removeValue(forKey: key)?.channel
            }
            let entry = Entry(channel: channel, address: address)
            entries[ObjectIdentifier(channel)] = entry
            return (entry.outbox, evicted)
        }
        evicted?.close(promise: nil)
        return admitted
    }

    /// What `channel`'s answers wait on to write more (a fresh one, never filled, for a channel not admitted).
    package func outbox(for channel: any Channel) -> Outbox {
        entries.withLock { $0[ObjectIdentifier(channel)]?.outbox } ?? Outbox()
    }

    private static func replaceable(in entries: [ObjectIdentifier: Entry], by address: String) -> ObjectIdentifier? {
        let now = ContinuousClock.now
        let waiting = entries.filter { $0.value.running == 0 && $0.value.idleSince == nil }
        if let idle = entries.filter({ $0.value.running == 0 && $0.value.idleSince != nil })
            .min(by: { $0.value.idleSince! < $1.value.idleSince! })
        {
            return idle.key
        }
        if let late = waiting.filter({ now - $0.value.since >= grace }).min(by: { $0.value.since < $1.value.since }) {
            return late.key
        }
        guard let shares = AddressShares(entries.values.map(\.address)) else { return nil }
        if let fresh = waiting.filter({ $0.value.address == shares.heaviest }).min(by: {
            $0.value.since < $1.value.since
        }) {
            return fresh.key
        }
        guard shares.holdsFewer(address) else { return nil }
        return entries.filter { $0.value.address == shares.heaviest }.min(by: { $0.value.since < $1.value.since })?.key
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
/// Deadlines, so that no client can hold a connection by trickling bytes or by not reading: Hummingbird's idle
/// timeout closes a connection with no request running (a request head sent a byte at a time included: only
/// a whole head counts as activity); a response must begin within `responseTime`;
/// a connection with bytes waiting for the client that takes none of them for `stallTime` is closed (responses
/// are written a chunk at a time as the client reads, so that is all it holds); and every connection, event
/// streams too, ends after `lifetime` (the page's script reconnects and is sent what it missed). Request
/// bodies are refused when the head arrives: nothing here takes one, and reading one a byte at a time kept a
/// connection busy for ever.
package final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = HTTPRequestPart
    package typealias InboundOut = HTTPRequestPart
    package typealias OutboundIn = HTTPResponsePart
    package typealias OutboundOut = HTTPResponsePart

    package static let responseTime = TimeAmount.seconds(30)
    package static let stallTime = TimeAmount.seconds(20)
    package static let lifetime = TimeAmount.minutes(15)
    /// The kernel's send buffer per connection: left to autotuning, a client that does not read had megabytes
    /// of each answer queued for it in the kernel, and the server spent its time filling them.
    package static let sendBuffer = 128 << 10
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
    /// Writes handed to the socket and not yet taken by it.
    private var unwritten = 0
    private var stall: Scheduled<Void>?
    private var outbox: Outbox?
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
        outbox?.close()
        cancelDeadlines()
        context.fireChannelInactive()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        cancelDeadlines()
    }

    private func cancelDeadlines() {
        responseDeadline?.cancel()
        stall?.cancel()
        end?.cancel()
    }

    private func admit(_ context: ChannelHandlerContext) {
        guard phase == .new else { return }
        guard let outbox = board.admit(context.channel) else {
            refuse(
                context, .serviceUnavailable, "too many connections (\(board.limit)); try again later\n",
                extra: [.retryAfter: "10"])
            return
        }
        phase = .admitted
        self.outbox = outbox
        try? context.channel.syncOptions?.setOption(ChannelOptions.socketOption(.so_sndbuf), value: Self.sendBuffer)
        end = context.eventLoop.assumeIsolated().scheduleTask(in: Self.lifetime) { context.close(promise: nil) }
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard phase == .admitted else { return }  // a refused connection's input is dropped
        if case let .head(request) = unwrapInboundIn(data) {
            let body =
                request.headerFields[.transferEncoding] != nil
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
        let written = promise ?? context.eventLoop.makePromise()
        watchProgress(context, of: written.futureResult)
        switch unwrapOutboundIn(data) {
        case var .head(response):
            Self.secure(&response.headerFields)
            outbox?.began()
            // The handler has answered; from here on only progress counts (an event stream runs as long as the
            // page is open, `lifetime` bounds it).
            responseDeadline?.cancel()
            responseDeadline = nil
            context.write(wrapOutboundOut(.head(response)), promise: written)
        case .end:
            responseDeadline?.cancel()
            responseDeadline = nil
            if running > 0 {
                running -= 1
                board.answered(context.channel)
                if running > 0 { startResponseDeadline(context) }
            }
            context.write(data, promise: written)
        case let .body(bytes):
            // What the answer waits on before writing more.
            if let outbox {
                let answer = outbox.answer
                written.futureResult.assumeIsolated().whenSuccess { outbox.taken(bytes.readableBytes, of: answer) }
            }
            context.write(data, promise: written)
        }
    }

    /// Closes the connection when `stallTime` passes with a write waiting and none taken by the socket.
    private func watchProgress(_ context: ChannelHandlerContext, of write: EventLoopFuture<Void>) {
        unwritten += 1
        if stall == nil { startStall(context) }
        write.assumeIsolated().whenComplete { _ in
            self.unwritten -= 1
            self.stall?.cancel()
            self.stall = nil
            if self.unwritten > 0 && context.channel.isActive { self.startStall(context) }
        }
    }

    private func startStall(_ context: ChannelHandlerContext) {
        stall = context.eventLoop.assumeIsolated().scheduleTask(in: Self.stallTime) { context.close(promise: nil) }
    }

    private func startResponseDeadline(_ context: ChannelHandlerContext) {
        responseDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: Self.responseTime) {
            context.close(promise: nil)
        }
    }

    /// Answers `status` in place of the application, then ends the connection: output closed at once, input
    /// read and dropped for `linger`, then closed.
    private func refuse(
        _ context: ChannelHandlerContext, _ status: HTTPResponse.Status, _ text: String, extra: HTTPFields = [:]
    ) {
        phase = .refused
        board.remove(context.channel)
        cancelDeadlines()
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

/// How much of the current answer's body the connection's socket has taken. Hummingbird's writer does not
/// hold an answer back while the socket is full (its buffer grows as long as the event loop has not yet
/// said so: every answer went out whole into memory, however slowly its client read), so answers wait here
/// until at most `limit` bytes of what they wrote are still short of the socket.
package final class Outbox: Sendable {
    private struct State {
        var answer = 0
        var taken = 0
        var closed = false
        var waiting: [(sent: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    static let limit = 64 << 10
    private let state = Mutex(State())

    /// The answer whose head was written last (bytes of earlier ones taken late are not counted to it).
    var answer: Int { state.withLock { $0.answer } }

    func began() {
        state.withLock { state in
            state.answer += 1
            state.taken = 0
        }
    }

    func taken(_ count: Int, of answer: Int) {
        release { state in
            if state.answer == answer { state.taken += count }
        }
    }

    /// The connection is gone: nothing waits any more (the next write fails).
    func close() {
        release { $0.closed = true }
    }

    /// Returns once the socket has taken all but `limit` of the `sent` bytes of the body, or the connection closed.
    func drained(sent: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                guard !state.closed && sent - state.taken > Self.limit else { return true }
                state.waiting.append((sent, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func release(_ change: (inout State) -> Void) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            change(&state)
            let taken = state.taken
            let closed = state.closed
            let ready = state.waiting.filter { closed || $0.sent - taken <= Self.limit }.map(\.continuation)
            state.waiting.removeAll { closed || $0.sent - taken <= Self.limit }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }
}
