package import FieldLogDaemon
import FoundationEssentials
package import Logging
import Sharing
import WalkJournal

/// `fieldlog share`: a stored walk sent once to each destination of the settings, waiting for their
/// acknowledgements.
package enum WalkSending {
    /// Bounds this process's memory as sharing's own process is bounded: a broker's oversized packet fails here,
    /// not under the OOM killer.
    package static func boundMemory() throws(CommandError) {
        do {
            try ShareProcessMemory.apply()
        } catch {
            throw CommandError("\(error)")
        }
    }

    /// Sends walk `walk` (an id, or latest). `report` gets a line per destination that was tried (what it
    /// acknowledged), `warn` what could not be used; the answer is whether every destination acknowledged every
    /// message.
    package static func send(
        walk: String, stateDirectory: String, settings: ShareSettings, cacheDirectory: String, timeout: Double,
        logger: Logger, report: (String) throws -> Void, warn: (String) -> Void
    ) async throws -> Bool {
        guard !settings.urls.isEmpty else {
            throw CommandError("no destination: give --share URL, or share: in the settings file")
        }
        let store = JournalStore(directory: stateDirectory)
        let id: String
        do {
            id = try store.resolve(walk)
        } catch {
            throw CommandError("\(error)")
        }
        let service = settings.serviceSettings(
            cacheDirectory: cacheDirectory, environment: ProcessInfo.processInfo.environment)
        var complete = true
        for target in service.targets {
            switch target {
            case let .unusable(url, reason):
                complete = false
                warn("\(url): \(reason)")
            case let .ready(destination, password, warning):
                if let warning { warn("\(destination.url): \(warning)") }
                do {
                    let outcome = try await ShareOnce.send(
                        walk: id, to: destination, password: password, settings: service, store: store, logger: logger,
                        timeout: timeout)
                    var line =
                        "walk \(id) to \(destination.url): \(outcome.acknowledged) of \(outcome.sent) messages acknowledged"
                    if outcome.acknowledged < outcome.sent {
                        complete = false
                        line +=
                            " (\(outcome.status.connection.rawValue)\(outcome.status.error.map { ": " + $0 } ?? ""))"
                    }
                    try report(line)
                } catch let error as ShareError {
                    complete = false
                    warn("\(error)")
                }
            }
        }
        return complete
    }
}
