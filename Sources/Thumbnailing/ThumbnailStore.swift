/// Where thumbnails go: the bounded on-device cache.
package protocol ThumbnailStore: Sendable {
    func store(key: String, bytes: [UInt8]) async throws
}

extension ThumbnailCache: ThumbnailStore {}
