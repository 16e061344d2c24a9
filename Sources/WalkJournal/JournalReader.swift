package import Glibc
import SystemIO
package import WalkModel

/// Reads a journal's lines a chunk at a time, so that what reading holds is one chunk and one line whatever
/// the journal's size (a two-day walk at 10 Hz journals some 300 MB). Only a regular file is read, opened
/// without following a link or waiting on a FIFO. Failures to open or read throw `FileIOError`.
package struct JournalReader {
    /// The longest line read; a longer one (no record comes near it) is skipped as damaged, unread.
    package static let maxLineBytes = 1 << 20
    private static let chunkBytes = 1 << 20

    package let directory: String
    package let name: String

    package init(directory: String, name: String) {
        self.directory = directory
        self.name = name
    }

    /// `path` split into its directory and name.
    package init(path: String) {
        let slash = path.lastIndex(of: "/")
        directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        name = slash.map { String(path[path.index(after: $0)...]) } ?? path
    }

    /// What one pass read.
    package struct Pass {
        /// Offset just after the last complete line handed out: where the next pass starts.
        package var end: off_t
        /// Lines handed out, the damaged ones included (each line's number is `first + its position`).
        package var lines: Int
        /// Bytes of an unfinished last line (the writer may be appending it), not handed out.
        package var unfinished: Int
    }

    /// Calls `body` with each line from `offset` up to `limit` (or the file's end), at most `maxLines` of
    /// them, without its newline; an oversized line comes as nil. A last line without a newline is handed
    /// out only with `lastLineToo` (a recorder that died mid-line left it: it is read as damaged or, if
    /// whole, as what it says).
    @discardableResult
    package func forEachLine(
        from offset: off_t = 0, limit: off_t? = nil, maxLines: Int = .max, lastLineToo: Bool = false,
        _ body: (UnsafeBufferPointer<UInt8>?) throws -> Void
    ) throws -> Pass {
        let (descriptor, size) = try FileIO.openRegular(name, in: directory, maxBytes: .max)
        defer { close(descriptor) }
        // As large as what is there to read (a follower's look reads a few lines), grown if the file grows.
        let largest = Self.chunkBytes + Self.maxLineBytes
        var buffer = UnsafeMutableBufferPointer<UInt8>.allocate(
            capacity: min(largest, max(0, Int(limit.map { min($0, off_t(size)) } ?? off_t(size)) - Int(offset)) + 4096))
        defer { buffer.deallocate() }
        var pass = Pass(end: offset, lines: 0, unfinished: 0)
        // Bytes of the line begun in the previous chunk, moved to the buffer's start.
        var carried = 0
        var skippingLongLine = false
        var position = offset
        while limit.map({ position < $0 }) ?? true {
            if buffer.count - carried < min(Self.chunkBytes, 1 << 16) && buffer.count < largest {
                let grown = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: min(largest, 2 * buffer.count))
                grown.baseAddress!.update(from: buffer.baseAddress!, count: carried)
                buffer.deallocate()
                buffer = grown
            }
            let wanted = min(
                Self.chunkBytes, buffer.count - carried, Int(limit.map { $0 - position } ?? off_t(Self.chunkBytes)))
            let count = pread(descriptor, buffer.baseAddress! + carried, wanted, position)
            if count < 0 {
                if errno == EINTR { continue }
                throw FileIOError(.read, path: directory + "/" + name, number: errno)
            }
            if count == 0 { break }
            position += off_t(count)
            let filled = carried + count
            var start = 0
            while let newline = memchr(buffer.baseAddress! + start, Int32(UInt8(ascii: "\n")), filled - start) {
                let end = UnsafeMutablePointer<UInt8>(newline.assumingMemoryBound(to: UInt8.self)) - buffer.baseAddress!
                if skippingLongLine || end - start > Self.maxLineBytes {
                    skippingLongLine = false
                    try body(nil)
                } else {
                    try body(UnsafeBufferPointer(rebasing: buffer[start..<end]))
                }
                pass.lines += 1
                pass.end = position - off_t(filled - end - 1)
                start = end + 1
                if pass.lines == maxLines { return pass }
            }
            carried = filled - start
            if carried > Self.maxLineBytes {
                skippingLongLine = true
                carried = 0
            } else if carried > 0 && start > 0 {
                memmove(buffer.baseAddress!, buffer.baseAddress! + start, carried)
            }
        }
        pass.unfinished = Int(position - pass.end)
        if lastLineToo && pass.unfinished > 0 {
            try body(skippingLongLine ? nil : UnsafeBufferPointer(rebasing: buffer[0..<carried]))
            pass.lines += 1
        }
        return pass
    }

    /// Up to `count` bytes from `offset` (fewer at the file's end).
    package func bytes(from offset: off_t, count: Int) throws -> [UInt8] {
        let descriptor = try FileIO.openRegular(name, in: directory, maxBytes: .max).descriptor
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress! + filled, count - filled, offset + off_t(filled))
            }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { throw FileIOError(.read, path: directory + "/" + name, number: errno) }
            if got == 0 { break }
            filled += got
        }
        return Array(bytes[..<filled])
    }

    /// Calls `body` with each record from `offset` (and the line's 1-based number counted from there; nil
    /// for a line that could not be read).
    @discardableResult
    package func forEachRecord(
        from offset: off_t = 0, limit: off_t? = nil, lastLineToo: Bool = false,
        _ body: (JournalRecord?, _ line: Int) throws -> Void
    ) throws -> Pass {
        var number = 0
        return try forEachLine(from: offset, limit: limit, lastLineToo: lastLineToo) { line in
            number += 1
            // An empty line is no record and no damage.
            if let line, line.isEmpty { return }
            try body(line.flatMap(JournalCodec.decode), number)
        }
    }
}
