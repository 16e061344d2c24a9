import ArgumentParser
import Exports
import FoundationEssentials
import Glibc
import SystemIO
import Thumbnailing
import WalkJournal

struct Export: ParsableCommand, ConfiguredCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a recorded walk as JSON, GPX, GeoJSON or an HTML page.",
        discussion: """
            Reads one walk's journal from --state-dir (the latest walk unless --walk names one) and \
            writes it to OUTPUT in the format OUTPUT's extension names:

              .json     journal.json: the walk, its track points and its milestones
              .gpx      GPX 1.1: milestones as waypoints, a track segment per segment
              .geojson  GeoJSON (RFC 7946): the track as lines, milestones as points
              .html     one page that needs nothing else: the photos newest first (or a grid) with \
            their attribution and thumbnails inline from --cache-dir, the track as SVG

            --format overrides the extension. An OUTPUT of - writes to standard output and needs \
            --format. A file is written whole or not at all: the export goes to a temporary file \
            beside OUTPUT, which is then renamed over it.

            A walk still being recorded can be exported; it ends, so far, at its last fix. Damaged \
            journal lines are skipped and listed on standard error.
            """
    )

    static let configKeys: Set<String> = ["state-dir", "cache-dir"]

    @OptionGroup var configOption: ConfigOption

    @OptionGroup var stateDirectory: StateDirectoryOption

    @Option(help: "The walk to export: an id from `fieldlog walks`, or latest.")
    var walk: String = "latest"

    @Option(help: "Output format, instead of the one OUTPUT's extension names.")
    var format: ExportFormat?

    @Option(help: "Thumbnail cache, to mark which milestone photos are still cached.")
    var cacheDir: String = "/var/cache/fieldlog"

    @Argument(help: "File to write, or - for standard output.")
    var output: String

    func run() throws {
        let format = try outputFormat()
        let store = JournalStore(directory: stateDirectory.path)
        let log: WalkLog
        do {
            log = try store.read(store.resolve(walk))
        } catch {
            throw CleanExit.failure("fieldlog: \(error)")
        }
        if log.damagedLineCount > 0 {
            let count = log.damagedLineCount
            var lines = log.damagedLines.map(String.init).joined(separator: ", ")
            if count > log.damagedLines.count { lines += " and \(count - log.damagedLines.count) more" }
            let noun = count == 1 ? "line" : "lines"
            let message = "fieldlog: skipped \(count) damaged \(noun) in walk \(log.id): \(lines)\n"
            writeStandardError(message)
        }
        // One listing of the cache, not a stat per milestone: a day's walk has a thousand of them.
        let thumbnails = ThumbnailFiles(directory: cacheDir)
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
                throw CleanExit.failure("fieldlog: cannot write to standard output: \(failure.reason)")
            } catch {
                throw CleanExit.failure("fieldlog: \(error)")
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
                throw CleanExit.failure("fieldlog: \(output) is \(kind); an export is written only as a regular file")
            }
            do {
                try FileIO.replace(output, durable: true) { write in try export(to: write) }
            } catch {
                throw CleanExit.failure("fieldlog: \(error)")
            }
        }
    }

    private func outputFormat() throws -> ExportFormat {
        if let format { return format }
        guard output != "-" else {
            throw CleanExit.failure(
                "fieldlog: writing to standard output (-) needs --format json, gpx, geojson or html")
        }
        guard let format = ExportFormat(path: output) else {
            throw CleanExit.failure(
                "fieldlog: cannot tell the format of \(output) from its extension: "
                    + "name it .json, .gpx, .geojson or .html, or pass --format")
        }
        return format
    }
}

extension ExportFormat: ExpressibleByArgument {}
