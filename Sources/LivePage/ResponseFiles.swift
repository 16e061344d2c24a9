import Exports
import Glibc
import HummingbirdCore
import NIOCore
import NIOPosix
import Synchronization
import SystemIO

/// Answers are written a chunk at a time, each once the socket has taken enough of the last (`Outbox`): a
/// client that does not read holds a chunk or two, not the answer, and is cut off after
/// `ConnectionGuard.stallTime`.
let responseChunk = 64 << 10

extension ResponseBody {
    /// `bytes` in chunks; the slices share its storage.
    static func chunked(_ bytes: ByteBuffer, through outbox: Outbox) -> ResponseBody {
        ResponseBody(contentLength: bytes.readableBytes) { writer in
            var rest = bytes
            while rest.readableBytes > 0, let chunk = rest.readSlice(length: min(responseChunk, rest.readableBytes)) {
                try await writer.write(chunk)
                await outbox.drained(sent: rest.readerIndex - bytes.readerIndex)
            }
            try await writer.finish(nil)
        }
    }
}

/// A file sent as an answer, read a chunk at a time by every response that sends it; the descriptor is
/// closed when the last one lets go.
final class ResponseFile: Sendable {
    struct ShortRead: Error {}

    let descriptor: Int32
    let size: Int
    private let released: @Sendable (Int) -> Void

    init(descriptor: Int32, size: Int, released: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.descriptor = descriptor
        self.size = size
        self.released = released
    }

    deinit {
        close(descriptor)
        released(size)
    }

    func body(through outbox: Outbox) -> ResponseBody {
        ResponseBody(contentLength: size) { writer in
            var offset = 0
            while offset < self.size {
                let count = min(responseChunk, self.size - offset)
                var chunk = ByteBufferAllocator().buffer(capacity: count)
                chunk.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { target in
                    max(0, pread(self.descriptor, target.baseAddress, count, off_t(offset)))
                }
                // The file ended early (a thumbnail cut short): the connection is closed rather than the length broken.
                guard chunk.readableBytes > 0 else { throw ShortRead() }
                offset += chunk.readableBytes
                try await writer.write(chunk)
                await outbox.drained(sent: offset)
            }
            try await writer.finish(nil)
        }
    }
}

/// The walk's exports, each rendered once per version of the walk (the journal's length and the thumbnails
/// cached) into an unlinked temporary file that every request for that version reads: a crowd of downloads
/// costs one rendering, not one copy per client. Each format is rendered by one request at a time, on a thread
/// of its own, and while the renderings still held (the newest of each format, older ones still being sent)
/// add up to `budget` bytes, no new one is made: the request is answered 503 until clients finish or are cut off.
final class ExportFiles: Sendable {
    private struct Version: Equatable {
        var walk: String
        var length: off_t
        var cached: Int
    }

    private struct Rendered {
        var version: Version
        var file: ResponseFile
        /// Monotonic seconds when it was made.
        var made: Double
    }

    private struct State {
        var newest: [ExportFormat: Rendered] = [:]
        var rendering: Set<ExportFormat> = []
        var held = 0
    }

    private enum Decision {
        case reuse(ResponseFile), overBudget, wait, render
    }

    private let budget = 64 << 20
    /// A walk being recorded grows every second: its rendering is reused this long rather than made again for
    /// each new fix, so that a crowd of downloads costs one rendering per format every few seconds.
    private let freshFor = 10.0
    private let state = Mutex(State())
    /// A thread of its own: the shared pool's threads may all be waiting on something else (signals, gpsd).
    private static let renderThread: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        return pool
    }()

    /// The rendering of `format` for walk `walk` at `length` bytes of journal: this version's, or one of the same
    /// walk made within `freshFor`, or one made now by `render` off the event loop, which hands it to the file a
    /// chunk at a time (one per format at a time: others wait for it, or take the previous one of the walk). nil
    /// when over budget or the temporary file cannot be written.
    func file(
        _ format: ExportFormat, walk: String, length: off_t, cached: Set<String>,
        render: @escaping @Sendable (_ sink: ([UInt8]) throws -> Void) throws -> Void
    ) async -> ResponseFile? {
        let version = Version(walk: walk, length: length, cached: cached.hashValue)
        let deadline = monotonicSeconds() + 30
        while true {
            let now = monotonicSeconds()
            let decision: Decision = state.withLock { state in
                let newest = state.newest[format].flatMap { $0.version.walk == walk ? $0 : nil }
                if let newest, newest.version == version || now - newest.made < freshFor { return .reuse(newest.file) }
                if state.rendering.contains(format) { return newest.map { .reuse($0.file) } ?? .wait }
                // Each format's newest rendering of a long walk is kept: room for them, in proportion to the walk.
                if state.held >= budget + 3 * Int(length) { return .overBudget }
                state.rendering.insert(format)
                return .render
            }
            switch decision {
            case let .reuse(file): return file
            case .overBudget: return nil
            case .wait:
                guard now < deadline else { return nil }
                try? await sleepOnEventLoop(for: .milliseconds(50))
            case .render:
                let file = try? await Self.renderThread.runIfActive { self.store(render) }
                // The one replaced is returned and let go after the lock: its deinit takes the lock too.
                _ = state.withLock { state -> ResponseFile? in
                    state.rendering.remove(format)
                    guard let file else { return nil }
                    defer { state.newest[format] = Rendered(version: version, file: file, made: monotonicSeconds()) }
                    return state.newest[format]?.file
                }
                return file
            }
        }
    }

    /// A new unlinked temporary file (in `TMPDIR`: the unit points it at the disk, not memory) filled by
    /// `render`; nil if it cannot be written, or `render` failed.
    private func store(_ render: (_ sink: ([UInt8]) throws -> Void) throws -> Void) -> ResponseFile? {
        let directory = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array((directory + "/fieldlog-export-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { return nil }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)  // the photo worker, a child, must not inherit it
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        var written = 0
        do {
            try render { bytes in
                if let failure = FileIO.writeAll(bytes, to: descriptor) { throw failure }
                written += bytes.count
            }
        } catch {
            close(descriptor)
            return nil
        }
        let size = written
        state.withLock { $0.held += size }
        return ResponseFile(descriptor: descriptor, size: size) { [weak self] size in
            self?.state.withLock { $0.held -= size }
        }
    }
}
