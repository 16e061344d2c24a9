import Foundation
package import NIOCore
import NIOPosix

/// A gpsd on loopback that speaks as much of gpsd's JSON protocol as libgps 3.22 and fieldlog use: VERSION
/// when a client connects, DEVICES and WATCH in answer to `?WATCH`, then the TPV reports the test scripted,
/// one every `interval`; `?VERSION` (fieldlog's probe of a quiet gpsd) is answered too. Unlike gpsfake it
/// sends whatever a test needs a receiver to say: times in 2100, speeds of 1e308, lines of any length.
package final class FakeGPSD: @unchecked Sendable {
    /// What one connection is sent after its WATCH.
    package struct Script: Sendable {
        package var lines: [String]
        package var interval: TimeAmount = .milliseconds(20)
        /// Close the connection after the last line (gpsd going away; ends `fieldlog run --once`).
        package var closeAtEnd = true

        package init(lines: [String], interval: TimeAmount = .milliseconds(20), closeAtEnd: Bool = true) {
            self.lines = lines
            self.interval = interval
            self.closeAtEnd = closeAtEnd
        }
    }

    package static let version = #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"#
    package static let devices =
        #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/ttyACM0","driver":"u-blox","activated":"2026-05-18T08:59:00.000Z","flags":1,"native":1,"bps":9600,"parity":"N","stopbits":1,"cycle":1.00}]}"#
    package static let watch =
        #"{"class":"WATCH","enable":true,"json":true,"nmea":false,"raw":0,"scaled":false,"timing":false,"split24":false,"pps":false}"#

    /// A TPV report as gpsd 3.22 writes it; nil fields are left out, as gpsd leaves out what it does not know.
    /// `speed` is written as given (`"1e308"`, `"1e999"`): JSON numbers that no Double formatting produces.
    package static func tpv(
        time: String?, lat: Double, lon: Double, eph: Double? = 5, speed: String? = "1.4", track: Double? = 90,
        mode: Int = 3, device: String = "/dev/ttyACM0"
    ) -> String {
        var fields = [#""class":"TPV""#, #""device":"\#(device)""#, #""mode":\#(mode)"#]
        if let time { fields.append(#""time":"\#(time)""#) }
        fields.append(#""lat":\#(lat)"#)
        fields.append(#""lon":\#(lon)"#)
        fields.append(#""altHAE":42.0"#)
        if let track { fields.append(#""track":\#(track)"#) }
        if let speed { fields.append(#""speed":\#(speed)"#) }
        if let eph { fields.append(#""eph":\#(eph)"#) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    private let lock = NSLock()
    private var count = 0
    private var channel: (any Channel)?
    package private(set) var port: UInt16 = 0

    /// Connections that sent `?WATCH` (fieldlog's reachability check connects and closes first).
    package var connections: Int { lock.withLock { count } }
    package var address: String { "127.0.0.1:\(port)" }

    /// `script` gets the watching connection's number (from 1).
    package static func start(script: @escaping @Sendable (Int) -> Script) async throws -> FakeGPSD {
        let server = FakeGPSD()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.addHandler(
                    Session {
                        script(
                            server.lock.withLock {
                                server.count += 1
                                return server.count
                            })
                    })
            }
            .bind(host: "127.0.0.1", port: 0).get()
        server.port = UInt16(channel.localAddress?.port ?? 0)
        server.lock.withLock { server.channel = channel }
        return server
    }

    package func stop() async {
        try? await lock.withLock { channel }?.close()
    }

    /// One client: commands in (lines ending in `;` or a newline), gpsd's answers and the script out.
    private final class Session: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        private let watched: @Sendable () -> Script
        private var script: Script?
        private var pending = ""

        init(watched: @escaping @Sendable () -> Script) {
            self.watched = watched
        }

        func channelActive(context: ChannelHandlerContext) {
            send(FakeGPSD.version, on: context.channel)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            pending += buffer.readString(length: buffer.readableBytes) ?? ""
            while let end = pending.firstIndex(where: { $0 == ";" || $0 == "\n" }) {
                let command = pending[..<end].trimmingCharacters(in: .whitespacesAndNewlines)
                pending = String(pending[pending.index(after: end)...])
                if command.hasPrefix("?WATCH") && script == nil {
                    script = watched()
                    send(FakeGPSD.devices, on: context.channel)
                    send(FakeGPSD.watch, on: context.channel)
                    stream(from: 0, on: context.channel)
                } else if command.hasPrefix("?VERSION") {
                    send(FakeGPSD.version, on: context.channel)
                }
            }
        }

        private func stream(from index: Int, on channel: any Channel) {
            guard let script else { return }
            guard index < script.lines.count else {
                if script.closeAtEnd { channel.close(promise: nil) }
                return
            }
            send(script.lines[index], on: channel)
            channel.eventLoop.scheduleTask(in: script.interval) { [self] in
                stream(from: index + 1, on: channel)
            }
        }

        private func send(_ line: String, on channel: any Channel) {
            channel.writeAndFlush(ByteBuffer(string: line + "\r\n"), promise: nil)
        }
    }
}
