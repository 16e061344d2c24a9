import CJPEG

/// Makes JPEG thumbnails with libjpeg, safely enough for files from strangers.
///
/// The photo is decoded at the smallest DCT scale (1/8, 2/8, 4/8 or 8/8) that is still at least twice the
/// thumbnail's size, area-averaged down to `size` pixels on its long side (never up: smaller images keep
/// their size), turned upright by its EXIF orientation and encoded at `quality`. Baseline files stream:
/// memory does not grow with the image. Progressive files need libjpeg's whole-image coefficient buffer
/// (about 3 bytes a pixel at 4:2:0, 6 at 4:4:4), hence the limits; at 1/8 and 2/8 only their first
/// scans are decoded, as far as the coefficients that scale needs (to within their last bit or two).
///
/// Errors instead of guesses: a file that is truncated or has damaged data is rejected (`.truncated`,
/// `.corrupt`) rather than turned into a partly grey thumbnail. Limits are checked before the work they
/// guard: `maxPixels` right after the header, `maxScans` while scans are read, `maxMemory` before
/// libjpeg allocates its buffers. Grayscale photos give grayscale thumbnails; CMYK/YCCK photos are
/// converted to RGB without a colour profile (approximate colours).
///
/// A value type without shared state: one thumbnailer may be used from many tasks at once.
package struct Thumbnailer: Sendable {
    /// Long side of the thumbnail, in pixels.
    package var size: Int
    /// libjpeg's quality scale, 1...100.
    package var quality: Int
    /// Sources with more pixels (width x height, from the header) are rejected as `.tooLarge`.
    package var maxPixels: Int
    /// Progressive sources with more scans are rejected as `.tooManyScans` (encoders write about 10).
    package var maxScans: Int
    /// Memory libjpeg may use for one decode; beyond it the source is `.tooLarge`.
    package var maxMemory: Int
    /// Read progressive files only as far as the decode scale needs (tests turn it off to compare).
    package var readsOnlyNeededScans = true
    /// Keep the memory of large progressive decodes for the next thumbnail instead of giving it back to
    /// the system; for batches, together with `reuseMemoryForBatches()`. A long-running process that must
    /// stay small between thumbnails leaves it off.
    package var keepsMemory = false

    package static let defaultMaxScans = 100
    package static let defaultMaxMemory = 512 << 20

    /// - Precondition: `size` in 1...65535, `quality` in 1...100, the limits positive.
    package init(
        size: Int = 320, quality: Int = 80, maxPixels: Int = 50_000_000, maxScans: Int = Thumbnailer.defaultMaxScans,
        maxMemory: Int = Thumbnailer.defaultMaxMemory
    ) {
        precondition((1...65535).contains(size), "thumbnail size must be 1...65535 pixels")
        precondition((1...100).contains(quality), "JPEG quality must be 1...100")
        precondition(maxPixels > 0 && maxScans > 0 && maxMemory > 0, "thumbnail limits must be positive")
        self.size = size
        self.quality = quality
        self.maxPixels = maxPixels
        self.maxScans = maxScans
        self.maxMemory = maxMemory
    }

    /// A thumbnail of the JPEG file `jpeg`.
    package func thumbnail(of jpeg: [UInt8]) throws(ThumbnailError) -> Thumbnail {
        var options = cjpeg_options(
            size: Int32(size), quality: Int32(quality), max_pixels: Int64(maxPixels), max_scans: Int32(maxScans),
            max_memory: Int64(maxMemory), dc_only: readsOnlyNeededScans, keep_memory: keepsMemory)
        var result = cjpeg_result()
        let code = jpeg.withUnsafeBufferPointer { bytes in
            cjpeg_thumbnail(bytes.baseAddress, bytes.count, &options, &result)
        }
        defer { cjpeg_result_free(&result) }
        let message = withUnsafeBytes(of: result.message) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        guard code == Int32(CJPEG_OK), let start = result.jpeg else {
            throw ThumbnailError(Self.errorCode(code), message)
        }
        return Thumbnail(
            jpeg: Array(UnsafeBufferPointer(start: start, count: result.jpeg_size)),
            width: Int(result.width), height: Int(result.height),
            sourceWidth: Int(result.source_width), sourceHeight: Int(result.source_height),
            orientation: Int(result.orientation))
    }

    /// Has the allocator keep large freed blocks for reuse, process-wide and for good: for commands that
    /// make many thumbnails and exit (page faults for fresh memory were a third of their CPU time on
    /// progressive photos). Not for the daemon, whose memory must go back after each thumbnail.
    package static func reuseMemoryForBatches() {
        cjpeg_reuse_memory()
    }

    private static func errorCode(_ code: Int32) -> ThumbnailError.Code {
        switch Int(code) {
        case Int(CJPEG_EMPTY): .empty
        case Int(CJPEG_NOT_JPEG): .notJPEG
        case Int(CJPEG_TRUNCATED): .truncated
        case Int(CJPEG_CORRUPT): .corrupt
        case Int(CJPEG_TOO_LARGE): .tooLarge
        case Int(CJPEG_TOO_MANY_SCANS): .tooManyScans
        case Int(CJPEG_UNSUPPORTED): .unsupported
        case Int(CJPEG_OUT_OF_MEMORY): .outOfMemory
        default: .internalError
        }
    }
}
