import ArgumentParser
import FieldLogCommands

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
    var format: OutputFormat?

    @Option(help: "Thumbnail cache, to mark which milestone photos are still cached.")
    var cacheDir: String = "/var/cache/fieldlog"

    @Argument(help: "File to write, or - for standard output.")
    var output: String

    func run() throws {
        try command { () throws(CommandError) in
            try WalkExporter.export(
                walk: walk, stateDirectory: stateDirectory.path, cacheDirectory: cacheDir, format: format,
                output: output, warn: { writeStandardError("fieldlog: \($0)\n") })
        }
    }
}
