/// A small JPEG made from a photo, upright and at most `Thumbnailer.size` pixels on its long side.
package struct Thumbnail: Sendable, Equatable {
    /// The thumbnail as a baseline JFIF file, without metadata (the EXIF orientation is already applied).
    package var jpeg: [UInt8]
    /// Size of the thumbnail as it is to be shown.
    package var width: Int
    package var height: Int
    /// Size of the source as stored in its file, before its EXIF orientation: a photo taken upright
    /// with orientation 6 or 8 has width and height swapped relative to the thumbnail's.
    package var sourceWidth: Int
    package var sourceHeight: Int
    /// The source's EXIF orientation (1...8) that was applied; 1 when it had none.
    package var orientation: Int

    package init(jpeg: [UInt8], width: Int, height: Int, sourceWidth: Int, sourceHeight: Int, orientation: Int = 1) {
        self.jpeg = jpeg
        self.width = width
        self.height = height
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.orientation = orientation
    }
}
