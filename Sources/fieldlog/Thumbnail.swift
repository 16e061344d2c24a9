import ArgumentParser
import FoundationEssentials
import Glibc
import SystemIO
import Thumbnailing

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

    /// Larger files are refused before they are read: no photo fieldlog handles comes close.
    static let maxFileSize = 256 << 20

    func validate() throws {
        guard (1...4096).contains(size) else {
            throw ValidationError("--size must be 1 to 4096 pixels, not \(size)")
        }
        guard !files.isEmpty else {
            throw ValidationError("name at least one JPEG file")
        }
    }

    func run() throws {
        do {
            try FileIO.makeDirectories(directory)
        } catch {
            throw CleanExit.failure("fieldlog: cannot create \(error.path): \(error.reason)")
        }
        // A batch that ends with the process: decoder memory is kept from one file to the next.
        Thumbnailer.reuseMemoryForBatches()
        var thumbnailer = Thumbnailer(size: size)
        thumbnailer.keepsMemory = true
        var sources: [String: String] = [:]  // output path -> the FILE it is the thumbnail of
        var failures = 0
        for file in files {
            let output = outputPath(for: file)
            do {
                if let other = sources[output] {
                    throw Failure("\(output) is already the thumbnail of \(other)")
                }
                sources[output] = file
                let start = timings ? Self.clocks() : (cpu: 0, wall: 0)
                let thumbnail = try make(file, output: output, with: thumbnailer)
                if timings {
                    let end = Self.clocks()
                    writeStandardError(
                        "time\t\(Self.threeDecimals(end.cpu - start.cpu))\t\(Self.threeDecimals(end.wall - start.wall))\t\(file)\n"
                    )
                }
                print(
                    "ok \(file) -> \(output) (\(thumbnail.width)x\(thumbnail.height) from "
                        + "\(thumbnail.sourceWidth)x\(thumbnail.sourceHeight))")
            } catch {
                failures += 1
                print("error \(file): \(error)")
            }
        }
        if failures > 0 {
            let noun = files.count == 1 ? "file" : "files"
            throw CleanExit.failure("fieldlog: \(failures) of \(files.count) \(noun) failed")
        }
    }

    /// A duration in milliseconds with three decimals: "2.215".
    private static func threeDecimals(_ milliseconds: Double) -> String {
        let thousandths = Int((max(0, milliseconds) * 1000).rounded())
        let fraction = String(thousandths % 1000)
        return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    /// The process's CPU time and the monotonic clock, in milliseconds.
    private static func clocks() -> (cpu: Double, wall: Double) {
        func milliseconds(_ clock: clockid_t) -> Double {
            var now = timespec()
            clock_gettime(clock, &now)
            return Double(now.tv_sec) * 1e3 + Double(now.tv_nsec) / 1e6
        }
        return (milliseconds(CLOCK_PROCESS_CPUTIME_ID), milliseconds(CLOCK_MONOTONIC))
    }

    private func outputPath(for file: String) -> String {
        // The file's name without its directory and extension: "a/IMG_1.JPG" -> "IMG_1", ".hidden" stays.
        var name = file.split(separator: "/").last ?? ""
        if let dot = name.lastIndex(of: "."), dot != name.startIndex { name = name[..<dot] }
        var directory = directory
        while directory.count > 1 && directory.hasSuffix("/") { directory.removeLast() }
        return (directory == "/" ? "" : directory) + "/" + name + ".jpg"
    }

    private func make(_ file: String, output: String, with thumbnailer: Thumbnailer) throws -> Thumbnail {
        let (bytes, identity) = try Self.readFile(file)
        if let existing = FileIO.status(atPath: output), existing.isSameFile(as: identity) {
            throw Failure("its thumbnail would replace it: choose another --out directory")
        }
        let thumbnail = try thumbnailer.thumbnail(of: bytes)
        try FileIO.replace(output, with: thumbnail.jpeg, durable: false)
        return thumbnail
    }

    /// The whole file, and its device and inode, with errors as short as strerror's.
    private static func readFile(_ path: String) throws -> ([UInt8], FileStatus) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(String(cString: strerror(errno))) }
        defer { close(descriptor) }
        guard let info = FileIO.status(of: descriptor) else { throw Failure(String(cString: strerror(errno))) }
        guard info.isRegular else { throw Failure("not a regular file") }
        guard info.size <= maxFileSize else {
            throw Failure("\(info.size / (1 << 20)) MiB is too large for a photo (at most \(maxFileSize >> 20) MiB)")
        }
        // Read straight into the array's storage: no zero-filling of up to maxFileSize bytes first.
        let bytes = try [UInt8](unsafeUninitializedCapacity: Int(info.size)) { buffer, initialized in
            guard let start = buffer.baseAddress else { return }
            while initialized < buffer.count {
                let count = read(descriptor, start + initialized, buffer.count - initialized)
                if count < 0 {
                    if errno == EINTR { continue }
                    throw Failure(String(cString: strerror(errno)))
                }
                if count == 0 { break }  // shrank while we read: what we have is the file now
                initialized += count
            }
        }
        return (bytes, info)
    }

    private struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
