import Foundation
import NIOCore
import NIOPosix

/// An MQTT 3.1.1 broker that attacks its clients: it accepts CONNECT with a CONNACK, acknowledges the client's
/// QoS 1 PUBLISHes (PUBACK) and PINGREQs so that it looks like a broker, and then, by `attack`, sends what no
/// client asked for (fieldlog subscribes to nothing). It sends only as fast as the client reads, so the test's
/// own memory stays small.
package final class HostileMQTTBroker: Sendable {
    package enum Attack: Sendable {
        /// A PUBLISH announcing the largest remaining length MQTT allows (268,435,455 bytes), then `body` bytes
        /// of it, as fast as the client takes them, then nothing: the packet never ends.
        case hugePacket(body: Int)
        /// QoS 2 PUBLISHes of `payload` bytes, each with a packet id of its own, without end; never a PUBREL.
        case qos2Flood(payload: Int)
    }

    package static let largestRemainingLength = 268_435_455

    private let channel: any Channel
    private let counters: Counters
    package let port: Int

    private final class Counters: @unchecked Sendable {
        let lock = NSLock()
        var connections = 0
        var attackBytes = 0
        var clientPublishes = 0
        var children: [any Channel] = []
    }

    /// TCP connections accepted so far.
    package var connections: Int { counters.lock.withLock { counters.connections } }
    /// Bytes of attack sent so far, on all connections.
    package var attackBytes: Int { counters.lock.withLock { counters.attackBytes } }
    /// PUBLISHes the clients sent (and this broker acknowledged).
    package var clientPublishes: Int { counters.lock.withLock { counters.clientPublishes } }

    /// Starts listening on 127.0.0.1:`port` (0: any free port).
    package static func start(port: Int = 0, attack: Attack) async throws -> HostileMQTTBroker {
        let counters = Counters()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                counters.lock.withLock {
                    counters.connections += 1
                    counters.children.append(channel)
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Handler(attack: attack, counters: counters))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        return HostileMQTTBroker(channel: channel, counters: counters)
    }

    private init(channel: any Channel, counters: Counters) {
        self.channel = channel
        self.counters = counters
        port = channel.localAddress?.port ?? 0
    }

    /// Stops listening and drops every connection.
    package func stop() async {
        try? await channel.close()
        for child in counters.lock.withLock({ counters.children }) {
            try? await child.close()
        }
    }

    /// One client: parses its packets, answers them, and attacks once it is connected.
    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let attack: Attack
        let counters: Counters
        var received = ByteBuffer()
        var attacking = false
        /// hugePacket: body bytes still to send; qos2Flood: the packets sent so far.
        var sent = 0

        init(attack: Attack, counters: Counters) {
            self.attack = attack
            self.counters = counters
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            received.writeBuffer(&bytes)
            while let (type, flags, body) = nextPacket() {
                switch type {
                case 1:  // CONNECT
                    context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: [0x20, 0x02, 0x00, 0x00])), promise: nil)
                    attacking = true
                case 3:  // PUBLISH: acknowledged at QoS 1 (packet id after the topic)
                    counters.lock.withLock { counters.clientPublishes += 1 }
                    var body = body
                    if (flags >> 1) & 3 == 1, let topicLength = body.readInteger(as: UInt16.self),
                        body.readSlice(length: Int(topicLength)) != nil, let id = body.readInteger(as: UInt16.self)
                    {
                        var puback = ByteBuffer(bytes: [0x40, 0x02])
                        puback.writeInteger(id)
                        context.writeAndFlush(wrapOutboundOut(puback), promise: nil)
                    }
                case 12:  // PINGREQ
                    context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: [0xD0, 0x00])), promise: nil)
                case 14:  // DISCONNECT
                    context.close(promise: nil)
                default:  // PUBREC for the flood, and anything else: no answer
                    break
                }
            }
            pump(context: context)
        }

        func channelWritabilityChanged(context: ChannelHandlerContext) {
            pump(context: context)
            context.fireChannelWritabilityChanged()
        }

        /// The next whole packet received: type, flags and body.
        private func nextPacket() -> (UInt8, UInt8, ByteBuffer)? {
            var view = received
            guard let first = view.readInteger(as: UInt8.self) else { return nil }
            var length = 0
            var multiplier = 1
            while true {
                guard let byte = view.readInteger(as: UInt8.self) else { return nil }
                length += Int(byte & 127) * multiplier
                multiplier *= 128
                if byte & 128 == 0 { break }
            }
            guard let body = view.readSlice(length: length) else { return nil }
            received = view
            received.discardReadBytes()
            return (first >> 4, first & 15, body)
        }

        /// Sends attack while the client reads: a full socket buffer stops it until the channel is writable again.
        private func pump(context: ChannelHandlerContext) {
            guard attacking else { return }
            var wrote = 0
            while context.channel.isWritable, let chunk = nextChunk() {
                wrote += chunk.readableBytes
                context.write(wrapOutboundOut(chunk), promise: nil)
            }
            if wrote > 0 {
                context.flush()
                counters.lock.withLock { counters.attackBytes += wrote }
            }
        }

        private func nextChunk() -> ByteBuffer? {
            switch attack {
            case let .hugePacket(body):
                if sent == 0 {
                    sent = 1
                    // PUBLISH, QoS 0, remaining length 268,435,455: 0xFF 0xFF 0xFF 0x7F.
                    return ByteBuffer(bytes: [0x30, 0xFF, 0xFF, 0xFF, 0x7F])
                }
                let remaining = body - (sent - 1)
                guard remaining > 0 else { return nil }
                let count = min(remaining, 64 << 10)
                sent += count
                return ByteBuffer(repeating: 0x61, count: count)
            case let .qos2Flood(payload):
                sent += 1
                let topic = Array("owntracks/hostile/flood".utf8)
                let length = 2 + topic.count + 2 + payload
                var packet = ByteBuffer()
                packet.writeInteger(UInt8(0x34))  // PUBLISH, QoS 2
                var rest = length
                repeat {
                    let byte = UInt8(rest % 128)
                    rest /= 128
                    packet.writeInteger(rest > 0 ? byte | 128 : byte)
                } while rest > 0
                packet.writeInteger(UInt16(topic.count))
                packet.writeBytes(topic)
                packet.writeInteger(UInt16((sent - 1) % 65535 + 1))
                packet.writeRepeatingByte(0x62, count: payload)
                return packet
            }
        }
    }
}
