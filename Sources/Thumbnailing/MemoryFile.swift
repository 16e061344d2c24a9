import CSandbox
import Glibc
import SystemIO

/// An anonymous in-memory file (memfd).
package final class MemoryFile {
    package let descriptor: Int32

    package init(name: String) throws(PhotoWorkerError) {
        let fd = csandbox_memfd(name)
        guard fd >= 0 else { throw PhotoWorkerError("cannot create a memory file: \(String(cString: strerror(-fd)))") }
        descriptor = fd
    }

    deinit {
        close(descriptor)
    }

    package func write(_ bytes: [UInt8]) throws(PhotoWorkerError) {
        if let failure = FileIO.writeAll(bytes, to: descriptor) {
            throw PhotoWorkerError("cannot write a memory file: \(failure.reason)")
        }
        lseek(descriptor, 0, SEEK_SET)
    }

    /// The file's bytes from its start, at most `limit`.
    package func read(limit: Int) throws(PhotoWorkerError) -> [UInt8] {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw PhotoWorkerError("cannot read a memory file: \(String(cString: strerror(errno)))")
        }
        let limit = min(limit, Int(status.st_size))
        var bytes = [UInt8](repeating: 0, count: limit)
        var filled = 0
        while filled < limit {
            let got = bytes.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress! + filled, limit - filled, off_t(filled))
            }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { throw PhotoWorkerError("cannot read a memory file: \(String(cString: strerror(errno)))") }
            if got == 0 { break }
            filled += got
        }
        return Array(bytes[0..<filled])
    }
}
