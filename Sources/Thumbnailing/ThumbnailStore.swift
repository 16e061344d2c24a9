/// Where thumbnails go: the bounded on-device cache.
public protocol ThumbnailStore: Sendable {
    func store(key: String, bytes: [UInt8]) async throws
}

extension ThumbnailCache: ThumbnailStore {}
