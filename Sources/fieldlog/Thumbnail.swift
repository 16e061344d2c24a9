import ArgumentParser
import FieldLogCommands

struct ThumbnailCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbnail",
        abstract: "Make JPEG thumbnails of photos, the way fieldlog makes them for milestones.",
        discussion: """
            Each FILE, a JPEG, becomes DIR/NAME.jpg, NAME being FILE's name without its extension: at \
            most --size pixels on its long side (smaller photos keep their size), turned upright as its \
            EXIF orientation says, JPEG quality 80, without metadata. A thumbnail is written whole or not \
            at all: it goes to a temporary file beside it, which is then renamed over it.

            One line per FILE on standard output:

              ok FILE -> OUTPUT (WxH from WxH)
              error FILE: what is wrong with it

            The second size is the photo's as stored in FILE, before its orientation is applied. Files \
            are refused rather than guessed at when they are not JPEGs, are cut short or damaged, have \
            more than 50 megapixels, or are progressive with more than 100 scans.

            With --timings, standard error also gets a line per FILE that was made into a thumbnail, for \
            benchmarks: "time", then the CPU and the wall-clock milliseconds it took from reading FILE to \
            writing its thumbnail (decoding, resizing and encoding included), then FILE, separated by tabs.

            The exit status is 1 if any FILE failed, 0 otherwise.
            """
    )

    @Option(help: "Long side of the thumbnails, in pixels (1 to 4096).")
    var size: Int = 320

    @Option(
        name: .customLong("out"),
        help: ArgumentHelp("Directory for the thumbnails; created if missing.", valueName: "dir"))
    var directory: String

    @Flag(help: "Print each file's CPU and wall-clock milliseconds on standard error.")
    var timings = false

    @Argument(help: ArgumentHelp("JPEG files.", valueName: "file"))
    var files: [String]

    func validate() throws {
        guard (1...4096).contains(size) else {
            throw ValidationError("--size must be 1 to 4096 pixels, not \(size)")
        }
        guard !files.isEmpty else {
            throw ValidationError("name at least one JPEG file")
        }
    }

    func run() throws {
        try command { () throws(CommandError) in
            try ThumbnailBatch.run(
                files: files, directory: directory, size: size, report: { print($0) },
                timing: timings ? { writeStandardError($0 + "\n") } : nil)
        }
    }
}
