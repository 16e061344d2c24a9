import Glibc
package import Thumbnailing
package import WalkModel

/// Geotagged JPEGs in one folder (`--photos-dir`): for walks without network, and for the demo.
///
/// The folder is indexed once, at start (and again on `rescan()`): each `*.jpg`/`*.jpeg` file's EXIF gives
/// the position (GPSLatitude/GPSLongitude with their N/S, E/W references) and the attribution (Artist,
/// ImageDescription or XPTitle, Copyright, DateTimeOriginal); an XMP position where the EXIF has none. Files
/// without a usable position are skipped, each with its reason. Subfolders and hidden files are not read.
package actor LocalPhotoSource: PhotoSource {
    /// What one reading of the folder found, for the log.
    package struct Scan: Sendable, Equatable {
        /// Geotagged JPEGs now offered.
        package var photos = 0
        /// JPEGs not offered, by file name, with why: no position, or the file could not be read.
        package var skipped: [String: Geotag] = [:]
        /// JPEGs skipped because another file's name gave the same id.
        package var duplicates = 0

        package init() {}

        /// Files skipped for this reason.
        package func count(_ reason: Geotag) -> Int {
            skipped.values.filter { $0 == reason }.count
        }

        /// "35 geotagged, 1 no EXIF": the reasons that occurred, in `Geotag`'s order.
        package var summary: String {
            var parts = ["\(photos) geotagged"]
            for reason in Geotag.allCases where reason != .geotagged && count(reason) > 0 {
                parts.append("\(count(reason)) \(reason.rawValue)")
            }
            if duplicates > 0 { parts.append("\(duplicates) duplicate \(duplicates == 1 ? "id" : "ids")") }
            return parts.joined(separator: ", ")
        }
    }

    /// Licence text when a photo's EXIF has no Copyright.
    package static let defaultLicense = "All rights reserved"
    /// ownerID when a photo's EXIF names no Artist.
    package static let defaultOwnerID = "local"
    /// ownerName when a photo's EXIF names no Artist.
    package static let unknownOwner = "unknown"

    /// The folder, absolute.
    package nonisolated let directory: String
    private var photos: [String: Photo]
    package private(set) var lastScan: Scan

    private struct Photo {
        var candidate: PhotoCandidate
        var path: String
    }

    /// Who reads the EXIF blocks: this process, or photo workers (`ExifReading.isolated`).
    private let reader: ExifReading

    /// Indexes `directory`. Fails (fatal) only when the folder itself cannot be read.
    package init(directory: String, reader: ExifReading = .inProcess) throws(PhotoSourceError) {
        guard let resolved = realpath(directory, nil) else {
            throw PhotoSourceError(
                .fatal, "cannot open --photos-dir \(directory): \(String(cString: strerror(errno)))")
        }
        let absolute = String(cString: resolved)
        free(resolved)
        let (photos, scan) = try Self.index(absolute, reader: reader)
        self.reader = reader
        self.directory = absolute
        self.photos = photos
        lastScan = scan
    }

    /// Reads the folder again, for photos added or removed since.
    @discardableResult
    package func rescan() throws(PhotoSourceError) -> Scan {
        (photos, lastScan) = try Self.index(directory, reader: reader)
        return lastScan
    }

    /// Every photo offered, by id.
    package var candidates: [PhotoCandidate] {
        photos.values.map(\.candidate).sorted { $0.id < $1.id }
    }

    /// Photos within `radius` metres, nearest first.
    package func search(
        latitude: Double, longitude: Double, radius: Double
    ) async throws(PhotoSourceError)
        -> [PhotoCandidate]
    {
        guard latitude.isFinite, longitude.isFinite, radius.isFinite, radius >= 0 else { return [] }
        return photos.values.lazy
            .map {
                ($0.candidate, Geodesy.distance(latitude, longitude, $0.candidate.latitude, $0.candidate.longitude))
            }
            .filter { $0.1 <= radius }
            .sorted { ($0.1, $0.0.id) < ($1.1, $1.0.id) }
            .map(\.0)
    }

    /// The file's bytes. Only photos of this folder's index are read, whatever `imageURL` a candidate
    /// carries.
    package func image(of candidate: PhotoCandidate, limit: Int) async throws(PhotoSourceError) -> [UInt8] {
        guard let photo = photos[candidate.id] else {
            throw PhotoSourceError(.permanent, "photo \(candidate.id) is not in \(directory)")
        }
        return try Self.contents(of: photo.path, limit: limit)
    }

    // MARK: - Reading

    private static func contents(of path: String, limit: Int) throws(PhotoSourceError) -> [UInt8] {
        // O_NONBLOCK: a FIFO named *.jpg must not hang the source; it makes no difference to regular files.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw failure(path, errno) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw failure(path, errno) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw PhotoSourceError(.permanent, "\(path) is not a regular file")
        }
        guard Int(info.st_size) <= limit else {
            throw PhotoSourceError(.permanent, "\(path) is \(info.st_size) bytes, over the limit of \(limit)")
        }
        // Read one byte past the limit: the file may have grown since fstat.
        var bytes = [UInt8](repeating: 0, count: min(Int(info.st_size), limit) + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + count, $0.count - count) }
            if got < 0 {
                if errno == EINTR { continue }
                throw failure(path, errno)
            }
            if got == 0 { break }
            count += got
        }
        guard count <= limit else {
            throw PhotoSourceError(.permanent, "\(path) is over the limit of \(limit) bytes")
        }
        bytes.removeLast(bytes.count - count)
        guard bytes.count >= 2, bytes[0] == 0xFF, bytes[1] == 0xD8 else {
            throw PhotoSourceError(.permanent, "\(path) is not a JPEG")
        }
        return bytes
    }

    /// I/O trouble that may pass is temporary; a missing or forbidden file is not.
    private static func failure(_ path: String, _ number: Int32) -> PhotoSourceError {
        let passing = [EIO, ENOMEM, EMFILE, ENFILE, EAGAIN, EBUSY].contains(number)
        return PhotoSourceError(
            passing ? .temporary : .permanent, "cannot read \(path): \(String(cString: strerror(number)))")
    }

    // MARK: - Indexing

    private static func index(
        _ directory: String, reader: ExifReading
    ) throws(PhotoSourceError)
        -> ([String: Photo], Scan)
    {
        guard let stream = opendir(directory) else {
            throw PhotoSourceError(
                .fatal, "cannot read --photos-dir \(directory): \(String(cString: strerror(errno)))")
        }
        var names: [String] = []
        while let item = readdir(stream) {
            let name = withUnsafeBytes(of: item.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            let lowered = name.lowercased()
            if !name.hasPrefix("."), lowered.hasSuffix(".jpg") || lowered.hasSuffix(".jpeg") {
                names.append(name)
            }
        }
        closedir(stream)
        names.sort()  // the same file wins an id clash on every scan

        var photos: [String: Photo] = [:]
        var scan = Scan()
        names = names.filter { name in
            var status = stat()
            return stat(directory + "/" + name, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
        }
        let records = reader.read(names.map { directory + "/" + $0 })
        for (name, record) in zip(names, records) {
            let path = directory + "/" + name
            guard record.geotag == .geotagged else {
                scan.skipped[name] = record.geotag
                continue
            }
            let candidate = Self.candidate(from: record, fileName: name, path: path)
            if photos[candidate.id] != nil {
                scan.duplicates += 1
            } else {
                photos[candidate.id] = Photo(candidate: candidate, path: path)
                scan.photos += 1
            }
        }
        return (photos, scan)
    }

    package static func candidate(from info: ExifRecord, fileName: String, path: String) -> PhotoCandidate {
        let description = info.title
        let artist = info.artist
        let copyright = info.copyright
        let taken = info.taken
        let title = description.isEmpty || cameraDefaultTitles.contains(description) ? stem(fileName) : description
        return PhotoCandidate(
            id: id(forFileName: fileName), title: title,
            ownerName: artist.isEmpty ? unknownOwner : artist, ownerID: artist.isEmpty ? defaultOwnerID : artist,
            license: copyright.isEmpty ? defaultLicense : copyright, pageURL: nil,
            latitude: info.latitude, longitude: info.longitude, imageURL: path, taken: Self.taken(taken))
    }

    /// What cameras put in ImageDescription when the photographer wrote nothing.
    package static let cameraDefaultTitles: Set<String> = [
        "OLYMPUS DIGITAL CAMERA", "SONY DSC", "DIGITAL CAMERA", "Default", "default", "DCIM", "Exif_JPEG_PICTURE",
    ]

    private static func stem(_ fileName: String) -> String {
        guard let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex else { return fileName }
        return String(fileName[..<dot])
    }

    /// The id of a file: its name without `.jpg` when that is already a valid id; otherwise the name with
    /// every other character turned into `_`, cut to leave room, and a hash of the whole name, so that
    /// `IMG 1.JPG` and `IMG_1.jpg` stay apart. Depends on the name alone: stable across scans and restarts.
    package static func id(forFileName fileName: String) -> String {
        let stem = stem(fileName)
        if fileName.hasSuffix(".jpg"), PhotoCandidate.isValidID(stem) {
            return stem
        }
        let cleaned = String(String.UnicodeScalarView(stem.unicodeScalars.map { isIDCharacter($0) ? $0 : "_" }))
        // FNV-1a, 32 bits, over the name's UTF-8: short, and the same on every platform and run.
        var hash: UInt32 = 2_166_136_261
        for byte in fileName.utf8 {
            hash = (hash ^ UInt32(byte)) &* 16_777_619
        }
        let hex = String(hash, radix: 16)
        return String(cleaned.prefix(55)) + "-" + String(repeating: "0", count: 8 - hex.count) + hex
    }

    private static func isIDCharacter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
            || scalar == "_" || scalar == "-"
    }

    /// EXIF's "2018:08:20 09:47:40" as Flickr writes taken dates: "2018-08-20 09:47:40". Nil for the
    /// blanks and zeros cameras write without a clock.
    package static func taken(_ exif: String) -> String? {
        let bytes = Array(exif.utf8)
        guard bytes.count == 19 else { return nil }
        for (index, byte) in bytes.enumerated() {
            switch index {
            case 4, 7, 13, 16: guard byte == UInt8(ascii: ":") else { return nil }
            case 10: guard byte == UInt8(ascii: " ") else { return nil }
            default: guard (48...57).contains(byte) else { return nil }
            }
        }
        guard !exif.hasPrefix("0000") else { return nil }
        var result = bytes
        result[4] = UInt8(ascii: "-")
        result[7] = UInt8(ascii: "-")
        return String(decoding: result, as: UTF8.self)
    }
}
