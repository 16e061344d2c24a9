import FoundationEssentials
import Glibc
package import Logging
import SystemIO
import WalkModel

/// A swift-log handler for a service run by systemd: each event goes to journald's native socket as one entry
/// whose metadata are fields of their own (`walk` as `WALK`, so that `journalctl -u fieldlog WALK=…` selects
/// a walk's lines), with its priority and without a timestamp (journald adds its own). Where that socket
/// cannot be used, it is one line on stderr, prefixed with its syslog priority as `<N>` (sd-daemon(3)).
///
/// `LoggingSystem.bootstrap(JournaldLogHandler.standardError)` picks it when `$JOURNAL_STREAM` names
/// stderr, and swift-log's plain `StreamLogHandler` otherwise (a terminal, a pipe, a test), which prints the
/// same metadata as `key=value` before the message.
package struct JournaldLogHandler: LogHandler {
    /// journald's socket for its native protocol (systemd-journald.service(8)).
    package static let nativeSocket = "/run/systemd/journal/socket"

    package var logLevel: Logger.Level = .info
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    private let label: String
    /// nil: stderr lines only.
    private let nativeSocket: String?

    package init(
        label: String, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider,
        nativeSocket: String? = JournaldLogHandler.nativeSocket
    ) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.nativeSocket = nativeSocket
    }

    /// The handler `fieldlog` bootstraps: journald's format when stderr is the journal, plain text otherwise.
    package static func standardError(label: String) -> any LogHandler {
        stderrIsJournal ? JournaldLogHandler(label: label) : StreamLogHandler.standardError(label: label)
    }

    /// Whether stderr is the journal stream systemd connected (checked once per process).
    package static let stderrIsJournal: Bool = {
        guard let stderr = FileIO.status(of: 2) else { return false }
        return streamMatches(
            ProcessInfo.processInfo.environment["JOURNAL_STREAM"], device: stderr.device, inode: stderr.inode)
    }()

    /// `$JOURNAL_STREAM` is "DEVICE:INODE" (decimal) of the stream systemd connected; stderr is still the
    /// journal only if it has the same device and inode (a shell redirect, or a child's own pipe, does not).
    package static func streamMatches(_ journalStream: String?, device: UInt64, inode: UInt64) -> Bool {
        guard let journalStream else { return false }
        let parts = journalStream.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let expectedDevice = UInt64(parts[0]), let expectedInode = UInt64(parts[1]) else {
            return false
        }
        return expectedDevice == device && expectedInode == inode
    }

    /// The syslog priority journald reads from a `<N>` prefix.
    package static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// One journal line: `<N>message key=value ...` (plus the logger's label when it is not `fieldlog`),
    /// newline-terminated, with any newline inside turned into a visible `\n` so that one event stays one
    /// journal entry with its priority.
    package static func format(
        level: Logger.Level, label: String = "fieldlog", message: String, metadata: Logger.Metadata = [:]
    ) -> String {
        var line = "<\(priority(level))>"
        if label != "fieldlog" { line += label + ": " }
        line += message
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            line += " \(key)=\(value)"
        }
        return line.replacingScalars("\r", with: "\\r").replacingScalars("\n", with: "\\n") + "\n"
    }

    /// One entry in journald's native protocol: `PRIORITY`, `SYSLOG_IDENTIFIER`, `MESSAGE` (as the stderr line
    /// has it, metadata included, for `journalctl`'s plain output), and each metadata key as a field. A value
    /// with a newline is sent in the protocol's binary form: its length, then its bytes.
    package static func nativeEntry(
        level: Logger.Level, label: String = "fieldlog", message: String, metadata: Logger.Metadata = [:]
    ) -> [UInt8] {
        var entry: [UInt8] = []
        func field(_ name: String, _ value: String) {
            let bytes = Array(value.utf8)
            entry += Array(name.utf8)
            if bytes.contains(UInt8(ascii: "\n")) {
                entry.append(UInt8(ascii: "\n"))
                withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { entry += $0 }
            } else {
                entry.append(UInt8(ascii: "="))
            }
            entry += bytes
            entry.append(UInt8(ascii: "\n"))
        }
        var text = label == "fieldlog" ? message : label + ": " + message
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) { text += " \(key)=\(value)" }
        field("PRIORITY", String(priority(level)))
        field("SYSLOG_IDENTIFIER", "fieldlog")
        field("MESSAGE", text)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            guard let name = fieldName(key) else { continue }
            field(name, "\(value)")
        }
        return entry
    }

    /// A metadata key as a journal field name: upper case letters, digits and `_`, not starting with `_`
    /// (journald's own) or a digit, at most 64 characters; nil for a key that cannot be one, or that would
    /// stand for one of the fields every entry has.
    package static func fieldName(_ key: String) -> String? {
        let name = String(
            String.UnicodeScalarView(
                key.uppercased().unicodeScalars.map {
                    ("A"..."Z").contains($0) || ("0"..."9").contains($0) ? $0 : "_"
                }))
        guard let first = name.unicodeScalars.first, ("A"..."Z").contains(first), name.utf8.count <= 64,
            !["MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER"].contains(name)
        else { return nil }
        return name
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    // swift-log 1.16's entry point (the older log(level:message:...) is deprecated for handlers to implement).
    package func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let explicit = event.metadata { merged.merge(explicit) { _, new in new } }
        if let error = event.error { merged["error"] = "\(error)" }
        let message = event.message.description
        if let nativeSocket,
            SystemdNotifier.sendDatagram(
                Self.nativeEntry(level: event.level, label: label, message: message, metadata: merged), to: nativeSocket
            ) == nil
        {
            return
        }
        let text = Self.format(level: event.level, label: label, message: message, metadata: merged)
        // One write(2) per event, so lines from several tasks never interleave.
        _ = FileIO.writeAll(Array(text.utf8), to: 2)
    }
}
