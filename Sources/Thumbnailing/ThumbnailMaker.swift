/// What makes thumbnails for the photo service: in this process (`Thumbnailer`), or in a limited child
/// process (`IsolatedThumbnailer`). A `ThumbnailError` rejects the photo; any other error is transient.
package protocol ThumbnailMaker: Sendable {
    func thumbnail(of jpeg: [UInt8]) async throws -> Thumbnail
}

extension Thumbnailer: ThumbnailMaker {}
