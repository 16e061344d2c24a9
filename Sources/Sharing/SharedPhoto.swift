import Thumbnailing

/// The image a photo message carries: a rendition of the cached thumbnail made for sharing, 192 px on its long
/// side (the size OwnTracks gives a POI image), so that the whole location stays well under the 32 KiB lines the
/// OwnTracks Recorder reads its `.rec` files in: a longer line is stored and acknowledged, and never served.
///
/// Made here, in the sharing process, from the thumbnail the photo worker wrote (320 px at most): a decode of
/// at most `maxPixels`, through the C shim that owns libjpeg's errors, in a process with a bounded heap.
package enum SharedPhoto {
    package static let size = 192
    /// JPEG bytes at most: base64 makes them about 22 KB, in a Recorder line of about 23 KB with the rest.
    package static let maxBytes = 16 << 10
    /// A cached thumbnail is 320 px on its long side; anything much larger is not one.
    static let maxPixels = 1 << 20
    /// Tried in turn until the rendition fits (most photos fit at the first).
    static let qualities = [80, 60, 40]

    package enum Rendition: Equatable {
        case image([UInt8])
        /// Still over `maxBytes` at the lowest quality: this many bytes.
        case tooLarge(Int)
        case unreadable(String)
    }

    package static func make(from thumbnail: [UInt8]) -> Rendition {
        var smallest = Int.max
        for quality in qualities {
            let maker = Thumbnailer(size: size, quality: quality, maxPixels: maxPixels, maxMemory: 32 << 20)
            do {
                let rendition = try maker.thumbnail(of: thumbnail).jpeg
                if rendition.count <= maxBytes { return .image(rendition) }
                smallest = min(smallest, rendition.count)
            } catch {
                return .unreadable("\(error)")
            }
        }
        return .tooLarge(smallest)
    }
}
