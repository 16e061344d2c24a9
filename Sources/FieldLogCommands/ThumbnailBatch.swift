import Glibc
import SystemIO
import Thumbnailing

/// `fieldlog thumbnail`: photos made into thumbnails the way fieldlog makes them for milestones, one after another
/// in this process.
package enum ThumbnailBatch {
    /// Larger files are refused before they are read: no photo fieldlog handles comes close.
    package static let maxFileSize = 256 << 20

    /// Makes DIRECTORY/NAME.jpg of each file; `report` gets a line per file (`ok …` or `error …`), `timing`, when
    /// given, a line of CPU and wall-clock milliseconds per thumbnail made. Throws when the directory cannot be
    /// made or any file failed.
    package static func run(
        files: [String], directory: String, size: Int, report: (String) -> Void, timing: ((String) -> Void)?
    ) throws(CommandError) {
        do {
            try FileIO.makeDirectories(directory)
        } catch {
            throw CommandError("cannot create \(error.path): \(error.reason)")
        }
        // A batch that ends with the process: decoder memory is kept from one file to the next.
        Thumbnailer.reuseMemoryForBatches()
        var thumbnailer = Thumbnailer(size: size)
        thumbnailer.keepsMemory = true
        var sources: [String: String] = [:]  // output path -> the FILE it is the thumbnail of
        var failures = 0
        for file in files {
            let output = outputPath(for: file, in: directory)
            do {
                if let other = sources[output] {
                    throw Failure("\(output) is already the thumbnail of \(other)")
                }
                sources[output] = file
                let start = timing != nil ? clocks() : (cpu: 0, wall: 0)
                let thumbnail = try make(file, output: output, with: thumbnailer)
                if let timing {
                    let end = clocks()
                    timing(
                        "time\t\(threeDecimals(end.cpu - start.cpu))\t\(threeDecimals(end.wall - start.wall))\t\(file)")
                }
                report(
                    "ok \(file) -> \(output) (\(thumbnail.width)x\(thumbnail.height) from "
                        + "\(thumbnail.sourceWidth)x\(thumbnail.sourceHeight))")
            } catch {
                failures += 1
                report("error \(file): \(error)")
            }
        }
        if failures > 0 {
            let noun = files.count == 1 ? "file" : "files"
            throw CommandError("\(failures) of \(files.count) \(noun) failed")
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

    private static func outputPath(for file: String, in directory: String) -> String {
        // The file's name without its directory and extension: "a/IMG_1.JPG" -> "IMG_1", ".hidden" stays.
        var name = file.split(separator: "/").last ?? ""
        if let dot = name.lastIndex(of: "."), dot != name.startIndex { name = name[..<dot] }
        var directory = directory
        while directory.count > 1 && directory.hasSuffix("/") { directory.removeLast() }
        return (directory == "/" ? "" : directory) + "/" + name + ".jpg"
    }

    private static func make(_ file: String, output: String, with thumbnailer: Thumbnailer) throws -> Thumbnail {
        let (bytes, identity) = try readFile(file)
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
