import FieldLogTestSupport
import Foundation
import Testing
import Thumbnailing

// Thumbnails of real photos and of files built to hurt (Tests/Fixtures/photos, see the README there).
// Pixel comparisons decode with djpeg (apt: libjpeg-turbo-progs) and compare against an exact area
// average computed here from djpeg's full-size decode.

// MARK: - Fixtures and helpers

private func photo(_ name: String) throws -> [UInt8] {
    let path = Harness.fixtures + "/photos/" + name + ".jpg"
    return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
}

/// A photo and its facts as the corpus tables give them (size as stored, EXIF orientation).
struct FixturePhoto: Sendable, CustomTestStringConvertible {
    var name: String
    var width: Int
    var height: Int
    var orientation = 1
    var grayscale = false

    var testDescription: String { name }

    /// Width and height as the photo is to be shown.
    var upright: (width: Int, height: Int) { orientation >= 5 ? (height, width) : (width, height) }
}

private let photos = [
    FixturePhoto(name: "p05_left01_gray", width: 640, height: 480, grayscale: true),  // baseline, grayscale
    FixturePhoto(name: "p09_ela_original", width: 902, height: 770),  // progressive 4:4:4
    FixturePhoto(name: "p13_aloeL", width: 1282, height: 1110),  // baseline 4:2:0
    FixturePhoto(name: "p27_life_orient6", width: 3088, height: 2056, orientation: 6),  // progressive 4:2:2
    FixturePhoto(name: "a12_small_orient6", width: 128, height: 128, orientation: 6),  // smaller than 320
    FixturePhoto(name: "a14_arith_photo", width: 640, height: 427),  // arithmetic coding
]

private let djpegAvailable = FileManager.default.isExecutableFile(atPath: "/usr/bin/djpeg")

/// Samples as doubles, row by row, `channels` per pixel.
struct Raster {
    var width: Int
    var height: Int
    var channels: Int
    var samples: [Double]

    subscript(x: Int, y: Int, c: Int) -> Double { samples[(y * width + x) * channels + c] }
}

/// Decodes a JPEG at full size with djpeg (PGM for grayscale, PPM otherwise).
private func decode(_ jpeg: [UInt8]) async throws -> Raster {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try Data(jpeg).write(to: URL(fileURLWithPath: directory + "/in.jpg"))
    let outcome = try await Child(
        "/usr/bin/djpeg", ["-pnm", "-outfile", directory + "/out.pnm", directory + "/in.jpg"], in: directory
    ).wait(timeout: 60)
    try #require(outcome.status == 0, "djpeg failed: \(outcome.stderr)")
    let pnm = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/out.pnm")))
    return try #require(parsePNM(pnm))
}

private func parsePNM(_ bytes: [UInt8]) -> Raster? {
    var fields: [String] = []
    var index = 0
    while fields.count < 4 && index < bytes.count {
        while index < bytes.count && [0x20, 0x0a, 0x0d, 0x09].contains(bytes[index]) { index += 1 }
        let start = index
        while index < bytes.count && ![0x20, 0x0a, 0x0d, 0x09].contains(bytes[index]) { index += 1 }
        fields.append(String(decoding: bytes[start..<index], as: UTF8.self))
    }
    index += 1  // the single whitespace before the samples
    guard fields.count == 4, let width = Int(fields[1]), let height = Int(fields[2]), fields[3] == "255" else {
        return nil
    }
    let channels = fields[0] == "P6" ? 3 : 1
    guard bytes.count >= index + width * height * channels else { return nil }
    return Raster(
        width: width, height: height, channels: channels,
        samples: bytes[index..<(index + width * height * channels)].map(Double.init))
}

/// Coverage of each source sample by each output sample, for an exact area average along one axis.
private func coverage(from source: Int, to target: Int) -> [(first: Int, weights: [Double])] {
    let scale = Double(source) / Double(target)
    return (0..<target).map { output in
        let left = Double(output) * scale
        let right = Double(output + 1) * scale
        let first = Int(left.rounded(.down))
        let last = min(source - 1, Int(right.rounded(.up)) - 1)
        let weights = (first...last).map { (min(Double($0 + 1), right) - max(Double($0), left)) / scale }
        return (first, weights)
    }
}

/// The exact area average (box filter with fractional coverage) of `image` at `width` x `height`.
private func areaAverage(_ image: Raster, width: Int, height: Int) -> Raster {
    let channels = image.channels
    let columns = coverage(from: image.width, to: width)
    let rows = coverage(from: image.height, to: height)
    var narrow = [Double](repeating: 0, count: width * image.height * channels)
    image.samples.withUnsafeBufferPointer { source in
        narrow.withUnsafeMutableBufferPointer { narrow in
            for y in 0..<image.height {
                for (x, column) in columns.enumerated() {
                    for c in 0..<channels {
                        var sum = 0.0
                        for (i, weight) in column.weights.enumerated() {
                            sum += weight * source[(y * image.width + column.first + i) * channels + c]
                        }
                        narrow[(y * width + x) * channels + c] = sum
                    }
                }
            }
        }
    }
    var result = [Double](repeating: 0, count: width * height * channels)
    for (y, row) in rows.enumerated() {
        for (i, weight) in row.weights.enumerated() {
            let from = (row.first + i) * width * channels
            let to = y * width * channels
            for k in 0..<(width * channels) {
                result[to + k] += weight * narrow[from + k]
            }
        }
    }
    return Raster(width: width, height: height, channels: channels, samples: result)
}

/// The pixel moves an EXIF orientation asks for, built from flips and a transpose (EXIF 2.32, 4.6.4).
private func upright(_ image: Raster, orientation: Int) -> Raster {
    func remap(_ image: Raster, width: Int, height: Int, _ source: (Int, Int) -> (Int, Int)) -> Raster {
        var samples = [Double](repeating: 0, count: image.samples.count)
        for y in 0..<height {
            for x in 0..<width {
                let (sx, sy) = source(x, y)
                for c in 0..<image.channels {
                    samples[(y * width + x) * image.channels + c] = image[sx, sy, c]
                }
            }
        }
        return Raster(width: width, height: height, channels: image.channels, samples: samples)
    }
    func flipH(_ i: Raster) -> Raster { remap(i, width: i.width, height: i.height) { (i.width - 1 - $0, $1) } }
    func flipV(_ i: Raster) -> Raster { remap(i, width: i.width, height: i.height) { ($0, i.height - 1 - $1) } }
    func transpose(_ i: Raster) -> Raster { remap(i, width: i.height, height: i.width) { ($1, $0) } }
    switch orientation {
    case 2: return flipH(image)
    case 3: return flipV(flipH(image))
    case 4: return flipV(image)
    case 5: return transpose(image)
    case 6: return flipH(transpose(image))  // 90° clockwise
    case 7: return flipV(flipH(transpose(image)))
    case 8: return flipV(transpose(image))  // 90° counter-clockwise
    default: return image
    }
}

private func psnr(_ a: Raster, _ b: Raster) throws -> Double {
    try #require(a.width == b.width && a.height == b.height && a.channels == b.channels)
    var squares = 0.0
    for (x, y) in zip(a.samples, b.samples) {
        let difference = x.rounded() - y.rounded()
        squares += difference * difference
    }
    let mean = squares / Double(a.samples.count)
    return mean == 0 ? .infinity : 10 * log10(255 * 255 / mean)
}

/// An APP1 Exif segment holding `tiff`, inserted right after SOI.
private func withExif(_ jpeg: [UInt8], tiff: [UInt8]) -> [UInt8] {
    let length = 2 + 6 + tiff.count
    let segment: [UInt8] = [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + Array("Exif\0\0".utf8) + tiff
    return Array(jpeg[0..<2]) + segment + Array(jpeg[2...])
}

/// A TIFF header and an IFD0 holding only Orientation (SHORT), in either byte order.
private func orientationTIFF(_ value: UInt16, bigEndian: Bool) -> [UInt8] {
    func u16(_ v: UInt16) -> [UInt8] {
        bigEndian ? [UInt8(v >> 8), UInt8(v & 0xFF)] : [UInt8(v & 0xFF), UInt8(v >> 8)]
    }
    func u32(_ v: UInt32) -> [UInt8] {
        bigEndian ? u16(UInt16(v >> 16)) + u16(UInt16(v & 0xFFFF)) : u16(UInt16(v & 0xFFFF)) + u16(UInt16(v >> 16))
    }
    let order: [UInt8] = bigEndian ? Array("MM".utf8) : Array("II".utf8)
    return order + u16(42) + u32(8) + u16(1) + u16(0x0112) + u16(3) + u32(1) + u16(value) + u16(0) + u32(0)
}

/// Deterministic noise (xorshift64), so a damaged fixture is the same damage on every run.
private func noise(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return UInt8(truncatingIfNeeded: state >> 24)
    }
}

private func expectFailure(
    _ code: ThumbnailError.Code, _ bytes: [UInt8], with thumbnailer: Thumbnailer = Thumbnailer(),
    sourceLocation: SourceLocation = #_sourceLocation
) {
    do {
        let thumbnail = try thumbnailer.thumbnail(of: bytes)
        Issue.record(
            "expected \(code), made a \(thumbnail.width)x\(thumbnail.height) thumbnail", sourceLocation: sourceLocation)
    } catch {
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
        #expect(!error.message.isEmpty, sourceLocation: sourceLocation)
    }
}

// MARK: - Real photos

@Test(arguments: photos)
func thumbnailHasTheTargetSizeAndTheAspectRatio(_ fixture: FixturePhoto) throws {
    let thumbnail = try Thumbnailer().thumbnail(of: photo(fixture.name))
    #expect(thumbnail.sourceWidth == fixture.width)
    #expect(thumbnail.sourceHeight == fixture.height)
    #expect(thumbnail.orientation == fixture.orientation)
    let (width, height) = fixture.upright
    let long = min(320, max(width, height))
    #expect(max(thumbnail.width, thumbnail.height) == long)
    if width >= height {
        #expect(thumbnail.width == long)
        #expect(abs(Double(thumbnail.height) - Double(height * long) / Double(width)) <= 1)
    } else {
        #expect(thumbnail.height == long)
        #expect(abs(Double(thumbnail.width) - Double(width * long) / Double(height)) <= 1)
    }
    #expect(thumbnail.jpeg.starts(with: [0xFF, 0xD8]))
    #expect(Array(thumbnail.jpeg.suffix(2)) == [0xFF, 0xD9])
    #expect(thumbnail.jpeg.count < 64_000)

    // The thumbnail is itself a clean JPEG, upright, that the same code reads back unchanged in size.
    let again = try Thumbnailer().thumbnail(of: thumbnail.jpeg)
    #expect(again.sourceWidth == thumbnail.width && again.sourceHeight == thumbnail.height)
    #expect(again.width == thumbnail.width && again.height == thumbnail.height)
    #expect(again.orientation == 1)
}

@Test func orientationSixTurnsALandscapeFileIntoAPortraitThumbnail() throws {
    let thumbnail = try Thumbnailer().thumbnail(of: photo("p27_life_orient6"))
    #expect(thumbnail.sourceWidth > thumbnail.sourceHeight)
    #expect(thumbnail.width == 213 && thumbnail.height == 320)
}

@Test(.enabled(if: djpegAvailable), arguments: photos)
func thumbnailMatchesAnExactAreaAverageOfTheFullDecode(_ fixture: FixturePhoto) async throws {
    let bytes = try photo(fixture.name)
    let fine = try Thumbnailer(quality: 95).thumbnail(of: bytes)
    let stored = fixture.orientation >= 5 ? (fine.height, fine.width) : (fine.width, fine.height)
    let reference = await upright(
        areaAverage(try decode(bytes), width: stored.0, height: stored.1), orientation: fixture.orientation)

    let decoded = try await decode(fine.jpeg)
    #expect(decoded.channels == (fixture.grayscale ? 1 : 3))
    let fineQuality = try psnr(decoded, reference)
    #expect(fineQuality > 33, "PSNR \(fineQuality) dB at quality 95")

    // At the default quality 80 with 4:2:0 chroma the encoder, not the resampling, limits the match.
    let usual = try await psnr(decode(Thumbnailer().thumbnail(of: bytes).jpeg), reference)
    #expect(usual > 27, "PSNR \(usual) dB at quality 80")
}

@Test(.enabled(if: djpegAvailable), arguments: 1...8)
func everyEXIFOrientationIsApplied(_ orientation: Int) async throws {
    let plain = try photo("p05_left01_gray")
    let reference = upright(
        try await decode(Thumbnailer(quality: 95).thumbnail(of: plain).jpeg), orientation: orientation)
    for bigEndian in [false, true] {
        let tagged = withExif(plain, tiff: orientationTIFF(UInt16(orientation), bigEndian: bigEndian))
        let thumbnail = try Thumbnailer(quality: 95).thumbnail(of: tagged)
        #expect(thumbnail.orientation == orientation)
        #expect(thumbnail.width == (orientation >= 5 ? 240 : 320))
        let quality = try await psnr(decode(thumbnail.jpeg), reference)
        #expect(quality > 38, "orientation \(orientation): PSNR \(quality) dB")
    }
}

@Test func malformedEXIFIsIgnored() throws {
    let plain = try photo("p05_left01_gray")
    let valid = orientationTIFF(6, bigEndian: false)
    let broken: [[UInt8]] = [
        [],  // nothing after "Exif\0\0"
        Array(valid[0..<10]),  // IFD cut off inside its entry
        Array("II".utf8) + [42, 0, 0xFF, 0xFF, 0xFF, 0xFF],  // IFD0 offset far outside
        Array("II".utf8) + [42, 0, 8, 0, 0, 0, 0xFF, 0xFF],  // 65535 entries announced, none there
        Array("XX".utf8) + Array(valid[2...]),  // unknown byte order
        orientationTIFF(9, bigEndian: false),  // out of range
        orientationTIFF(0, bigEndian: true),
    ]
    for tiff in broken {
        let thumbnail = try Thumbnailer().thumbnail(of: withExif(plain, tiff: tiff))
        #expect(thumbnail.orientation == 1)
        #expect(thumbnail.width == 320 && thumbnail.height == 240)
    }
}

@Test func smallerImagesKeepTheirSize() throws {
    let small = try Thumbnailer().thumbnail(of: photo("a12_small_orient6"))
    #expect(small.width == 128 && small.height == 128)
    let tiny = try Thumbnailer().thumbnail(of: photo("a13_1x1"))
    #expect(tiny.width == 1 && tiny.height == 1)
    let large = try Thumbnailer(size: 1000).thumbnail(of: photo("p05_left01_gray"))
    #expect(large.width == 640 && large.height == 480)
    let other = try Thumbnailer(size: 100).thumbnail(of: photo("p13_aloeL"))
    #expect(other.width == 100 && other.height == 87)
}

@Test(.enabled(if: djpegAvailable))
func adobeCMYKBecomesRGB() async throws {
    // Pillow's CMYK sample (Photoshop, inverted CMYK): red letters on black.
    let thumbnail = try Thumbnailer(quality: 95).thumbnail(of: photo("a11_cmyk_pillow"))
    #expect(thumbnail.width == 100 && thumbnail.height == 100)
    let image = try await decode(thumbnail.jpeg)
    #expect(image.channels == 3)
    #expect(image[2, 2, 0] > 200 && image[2, 2, 1] < 60 && image[2, 2, 2] < 60)
    #expect(image[97, 97, 0] < 40 && image[97, 97, 1] < 40 && image[97, 97, 2] < 40)
}

@Test(.enabled(if: djpegAvailable))
func decodingOnlyTheFirstDCScanChangesAlmostNothingAtOneEighth() async throws {
    // p27 sends its DC coefficients in two scans, the first without their last bit, the seventh with it:
    // the shortcut reads only the first. Its 1/8 decode then lacks that bit (under a grey level) and the
    // first AC coefficients of the subsampled chroma, with which libjpeg would interpolate it.
    let bytes = try photo("p27_life_orient6")
    var full = Thumbnailer(size: 100, quality: 95)
    full.readsOnlyNeededScans = false
    let shortcut = try Thumbnailer(size: 100, quality: 95).thumbnail(of: bytes)
    #expect(shortcut.width == 67 && shortcut.height == 100)
    let quality = try await psnr(decode(shortcut.jpeg), decode(full.thumbnail(of: bytes).jpeg))
    #expect(quality > 38, "PSNR \(quality) dB between the shortcut and the full decode")
}

@Test(.enabled(if: djpegAvailable))
func aTwoEighthsDecodeReadsOnlyTheFirstScans() async throws {
    // At 2/8 the decode needs each block's first four coefficients: libjpeg's scan order sends them (less
    // their last bits) in the first four of its ten scans, which is where reading stops.
    let bytes = try photo("p27_life_orient6")
    var full = Thumbnailer(quality: 95)
    full.readsOnlyNeededScans = false
    let partial = try Thumbnailer(quality: 95).thumbnail(of: bytes)
    let quality = try await psnr(decode(partial.jpeg), decode(full.thumbnail(of: bytes).jpeg))
    #expect(quality > 36, "PSNR \(quality) dB between the partial and the full decode")
    expectFailure(.tooManyScans, bytes, with: Thumbnailer(maxScans: 3))
    #expect(throws: Never.self) { try Thumbnailer(maxScans: 4).thumbnail(of: bytes) }
}

// MARK: - Files that are not photos, or not whole

@Test func emptyAndNonJPEGInputsAreRejected() throws {
    expectFailure(.empty, [])
    expectFailure(.empty, try photo("a01_empty"))
    let html = Array("<!DOCTYPE html>\n<html><body>Rate limit exceeded</body></html>\n".utf8)
    expectFailure(.notJPEG, html)
    expectFailure(.notJPEG, Array("  \n<html>".utf8))
    let png: [UInt8] =
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8) + [0, 0, 1, 0]
    expectFailure(.notJPEG, png)
    expectFailure(.notJPEG, [0xFF])
    expectFailure(.notJPEG, Array("RIFF\0\0\0\0WEBPVP8 ".utf8))
    expectFailure(.truncated, [0xFF, 0xD8])
    do {
        _ = try Thumbnailer().thumbnail(of: png)
    } catch {
        #expect(error.message.contains("PNG"))
    }
    do {
        _ = try Thumbnailer().thumbnail(of: html)
    } catch {
        #expect(error.message.contains("HTML"))
    }
}

@Test func truncatedFilesAreRejected() throws {
    let baseline = try photo("p13_aloeL")
    expectFailure(.truncated, Array(baseline.prefix(baseline.count / 2)))
    expectFailure(.truncated, Array(baseline.prefix(baseline.count - 2)))  // only the EOI missing
    let progressive = try photo("p27_life_orient6")
    expectFailure(.truncated, Array(progressive.prefix(progressive.count / 2)))
    // Cut after its DC scans: a 1/8 decode has all it needs but the file is still incomplete.
    let cut = Array(progressive.prefix(progressive.count * 95 / 100))
    expectFailure(.truncated, cut, with: Thumbnailer(size: 100))
    expectFailure(.truncated, Array(progressive.prefix(600)))  // inside the headers
}

@Test func damagedDataIsRejected() throws {
    var damaged = try photo("p13_aloeL")
    let middle = damaged.count / 2
    damaged.replaceSubrange(middle..<(middle + 256), with: noise(count: 256, seed: 0x9E37_79B9_7F4A_7C15))
    expectFailure(.corrupt, damaged)
    expectFailure(.corrupt, try photo("a06_corrupt_dht"))
}

// MARK: - Bombs and limits

@Test func decompressionBombsAreRejectedFromTheHeader() throws {
    for name in ["a07_bomb_header_65000", "a09_bomb_30000_arith", "a15_scan_bomb_5000"] {
        expectFailure(.tooLarge, try photo(name))
    }
    let header = try photo("a07_bomb_header_65000")
    do {
        _ = try Thumbnailer().thumbnail(of: header)
    } catch {
        #expect(error.message.contains("65000x65000"))
    }
    expectFailure(.tooLarge, try photo("p13_aloeL"), with: Thumbnailer(maxPixels: 1_000_000))
}

@Test func progressiveScanLimitsHold() throws {
    // A real progressive file has about ten scans: a lower limit trips in the full decode ...
    expectFailure(.tooManyScans, try photo("p09_ela_original"), with: Thumbnailer(maxScans: 5))
    var full = Thumbnailer(size: 100, maxScans: 3)
    full.readsOnlyNeededScans = false
    expectFailure(.tooManyScans, try photo("p27_life_orient6"), with: full)
    // ... while a 1/8 decode reads only this file's first scan, which holds all its DC coefficients.
    #expect(throws: Never.self) {
        try Thumbnailer(size: 100, maxScans: 1).thumbnail(of: photo("p27_life_orient6"))
    }
    #expect(throws: Never.self) { try Thumbnailer(maxScans: 10).thumbnail(of: photo("p27_life_orient6")) }
}

@Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/jpegtran")))
func theShortcutCountsTheScansItReads() async throws {
    // The same photo rewritten (losslessly) with one DC scan per component: the shortcut needs three.
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let script = "0: 0 0 0 0;\n1: 0 0 0 0;\n2: 0 0 0 0;\n0: 1 63 0 0;\n1: 1 63 0 0;\n2: 1 63 0 0;\n"
    try Data(script.utf8).write(to: URL(fileURLWithPath: directory + "/scans.txt"))
    let source = Harness.fixtures + "/photos/p27_life_orient6.jpg"
    let arguments = ["-scans", directory + "/scans.txt", "-outfile", directory + "/out.jpg", source]
    let outcome = try await Child("/usr/bin/jpegtran", arguments, in: directory).wait(timeout: 60)
    try #require(outcome.status == 0, "jpegtran failed: \(outcome.stderr)")
    let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/out.jpg")))
    expectFailure(.tooManyScans, bytes, with: Thumbnailer(size: 100, maxScans: 2))
    let thumbnail = try Thumbnailer(size: 100, maxScans: 3).thumbnail(of: bytes)
    #expect(thumbnail.width == 100 && thumbnail.height == 67)
}

@Test func aRepeatedScanBombIsStoppedEvenAboveThePixelLimit() throws {
    // 8000x8000 with one scan repeated 5000 times: over the default pixel limit; with it raised, a full
    // decode finds the repeats inconsistent at once, and the 1/8 shortcut never reads them.
    let bomb = try photo("a15_scan_bomb_5000")
    expectFailure(.corrupt, bomb, with: Thumbnailer(size: 2000, maxPixels: 100_000_000))
    let thumbnail = try Thumbnailer(maxPixels: 100_000_000).thumbnail(of: bomb)
    #expect(thumbnail.width == 320 && thumbnail.height == 320)
}

@Test func decoderMemoryIsCapped() throws {
    // A progressive file needs its whole coefficient buffer (about 25 MB here); a baseline file streams.
    expectFailure(.tooLarge, try photo("p27_life_orient6"), with: Thumbnailer(maxMemory: 8 << 20))
    let baseline = try Thumbnailer(maxMemory: 8 << 20).thumbnail(of: photo("p13_aloeL"))
    #expect(baseline.width == 320)
}

@Test func oneThumbnailerServesManyTasks() async throws {
    let thumbnailer = Thumbnailer()
    let bytes = try photo("p13_aloeL")
    let expected = try thumbnailer.thumbnail(of: bytes)
    let results = try await withThrowingTaskGroup(of: Thumbnail.self) { group in
        for _ in 0..<8 {
            group.addTask { try thumbnailer.thumbnail(of: bytes) }
        }
        return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(results.count == 8)
    #expect(results.allSatisfy { $0 == expected })
}

// MARK: - fieldlog thumbnail

@Test func commandWritesThumbnailsAndReportsEachFile() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let photos = Harness.fixtures + "/photos/"
    let inputs = ["p05_left01_gray", "p27_life_orient6", "a07_bomb_header_65000", "a01_empty"].map {
        photos + $0 + ".jpg"
    }
    let out = directory + "/thumbs"
    let outcome = try await fieldlog(["thumbnail", "--out", out] + inputs, in: directory, timeout: 120)
    #expect(outcome.status == 1)
    let lines = outcome.stdout.split(separator: "\n").map(String.init)
    #expect(
        lines == [
            "ok \(inputs[0]) -> \(out)/p05_left01_gray.jpg (320x240 from 640x480)",
            "ok \(inputs[1]) -> \(out)/p27_life_orient6.jpg (213x320 from 3088x2056)",
            "error \(inputs[2]): the image is 65000x65000 (4225.0 megapixels), more than the 50.0-megapixel limit",
            "error \(inputs[3]): the file is empty",
        ])
    #expect(outcome.stderr.contains("2 of 4 files failed"))
    let written = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
    #expect(written == ["p05_left01_gray.jpg", "p27_life_orient6.jpg"])
    let thumbnail = try Thumbnailer().thumbnail(
        of: [UInt8](Data(contentsOf: URL(fileURLWithPath: out + "/p27_life_orient6.jpg"))))
    #expect(thumbnail.width == 213 && thumbnail.height == 320)

    let good = try await fieldlog(["thumbnail", "--size", "100", "--out", out, inputs[0]], in: directory)
    #expect(good.status == 0)
    #expect(good.stdout == "ok \(inputs[0]) -> \(out)/p05_left01_gray.jpg (100x75 from 640x480)\n")
}

@Test func commandNeverReplacesItsInput() async throws {
    let directory = Harness.temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let original = try photo("p13_aloeL")
    try Data(original).write(to: URL(fileURLWithPath: directory + "/p13_aloeL.jpg"))
    let outcome = try await fieldlog(["thumbnail", "--out", directory, directory + "/p13_aloeL.jpg"], in: directory)
    #expect(outcome.status == 1)
    #expect(outcome.stdout.contains("would replace it"))
    #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/p13_aloeL.jpg"))) == original)
}
