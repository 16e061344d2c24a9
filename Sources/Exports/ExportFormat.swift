package import WalkJournal

/// The file formats a walk can be exported in.
package enum ExportFormat: String, CaseIterable, Sendable {
    case json
    case gpx
    case geojson
    case html

    /// The format a file's name asks for by its extension: `.json`, `.gpx`, `.geojson` or `.html`, in any
    /// case (`walk.GPX`).
    package init?(path: String) {
        let name = path.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        self.init(rawValue: name[name.index(after: dot)...].lowercased())
    }
}

/// What an export hands its sink at a time: what it holds, whatever the walk's length.
let exportChunk = 64 << 10

/// Turns a walk's journal into a file a map, a GIS or a script can read.
package enum WalkExport {
    /// Writes `log` as `format` to `sink` a chunk at a time, reading its track from its journal as it goes
    /// (twice for GeoJSON); throws what reading the journal or `sink` threw. `isCached` tells whether a
    /// photo's thumbnail is still in the on-device cache (it may have been evicted; the journal keeps the
    /// photo's metadata regardless); `thumbnail` reads it, for the HTML page, which carries the thumbnails
    /// inside it.
    package static func write(
        _ log: WalkLog, as format: ExportFormat, isCached: (String) -> Bool = { _ in false },
        thumbnail: @escaping (String) -> [UInt8]? = { _ in nil }, to sink: ([UInt8]) throws -> Void
    ) throws {
        switch format {
        case .json: try JSONExport.write(log, isCached: isCached, to: sink)
        case .gpx: try GPXExport.write(log, to: sink)
        case .geojson: try GeoJSONExport.write(log, isCached: isCached, to: sink)
        case .html: try HTMLExport.write(log, isCached: isCached, thumbnail: thumbnail, to: sink)
        }
    }

    /// The whole export in memory: for a walk known to be short (tests, a page's example).
    package static func render(
        _ log: WalkLog, as format: ExportFormat, isCached: (String) -> Bool = { _ in false },
        thumbnail: @escaping (String) -> [UInt8]? = { _ in nil }
    ) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try write(log, as: format, isCached: isCached, thumbnail: thumbnail) { bytes += $0 }
        return bytes
    }
}
