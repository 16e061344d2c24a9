package import CExifShim
import CSandbox
import FoundationEssentials
import Glibc

/// Whether a JPEG's metadata places it, and if not, why not. The raw values are what the log says.
package enum Geotag: String, Codable, Sendable, CaseIterable {
    /// An EXIF position, else an XMP one.
    case geotagged
    /// Neither an EXIF segment nor an XMP position (or not a JPEG).
    case noEXIF = "no EXIF"
    /// An EXIF segment libexif cannot read: no valid TIFF header, or cut short before its GPS tags.
    case exifUnreadable = "EXIF unreadable"
    /// EXIF (or XMP) without both coordinates and their references.
    case noGPS = "no GPS"
    /// GPSStatus V (no fix), or exactly 0/0.
    case gpsVoid = "GPS void"
    /// A coordinate that is no place on Earth: beyond 90/180 degrees, a zero denominator, a wrong type.
    case outOfRange = "out of range"
    /// The file could not be opened or read, or the worker reading it died.
    case unreadable

    init(code: Int32) {
        switch code {
        case Int32(CEXIF_GPS): self = .geotagged
        case Int32(CEXIF_NO_GPS): self = .noGPS
        case Int32(CEXIF_NO_EXIF): self = .noEXIF
        case Int32(CEXIF_UNREADABLE): self = .exifUnreadable
        case Int32(CEXIF_GPS_VOID): self = .gpsVoid
        case Int32(CEXIF_OUT_OF_RANGE): self = .outOfRange
        default: self = .unreadable
        }
    }
}

/// One JPEG's EXIF as the local folder source uses it.
package struct ExifRecord: Codable, Sendable, Equatable {
    package var geotag: Geotag
    package var latitude = 0.0
    package var longitude = 0.0
    package var title = ""
    package var artist = ""
    package var copyright = ""
    package var taken = ""

    package init(geotag: Geotag) {
        self.geotag = geotag
    }

    package init(_ info: cexif_info, result: Int32) {
        var info = info
        geotag = Geotag(code: result)
        latitude = info.latitude
        longitude = info.longitude
        title = Self.text(&info.title)
        artist = Self.text(&info.artist)
        copyright = Self.text(&info.copyright)
        taken = Self.text(&info.taken)
    }

    package static func read(_ path: String) -> ExifRecord {
        var info = cexif_info()
        let result = cexif_read_file(path, &info)
        return ExifRecord(info, result: result)
    }

    private static func text<T>(_ field: inout T) -> String {
        withUnsafeBytes(of: &field) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }
}

/// Where the local folder's EXIF blocks are parsed: in this process, or in `photo-worker --exif` child
/// processes under the photo work limits, so that a hostile EXIF block cannot take the recorder down. A
/// worker reports file by file; if one dies, the file it was reading counts as unreadable and a new
/// worker goes on with the next.
package enum ExifReading: Sendable {
    case inProcess
    case isolated(executable: String, limits: PhotoWorkLimits)

    /// One record per path, in order.
    package func read(_ paths: [String]) -> [ExifRecord] {
        switch self {
        case .inProcess:
            return paths.map(ExifRecord.read)
        case let .isolated(executable, limits):
            var records: [ExifRecord] = []
            while records.count < paths.count {
                let remaining = Array(paths[records.count...])
                let batch = Self.readInWorker(remaining, executable: executable, limits: limits)
                records += batch
                if batch.count < remaining.count {
                    // The worker died on this file.
                    records.append(ExifRecord(geotag: .unreadable))
                }
            }
            return records
        }
    }

    /// What one worker reported before it ended: all of `paths`, or those before the one it died on.
    private static func readInWorker(_ paths: [String], executable: String, limits: PhotoWorkLimits) -> [ExifRecord] {
        do {
            let input = try MemoryFile(name: "paths")
            let output = try MemoryFile(name: "exif")
            let report = try MemoryFile(name: "report")
            try input.write(Array(paths.joined(separator: "\0").utf8))
            let arguments = [
                executable, PhotoWorker.commandName, "--exif", "--address-space", "\(limits.addressSpace)", "--cpu",
                "\(limits.cpuSeconds)",
            ]
            let pid = try PhotoWorker.spawn(arguments, input: input, output: output, report: report)
            // A second per file, at least the photo limit: a stuck worker is killed and its file skipped.
            let deadline = Date().addingTimeInterval(max(limits.wallSeconds, Double(paths.count)))
            var code: Int32 = 0
            while csandbox_poll(pid, &code) == Int32(CSANDBOX_RUNNING) {
                if Date() > deadline { _ = csandbox_kill(pid) }
                usleep(2_000)
            }
            let lines = try output.read(limit: paths.count * 16_384).split(separator: UInt8(ascii: "\n"))
            return lines.prefix(paths.count).compactMap { try? JSONDecoder().decode(ExifRecord.self, from: Data($0)) }
        } catch {
            return []
        }
    }
}
