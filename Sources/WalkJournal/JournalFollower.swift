import Glibc
import SystemIO

/// Reads a growing journal from where it last stopped, handing out complete lines only: the writer may
/// be in the middle of appending one.
public final class JournalFollower {
    public let path: String
    /// Bytes of the file read so far.
    public private(set) var offset: off_t
    private var partial: [UInt8] = []

    public init(path: String, from offset: off_t = 0) {
        self.path = path
        self.offset = offset
    }

    /// The complete lines appended since the last call. Only from a regular file of at most
    /// `JournalStore.maxJournalBytes`, opened without following a link or waiting on a FIFO; anything else
    /// gives no lines (and is told of once).
    public func newLines() -> [Substring] {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let fd: Int32
        do {
            fd = try FileIO.openRegular(name, in: directory, maxBytes: JournalStore.maxJournalBytes).descriptor
        } catch {
            RefusedFiles.report(error)
            return []
        }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 65536)
        var bytes = partial
        while offset < JournalStore.maxJournalBytes {
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, offset) }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
            offset += off_t(count)
        }
        guard let lastNewline = bytes.lastIndex(of: UInt8(ascii: "\n")) else {
            partial = bytes
            return []
        }
        partial = Array(bytes[(lastNewline + 1)...])
        return bytes[..<lastNewline].split(separator: UInt8(ascii: "\n"))
            .map { Substring(decoding: $0, as: UTF8.self) }
    }
}
