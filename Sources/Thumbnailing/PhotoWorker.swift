package import CSandbox
import FoundationEssentials
import Glibc
import SystemIO

/// The memory, CPU and time one photo may cost. The defaults keep photo work far below the unit's
/// `MemoryMax=256M`: the worker's whole address space (its code, Swift runtime and libjpeg's buffers) is
/// capped at 192 MiB, of which libjpeg may use 96 MiB, next to the recorder's ~25 MB.
package struct PhotoWorkLimits: Sendable {
    package var addressSpace = 192 << 20
    package var decoderMemory = 96 << 20
    package var cpuSeconds = 10
    /// Wall-clock time before the worker is killed (a stalled or starved decode).
    package var wallSeconds = 30.0
    /// Largest thumbnail read back.
    package var maxOutput = 4 << 20

    package init() {}
}

/// Makes each thumbnail in a child process, `EXECUTABLE photo-worker`, whose memory, CPU and file sizes
/// are limited before it reads a byte of the photo: whatever a photo does to libjpeg (a bomb, a crash, an
/// endless file), the worst is that this photo fails. Bytes go in and out through anonymous memory files,
/// so a full or failing disk does not matter, and the child holds no other descriptor of the recorder.
package struct IsolatedThumbnailer: ThumbnailMaker {
    package var executable: String
    package var size: Int
    package var limits: PhotoWorkLimits

    /// `executable` is fieldlog itself (`/proc/self/exe` in the daemon).
    package init(executable: String, size: Int, limits: PhotoWorkLimits = PhotoWorkLimits()) {
        self.executable = executable
        self.size = size
        self.limits = limits
    }

    package func thumbnail(of jpeg: [UInt8]) async throws -> Thumbnail {
        let input = try MemoryFile(name: "photo")
        let output = try MemoryFile(name: "thumbnail")
        let report = try MemoryFile(name: "report")
        try input.write(jpeg)
        let arguments = [
            executable, PhotoWorker.commandName, "--size", "\(size)", "--address-space", "\(limits.addressSpace)",
            "--decoder-memory", "\(limits.decoderMemory)", "--cpu", "\(limits.cpuSeconds)",
        ]
        let pid = try PhotoWorker.spawn(arguments, input: input, output: output, report: report)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(limits.wallSeconds)
        var pause = Duration.milliseconds(5)
        var code: Int32 = 0
        while true {
            let state = csandbox_poll(pid, &code)
            if state == Int32(CSANDBOX_EXITED) { break }
            if state == Int32(CSANDBOX_SIGNALED) {
                throw ThumbnailError(.crashed, "the decoder was killed by signal \(code) (\(Self.signalMeaning(code)))")
            }
            if state < 0 {
                throw PhotoWorkerError("cannot wait for the photo worker: \(String(cString: strerror(-state)))")
            }
            if clock.now >= deadline {
                _ = csandbox_kill(pid)
                // Reap it; SIGKILL cannot be ignored.
                while csandbox_poll(pid, &code) == Int32(CSANDBOX_RUNNING) {
                    try? await sleepOnEventLoop(for: .milliseconds(5))
                }
                throw ThumbnailError(.crashed, "the decoder took longer than \(Int(limits.wallSeconds)) s")
            }
            // Cancellation (shutdown) must not leave the worker behind.
            if Task.isCancelled {
                _ = csandbox_kill(pid)
                while csandbox_poll(pid, &code) == Int32(CSANDBOX_RUNNING) { usleep(1000) }
                throw CancellationError()
            }
            try? await sleepOnEventLoop(for: pause)
            pause = min(pause * 2, .milliseconds(50))
        }
        let text = String(decoding: try report.read(limit: 4096), as: UTF8.self)
        guard code == 0 else {
            let index = Int(code) - PhotoWorker.errorBase
            guard ThumbnailError.Code.all.indices.contains(index) else {
                throw ThumbnailError(.crashed, "the decoder failed (exit status \(code))")
            }
            throw ThumbnailError(ThumbnailError.Code.all[index], text.trimmingSuffixNewlines)
        }
        let numbers = text.split(separator: " ").compactMap { Int($0.trimmingSuffixNewlines) }
        let bytes = try output.read(limit: limits.maxOutput)
        guard numbers.count == 5, !bytes.isEmpty else {
            throw ThumbnailError(.internalError, "the photo worker's answer was not understood")
        }
        return Thumbnail(
            jpeg: bytes, width: numbers[0], height: numbers[1], sourceWidth: numbers[2], sourceHeight: numbers[3],
            orientation: numbers[4])
    }

    private static func signalMeaning(_ signal: Int32) -> String {
        switch signal {
        case SIGKILL: "over its memory limit, or killed"
        case SIGXCPU: "over its CPU limit"
        case SIGXFSZ: "over its output limit"
        case SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE, SIGTRAP: "crashed"
        default: "killed"
        }
    }
}

/// The photo worker could not be run at all (no memory, no processes left): try again later.
package struct PhotoWorkerError: Error, CustomStringConvertible, Sendable {
    package let description: String

    package init(_ description: String) {
        self.description = description
    }
}

/// The child side: `fieldlog photo-worker` reads a JPEG on standard input and writes its thumbnail on
/// standard output, after limiting itself. Standard error gets "WIDTH HEIGHT SOURCEWIDTH SOURCEHEIGHT
/// ORIENTATION", or the error's message with exit status 10 + its code.
package enum PhotoWorker {
    /// Largest image accepted from a source, and read by the worker.
    package static let largestImage = 20 << 20

    package static let commandName = "photo-worker"
    package static let errorBase = 10
    /// Exit status for arguments the worker does not understand (only `fieldlog run` starts it).
    package static let usageStatus: Int32 = 2

    /// `fieldlog photo-worker [--size N] [--address-space BYTES] [--decoder-memory BYTES] [--cpu SECONDS]
    /// [--exif]`, read by hand: the worker starts once per photo, and swift-argument-parser's reflection
    /// over the command's properties cost more CPU than decoding the photo (docs/benchmark-studies.md, section 1).
    package static func main(_ arguments: [String]) -> Int32 {
        let limits = PhotoWorkLimits()
        var size = 320, addressSpace = limits.addressSpace, decoderMemory = limits.decoderMemory
        var cpuSeconds = limits.cpuSeconds, exif = false
        var rest = arguments[...]
        while let name = rest.popFirst() {
            if name == "--exif" {
                exif = true
                continue
            }
            guard ["--size", "--address-space", "--decoder-memory", "--cpu"].contains(name) else {
                report("photo-worker: unknown argument '\(name)'")
                return usageStatus
            }
            guard let text = rest.popFirst(), let value = Int(text), value > 0 else {
                report("photo-worker: \(name) takes a positive number")
                return usageStatus
            }
            switch name {
            case "--size": size = value
            case "--address-space": addressSpace = value
            case "--decoder-memory": decoderMemory = value
            default: cpuSeconds = value
            }
        }
        guard size <= 4096 else {
            report("photo-worker: --size is at most 4096")
            return usageStatus
        }
        if exif { return runExif(addressSpace: addressSpace, cpuSeconds: cpuSeconds) }
        return run(size: size, addressSpace: addressSpace, decoderMemory: decoderMemory, cpuSeconds: cpuSeconds)
    }

    package static func run(size: Int, addressSpace: Int, decoderMemory: Int, cpuSeconds: Int) -> Int32 {
        // Limits first: nothing of the photo is read before they hold.
        let limited = csandbox_limit_self(Int64(addressSpace), Int64(cpuSeconds), Int64(PhotoWorkLimits().maxOutput))
        guard limited == 0 else {
            report("cannot limit the photo worker: \(String(cString: strerror(-limited)))")
            return Int32(errorBase) + Int32(ThumbnailError.Code.all.firstIndex(of: .internalError)!)
        }
        guard let jpeg = readStandardInput(limit: PhotoWorker.largestImage) else {
            report("cannot read the photo")
            return Int32(errorBase) + Int32(ThumbnailError.Code.all.firstIndex(of: .internalError)!)
        }
        let thumbnailer = Thumbnailer(size: size, maxMemory: decoderMemory)
        do {
            let thumbnail = try thumbnailer.thumbnail(of: jpeg)
            if FileIO.writeAll(thumbnail.jpeg, to: STDOUT_FILENO) != nil {
                report("cannot write the thumbnail")
                return Int32(errorBase) + Int32(ThumbnailError.Code.all.firstIndex(of: .internalError)!)
            }
            report(
                "\(thumbnail.width) \(thumbnail.height) \(thumbnail.sourceWidth) \(thumbnail.sourceHeight) \(thumbnail.orientation)"
            )
            return 0
        } catch {
            report(error.message)
            return Int32(errorBase) + Int32(ThumbnailError.Code.all.firstIndex(of: error.code) ?? 0)
        }
    }

    /// `photo-worker --exif`: standard input holds file paths separated by NULs; each file's EXIF goes to
    /// standard output as one JSON line, written before the next file is read, so that the parent knows
    /// which file a dying worker was reading.
    package static func runExif(addressSpace: Int, cpuSeconds: Int) -> Int32 {
        let limited = csandbox_limit_self(Int64(addressSpace), Int64(cpuSeconds), Int64(PhotoWorkLimits().maxOutput))
        guard limited == 0, let input = readStandardInput(limit: 16 << 20) else { return 1 }
        let encoder = JSONEncoder()
        for path in input.split(separator: 0, omittingEmptySubsequences: false) {
            guard var line = try? encoder.encode(ExifRecord.read(String(decoding: path, as: UTF8.self))) else {
                return 1
            }
            line.append(UInt8(ascii: "\n"))
            if FileIO.writeAll(line, to: STDOUT_FILENO) != nil { return 1 }
        }
        return 0
    }

    /// Starts `arguments[0]` with `input`, `output` and `report` as its standard input, output and error.
    package static func spawn(
        _ arguments: [String], input: MemoryFile, output: MemoryFile, report: MemoryFile
    )
        throws(PhotoWorkerError) -> pid_t
    {
        do {
            return try ChildProcess.spawn(
                arguments, input: input.descriptor, output: output.descriptor, error: report.descriptor)
        } catch {
            throw PhotoWorkerError("cannot start the photo worker \(arguments[0]): \(error)")
        }
    }

    private static func report(_ text: String) {
        _ = FileIO.writeAll(Array((text + "\n").utf8), to: STDERR_FILENO)
    }

    private static func readStandardInput(limit: Int) -> [UInt8]? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count <= limit {
            let got = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress!, $0.count) }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { return nil }
            if got == 0 { return bytes }
            bytes += chunk[0..<got]
        }
        return bytes
    }
}

extension StringProtocol {
    fileprivate var trimmingSuffixNewlines: String {
        var text = String(self)
        while text.last?.isNewline == true { text.removeLast() }
        return text
    }
}
