/// HOST:PORT or [IPv6]:PORT, for gpsd and for the live page.
package struct HostAndPort: Sendable, Equatable, CustomStringConvertible {
    package var host: String
    package var port: String

    package init(host: String, port: String) {
        self.host = host
        self.port = port
    }

    /// nil unless `text` is HOST:PORT or [V6ADDR]:PORT with a port from 1 to 65535.
    package init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        let port = String(text[text.index(after: colon)...])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let number = UInt16(port), number > 0 else { return nil }
        self.host = host
        self.port = port
    }

    package var portNumber: Int { Int(port) ?? 0 }

    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
