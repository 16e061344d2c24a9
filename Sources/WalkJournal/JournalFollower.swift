package import Glibc
import SystemIO

/// Reads a growing journal from where it last stopped, handing out complete lines only (the writer may be
/// in the middle of appending one), a bounded chunk at a time.
package final class JournalFollower {
    package let path: String
    /// Bytes of the file read so far: complete lines only.
    package private(set) var offset: off_t
    /// The last call stopped at its bound with more of the file left to read.
    package private(set) var hasMore = false
    private static let chunkBytes: off_t = 1 << 20

    package init(path: String, from offset: off_t = 0) {
        self.path = path
        self.offset = offset
    }

    /// The complete lines appended since the last call, about 1 MiB of them at most (`hasMore` tells
    /// whether there are more). Only from a regular file, opened without following a link or waiting on a
    /// FIFO; anything else gives no lines (and is told of once). A line too long to be a record is left out.
    package func newLines() -> [Substring] {
        let reader = JournalReader(path: path)
        var lines: [Substring] = []
        func keep(_ line: UnsafeBufferPointer<UInt8>?) {
            lines.append(line.map { Substring(decoding: $0, as: UTF8.self) } ?? "")
        }
        let start = offset
        do {
            var pass = try reader.forEachLine(from: offset, limit: offset + Self.chunkBytes, keep)
            if pass.lines == 0 && pass.unfinished >= JournalReader.maxLineBytes {
                // A line longer than the bound: read on to its end, as the damaged line it is.
                pass = try reader.forEachLine(from: offset, maxLines: 1, keep)
            }
            offset = pass.end
            hasMore = pass.end + off_t(pass.unfinished) >= start + Self.chunkBytes
        } catch let error as FileIOError {
            RefusedFiles.report(error)
            hasMore = false
        } catch {
            hasMore = false
        }
        return lines.filter { !$0.isEmpty }
    }
}
