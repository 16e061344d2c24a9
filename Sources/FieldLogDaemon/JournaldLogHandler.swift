import WalkModel
import Glibc
import FoundationEssentials
import Logging
import SystemIO

/// A swift-log handler for a service whose stderr is connected to journald: one line per event, prefixed
/// with its syslog priority as `<N>` (sd-daemon(3)), without a timestamp (journald adds its own).
///
/// `LoggingSystem.bootstrap(JournaldLogHandler.standardError)` picks it when `$JOURNAL_STREAM` names
/// stderr, and swift-log's plain `StreamLogHandler` otherwise (a terminal, a pipe, a test).
public struct JournaldLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String

    public init(label: String, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    /// The handler `fieldlog` bootstraps: journald's format when stderr is the journal, plain text otherwise.
    public static func standardError(label: String) -> any LogHandler {
        stderrIsJournal ? JournaldLogHandler(label: label) : StreamLogHandler.standardError(label: label)
    }

    /// Whether stderr is the journal stream systemd connected (checked once per process).
    public static let stderrIsJournal: Bool = {
        var status = stat()
        guard fstat(2, &status) == 0 else { return false }
        return streamMatches(
            ProcessInfo.processInfo.environment["JOURNAL_STREAM"], device: UInt64(status.st_dev),
            inode: UInt64(status.st_ino))
    }()

    /// `$JOURNAL_STREAM` is "DEVICE:INODE" (decimal) of the stream systemd connected; stderr is still the
    /// journal only if it has the same device and inode (a shell redirect, or a child's own pipe, does not).
    public static func streamMatches(_ journalStream: String?, device: UInt64, inode: UInt64) -> Bool {
        guard let journalStream else { return false }
        let parts = journalStream.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let expectedDevice = UInt64(parts[0]), let expectedInode = UInt64(parts[1]) else {
            return false
        }
        return expectedDevice == device && expectedInode == inode
    }

    /// The syslog priority journald reads from a `<N>` prefix.
    public static func priority(_ level: Logger.Level) -> Int {
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
    public static func format(
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

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    // swift-log 1.16's entry point (the older log(level:message:...) is deprecated for handlers to implement).
    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let explicit = event.metadata { merged.merge(explicit) { _, new in new } }
        if let error = event.error { merged["error"] = "\(error)" }
        let text = Self.format(level: event.level, label: label, message: event.message.description, metadata: merged)
        // One write(2) per event, so lines from several tasks never interleave.
        _ = FileIO.writeAll(Array(text.utf8), to: 2)
    }
}
