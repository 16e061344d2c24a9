import Foundation
import Sharing
import Testing
import Thumbnailing
import WalkModel

/// The image shared with a photo: a 192 px rendition of the cached thumbnail, small enough that the OwnTracks
/// Recorder serves the location (it reads `.rec` files in 32 KiB lines; a longer line is stored and never served).
struct SharedPhotoTests {
    static let photos = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/photos")

    /// The line the Recorder writes for a location: its time, the topic padded to a column, and the payload.
    static func recorderLine(_ payload: [UInt8]) -> Int {
        "2026-05-18T09:47:47Z\t*                 \t".utf8.count + payload.count + 1
    }

    @Test(arguments: ["p05_left01_gray", "p09_ela_original", "p13_aloeL", "p27_life_orient6"])
    func everyRealPhotoIsSharedWithAnImageInALineWellUnder32KiB(_ name: String) throws {
        let original = try [UInt8](Data(contentsOf: Self.photos.appendingPathComponent(name + ".jpg")))
        // What the photo worker caches: the 320 px thumbnail (p13's is 24,874 bytes, a 33,498-byte line as is).
        let cached = try Thumbnailer(size: 320).thumbnail(of: original).jpeg
        guard case let .image(rendition) = SharedPhoto.make(from: cached) else {
            Issue.record("\(name): no rendition")
            return
        }
        let shown = try Thumbnailer(size: 1024).thumbnail(of: rendition)
        #expect(max(shown.width, shown.height) == SharedPhoto.size && rendition.count <= SharedPhoto.maxBytes)
        let payload = Self.photoMessage(rendition)
        let line = Self.recorderLine(payload)
        print(
            "\(name): cached thumbnail \(cached.count) bytes, shared rendition \(rendition.count) bytes, Recorder line \(line) bytes"
        )
        #expect(line < 24 << 10, "\(name): a line of \(line) bytes")
    }

    /// The whole photo corpus (`/work/shared/photos/build-corpus.sh` builds it; not in the repository):
    /// `FIELDLOG_PHOTO_CORPUS=DIR/corpus swift test --filter SharedPhotoTests` prints each line and the largest.
    @Test(
        .enabled(if: ProcessInfo.processInfo.environment["FIELDLOG_PHOTO_CORPUS"] != nil, "set FIELDLOG_PHOTO_CORPUS"))
    func theWholeCorpusIsSharedInLinesWellUnder32KiB() throws {
        let directory = try #require(ProcessInfo.processInfo.environment["FIELDLOG_PHOTO_CORPUS"])
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".jpg") }
            .sorted()
        #expect(!names.isEmpty)
        var largest = (line: 0, name: "")
        for name in names {
            let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
            guard let cached = try? Thumbnailer(size: 320).thumbnail(of: original).jpeg else { continue }
            guard case let .image(rendition) = SharedPhoto.make(from: cached) else {
                Issue.record("\(name): no rendition")
                continue
            }
            let line = Self.recorderLine(Self.photoMessage(rendition))
            print(
                "\(name): cached thumbnail \(cached.count) bytes, shared rendition \(rendition.count) bytes, Recorder line \(line) bytes"
            )
            if line > largest.line { largest = (line, name) }
        }
        print("the largest Recorder line over \(names.count) photos: \(largest.line) bytes (\(largest.name))")
        #expect(largest.line < 24 << 10)
    }

    static func photoMessage(_ rendition: [UInt8]) -> [UInt8] {
        let milestone = Milestone(index: 3, time: 1_779_097_667, latitude: 52.85, longitude: 13.8, distance: 300)
        let candidate = PhotoCandidate(
            id: "1", title: "A photo", ownerName: "Ann Example", ownerID: "a", license: "CC BY-SA 4.0", pageURL: nil,
            latitude: 52.85, longitude: 13.8, imageURL: "https://example.org/1.jpg")
        return OwnTracksMessage.encode(
            .photo(milestone, candidate, cacheKey: "k"),
            options: .init(tid: "tw", topic: "owntracks/walker/pi", walk: "w"),
            thumbnail: rendition)
    }

    @Test func whatIsNoThumbnailIsSharedWithoutAnImage() throws {
        guard case .unreadable = SharedPhoto.make(from: Array("not a JPEG".utf8)) else {
            Issue.record("garbage made a rendition")
            return
        }
        // Larger than any thumbnail the cache holds: refused before it is decoded.
        let large = try [UInt8](Data(contentsOf: Self.photos.appendingPathComponent("p27_life_orient6.jpg")))
        let header = try Thumbnailer(size: 8).thumbnail(of: large)
        #expect(header.sourceWidth * header.sourceHeight > 1 << 20)
        guard case .unreadable = SharedPhoto.make(from: large) else {
            Issue.record("a \(header.sourceWidth)x\(header.sourceHeight) photo was taken for a thumbnail")
            return
        }
    }
}
