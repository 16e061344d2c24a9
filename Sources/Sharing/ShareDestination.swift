import Glibc

/// Where a walk is published: an MQTT broker (OwnTracks over MQTT) or an OwnTracks HTTP endpoint (the
/// Recorder's `/pub`, Traccar's OwnTracks port), parsed from `--share URL`.
///
///     mqtt://[USER@]HOST[:PORT][/TOPIC]     mqtts://…  (TLS, verified)
///     https://[USER@]HOST[:PORT]/PATH       http://…   (loopback only)
///
/// A URL never holds a password: it comes from a credential file, and only to a URL that names a user.
package struct ShareDestination: Sendable, Hashable, CustomStringConvertible {
    package enum Kind: String, Sendable, Hashable {
        case mqtt, http
    }

    package var kind: Kind
    package var tls: Bool
    package var host: String
    package var port: Int
    /// The user the URL names (`USER@`): the MQTT login, and who a password goes to.
    package var user: String?
    /// The OwnTracks user of the topic and of the Recorder's `u`: the URL's `u=` (HTTP), else `user`, else
    /// `defaultUser`.
    package var ownTracksUser: String
    /// The OwnTracks device (topic, the Recorder's `d`): the URL's `d=` (HTTP), else `--share-device`.
    package var device: String
    /// MQTT: the base topic (`owntracks/USER/DEVICE` by default). HTTP: the path and query.
    package var topic: String
    package var path: String
    /// The URL as given, without a password (there never is one): it names the destination in the status,
    /// the log and the state file.
    package let url: String

    package static let defaultUser = "fieldlog"

    package init(url: String, device: String) throws(ShareError) {
        self.url = url
        self.device = device
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else {
            throw ShareError("--share \(url): not a URL (mqtt://HOST/TOPIC, mqtts://…, https://HOST/pub)")
        }
        let schemeEnd = colon..<url.index(colon, offsetBy: 3)
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        switch scheme {
        case "mqtt": (kind, tls, port) = (.mqtt, false, 1883)
        case "mqtts": (kind, tls, port) = (.mqtt, true, 8883)
        case "http": (kind, tls, port) = (.http, false, 80)
        case "https": (kind, tls, port) = (.http, true, 443)
        default: throw ShareError("--share \(url): the scheme must be mqtt, mqtts, https or http (loopback only)")
        }
        let rest = url[schemeEnd.upperBound...]
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<slash]
        let pathPart = String(rest[slash...])
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            guard !userInfo.contains(":") else {
                throw ShareError("--share: a password never goes in the URL; put it in --share-password-file")
            }
            user = userInfo.isEmpty ? nil : Self.percentDecoded(userInfo)
            authority = authority[authority.index(after: at)...]
        }
        // [v6::addr]:port or host:port
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                guard let number = Int(after.dropFirst()), (1...65535).contains(number) else {
                    throw ShareError("--share \(url): bad port")
                }
                port = number
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            guard let number = Int(authority[authority.index(after: colon)...]), (1...65535).contains(number) else {
                throw ShareError("--share \(url): bad port")
            }
            port = number
        } else {
            host = String(authority)
        }
        guard !host.isEmpty else { throw ShareError("--share \(url): no host") }
        switch kind {
        case .mqtt:
            let given = pathPart.drop { $0 == "/" }
            ownTracksUser = user ?? Self.defaultUser
            topic = given.isEmpty ? "owntracks/\(ownTracksUser)/\(device)" : String(given)
            guard !topic.contains("+"), !topic.contains("#"), !topic.contains("\0") else {
                throw ShareError("--share \(url): a topic to publish to has no wildcards")
            }
            path = ""
        case .http:
            guard tls || Self.isLoopback(host) else {
                throw ShareError("--share \(url): plain http only on loopback; use https")
            }
            // The Recorder's own form names the user and device in the query (`/pub?u=walker&d=pi`): they are
            // taken from there, not sent twice (the Recorder would take fieldlog's `X-Limit-U`/`-D` headers over
            // them, and store the walk under another user).
            let question = pathPart.firstIndex(of: "?") ?? pathPart.endIndex
            var kept: [Substring] = []
            var queryUser: String?
            for item in pathPart[question...].dropFirst().split(separator: "&") {
                if item.hasPrefix("u=") {
                    queryUser = Self.percentDecoded(item.dropFirst(2))
                } else if item.hasPrefix("d=") {
                    self.device = Self.percentDecoded(item.dropFirst(2))
                } else {
                    kept.append(item)
                }
            }
            if let queryUser, let user, queryUser.lowercased() != user.lowercased() {
                throw ShareError("--share \(url): names two users, \(user)@ and u=\(queryUser)")
            }
            guard queryUser?.isEmpty != true, !self.device.isEmpty else {
                throw ShareError("--share \(url): an empty u= or d=")
            }
            ownTracksUser = queryUser ?? user ?? Self.defaultUser
            let base = pathPart[..<question]
            path = (base.isEmpty ? "/pub" : String(base)) + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
            topic = "owntracks/\(ownTracksUser)/\(self.device)"
        }
    }

    package var description: String { url }

    /// A password goes only where it cannot be read on the way: over TLS, or on loopback. Plain http:// is
    /// refused off loopback whatever the password; plain mqtt:// only with one.
    package func requirePrivateLogin() throws(ShareError) {
        guard tls || Self.isLoopback(host) else {
            throw ShareError(
                "--share \(url): a password goes only over \(kind == .mqtt ? "mqtts" : "https")://, never in clear to another host"
            )
        }
    }

    /// The file name of this destination's durable position in the state directory.
    package var stateFileName: String {
        // FNV-1a of the URL and device: stable across runs and versions, and no path characters.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (url + "\n" + device).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "share-" + String(repeating: "0", count: 16 - hex.count) + hex + ".state"
    }

    package static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host.hasPrefix("127.") || host == "::1"
    }

    private static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%"), iterator.count >= 2,
                let value = UInt8(String(decoding: iterator.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The OwnTracks device name for this machine: its host name, lowercased, as topic-safe characters.
    package static func defaultDevice() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "fieldlog" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return sanitizedDevice(name) ?? "fieldlog"
    }

    /// `name` as a topic level (letters, digits, `-`, `_`, `.`), or nil when nothing is left.
    package static func sanitizedDevice(_ name: String) -> String? {
        let kept = String(
            name.lowercased().unicodeScalars.map { scalar -> Character in
                scalar.isASCII
                    && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                        || "-_.".unicodeScalars.contains(scalar))
                    ? Character(scalar) : "-"
            })
        return kept.isEmpty || kept.count > 64 ? nil : kept
    }
}

/// What went wrong with sharing: said in words, never with a password in them.
package struct ShareError: Error, CustomStringConvertible, Sendable {
    package let message: String

    package init(_ message: String) {
        self.message = message
    }

    package var description: String { message }
}
