import ArgumentParser
import FieldLog

/// `fieldlog photo-worker`: the child process `fieldlog run` makes each thumbnail in (not for people).
struct PhotoWorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: PhotoWorker.commandName,
        abstract: "Make one thumbnail from standard input under resource limits (used by fieldlog run).",
        shouldDisplay: false
    )

    @Option var size: Int = 320
    @Option var addressSpace: Int = PhotoWorkLimits().addressSpace
    @Option var decoderMemory: Int = PhotoWorkLimits().decoderMemory
    @Option var cpu: Int = PhotoWorkLimits().cpuSeconds
    /// Read the EXIF of the files named on standard input instead.
    @Flag var exif = false

    func validate() throws {
        guard (1...4096).contains(size), addressSpace > 0, decoderMemory > 0, cpu > 0 else {
            throw ValidationError("photo-worker: size 1 to 4096 and positive limits")
        }
    }

    func run() throws {
        if exif { throw ExitCode(PhotoWorker.runExif(addressSpace: addressSpace, cpuSeconds: cpu)) }
        throw ExitCode(PhotoWorker.run(size: size, addressSpace: addressSpace, decoderMemory: decoderMemory, cpuSeconds: cpu))
    }
}
