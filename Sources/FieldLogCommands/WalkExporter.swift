import ArgumentParser
package import Exports
import Glibc
import SystemIO
import Thumbnailing
import WalkJournal

/// An export's format, as `--format` names it.
package typealias OutputFormat = ExportFormat

extension ExportFormat: ExpressibleByArgument {}

/// `fieldlog export`: one walk written as JSON, GPX, GeoJSON or an HTML page, to a file or standard output.
package enum WalkExporter {
    /// Writes walk `walk` (an id, or latest) to `output` (`-`: standard output) as `format`, or as the format
    /// `output`'s extension names. Damaged journal lines are skipped and told to `warn`.
    package static func export(
        walk: String, stateDirectory: String, cacheDirectory: String, format: ExportFormat?, output: String,
        warn: (String) -> Void
    ) throws(CommandError) {
        let format = try outputFormat(format, output: output)
        let store = JournalStore(directory: stateDirectory)
        let log: WalkLog
        do {
            log = try store.read(store.resolve(walk))
        } catch {
            throw CommandError("\(error)")
        }
        if log.damagedLineCount > 0 {
            let count = log.damagedLineCount
            var lines = log.damagedLines.map(String.init).joined(separator: ", ")
            if count > log.damagedLines.count { lines += " and \(count - log.damagedLines.count) more" }
            let noun = count == 1 ? "line" : "lines"
            warn("skipped \(count) damaged \(noun) in walk \(log.id): \(lines)")
        }
        // One listing of the cache, not a stat per milestone: a day's walk has a thousand of them.
        let thumbnails = ThumbnailFiles(directory: cacheDirectory)
        let cached = thumbnails.listing()
        // Written as it is made, a chunk at a time: a two-day walk exports to hundreds of MB.
        func export(to sink: ([UInt8]) throws -> Void) throws {
            try WalkExport.write(
                log, as: format, isCached: { cached.contains($0) }, thumbnail: thumbnails.read, to: sink)
        }
        if output == "-" {
            do {
                try export { bytes in
                    if let failure = FileIO.writeAll(bytes, to: STDOUT_FILENO) { throw failure }
                }
            } catch let failure as FileIOError where failure.path.hasPrefix("/dev/fd/") {
                throw CommandError("cannot write to standard output: \(failure.reason)")
            } catch {
                throw CommandError("\(error)")
            }
        } else {
            // Written whole or not at all, and synced: an export is what the walker takes home. Renaming over
            // a device, a FIFO or a directory would replace it with a file (as root, /dev/full became one).
            var existing = stat()
            if stat(output, &existing) == 0, existing.st_mode & S_IFMT != S_IFREG {
                let kind =
                    switch existing.st_mode & S_IFMT {
                    case S_IFDIR: "a directory"
                    case S_IFIFO: "a FIFO"
                    case S_IFCHR, S_IFBLK: "a device"
                    default: "not a regular file"
                    }
                throw CommandError("\(output) is \(kind); an export is written only as a regular file")
            }
            do {
                try FileIO.replace(output, durable: true) { write in try export(to: write) }
            } catch {
                throw CommandError("\(error)")
            }
        }
    }

    private static func outputFormat(_ format: ExportFormat?, output: String) throws(CommandError) -> ExportFormat {
        if let format { return format }
        guard output != "-" else {
            throw CommandError("writing to standard output (-) needs --format json, gpx, geojson or html")
        }
        guard let format = ExportFormat(path: output) else {
            throw CommandError(
                "cannot tell the format of \(output) from its extension: "
                    + "name it .json, .gpx, .geojson or .html, or pass --format")
        }
        return format
    }
}
