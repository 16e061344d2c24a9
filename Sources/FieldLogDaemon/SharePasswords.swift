package import Sharing
import SystemIO

/// The passwords of the `--share` destinations, each meant for one destination only. Two places hold them:
///
/// - the credentials file (`--share-credentials`, or the systemd credential share-credentials): a line per
///   destination, its URL exactly as given to `--share`, one or more spaces or tabs, and its password (the rest
///   of the line); blank lines and lines starting with `#` are skipped;
/// - the password file (`--share-password-file`, or the credential share-password): its first line is the
///   password of the one destination whose URL names a user and has no line in the credentials file.
///
/// A destination whose URL names no user gets no password. A file that cannot be used (missing, not a regular
/// file, a link, larger than `maxBytes`, malformed) makes the destinations that would take a password from it
/// unusable, with the reason; the others go on. A file every user may read is used, with a warning.
package struct SharePasswords {
    /// A password file holds a line or a few: anything larger is not one.
    package static let maxBytes = 4 << 10

    /// nil: no credentials file set up.
    private var keyed: Result<[String: String], ShareError>?
    /// nil: no password file set up; `.success(nil)`: an empty one.
    private var single: Result<String?, ShareError>?
    private var keyedWarning: String?
    private var singleWarning: String?

    package static let credentialsName = "share-credentials"
    package static let passwordName = "share-password"

    package init(credentialsFile: String?, passwordFile: String?, environment: [String: String]) {
        if let path = Credential.path(file: credentialsFile, name: Self.credentialsName, environment: environment) {
            switch Self.read(path, what: "share credentials file") {
            case let .success((text, warning)):
                keyed = Result { () throws(ShareError) in try Self.parseCredentials(text, path: path) }
                keyedWarning = warning
            case let .failure(error):
                keyed = .failure(error)
            }
        }
        if let path = Credential.path(file: passwordFile, name: Self.passwordName, environment: environment) {
            switch Self.read(path, what: "share password file") {
            case let .success((text, warning)):
                // The first line; an empty file is none (the units' default credential is empty).
                let line = text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }).first.map(
                    String.init)
                single = .success(line)
                singleWarning = warning
            case let .failure(error):
                single = .failure(error)
            }
        }
    }

    /// Each destination with the password meant for it, or unusable with the reason.
    package func targets(_ destinations: [ShareDestination]) -> [ShareTarget] {
        let keyedURLs = (try? keyed?.get()).map { Set($0.keys) } ?? []
        let withoutLine = destinations.filter { $0.user != nil && !keyedURLs.contains($0.url) }.count
        return destinations.map { target(for: $0, namingAUserWithoutLine: withoutLine) }
    }

    private func target(for destination: ShareDestination, namingAUserWithoutLine: Int) -> ShareTarget {
        guard destination.user != nil else {
            let listed = (try? keyed?.get())?[destination.url] != nil
            return .ready(
                destination, password: nil,
                warning: listed ? "its URL names no user, so its password in the credentials file is not sent" : nil)
        }
        var password: String?
        var warning: String?
        do throws(ShareError) {
            if let keyed {
                password = try keyed.get()[destination.url]
                warning = password == nil ? nil : keyedWarning
            }
            if password == nil, let single, let only = try single.get() {
                guard namingAUserWithoutLine == 1 else {
                    throw ShareError(
                        "the share password file holds one password, and \(namingAUserWithoutLine) destinations name a user: "
                            + "give each its own in the share credentials file")
                }
                password = only
                warning = singleWarning
            }
            if password != nil { try destination.requirePrivateLogin() }
        } catch {
            return .unusable(url: destination.url, reason: error.message)
        }
        return .ready(destination, password: password, warning: warning)
    }

    /// The file's text, with a warning when every user may read it; or why it cannot be used (the path is told,
    /// never the contents).
    private static func read(_ path: String, what: String) -> Result<(String, String?), ShareError> {
        do {
            let (bytes, readableByAll) = try FileIO.readSecret(path, maxBytes: maxBytes)
            return .success(
                (
                    String(decoding: bytes, as: UTF8.self),
                    readableByAll ? "the \(what) \(path) is readable by every user of this device (chmod 600 it)" : nil
                ))
        } catch {
            return .failure(ShareError("cannot read the \(what) \(path): \(error.reason)"))
        }
    }

    /// `URL PASSWORD` lines by URL. A fault names its line, never what the line holds.
    package static func parseCredentials(_ text: String, path: String) throws(ShareError) -> [String: String] {
        var passwords: [String: String] = [:]
        // "\r\n" is one Character in Swift.
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        for (index, line) in lines.enumerated() {
            guard !line.allSatisfy({ $0 == " " || $0 == "\t" }), !line.hasPrefix("#") else { continue }
            guard let gap = line.firstIndex(where: { $0 == " " || $0 == "\t" }),
                case let password = line[gap...].drop(while: { $0 == " " || $0 == "\t" }), !password.isEmpty,
                line[..<gap].contains("://")
            else {
                throw ShareError(
                    "the share credentials file \(path), line \(index + 1): not a URL, a space and a password")
            }
            let url = String(line[..<gap])
            guard passwords.updateValue(String(password), forKey: url) == nil else {
                throw ShareError("the share credentials file \(path), line \(index + 1): a second password for \(url)")
            }
        }
        return passwords
    }
}
