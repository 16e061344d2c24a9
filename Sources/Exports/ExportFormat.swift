import WalkJournal

/// The file formats a walk can be exported in.
public enum ExportFormat: String, CaseIterable, Sendable {
    case json
    case gpx
    case geojson
    case html

    /// The format a file's name asks for by its extension: `.json`, `.gpx`, `.geojson` or `.html`, in any
    /// case (`walk.GPX`).
    public init?(path: String) {
        let name = path.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        self.init(rawValue: name[name.index(after: dot)...].lowercased())
    }
}

/// Turns a walk's journal into a file a map, a GIS or a script can read.
public enum WalkExport {
    /// `isCached` tells whether a photo's thumbnail is still in the on-device cache (it may have been
    /// evicted; the journal keeps the photo's metadata regardless); `thumbnail` reads it, for the HTML
    /// page, which carries the thumbnails inside it.
    public static func render(
        _ log: WalkLog, as format: ExportFormat, isCached: (String) -> Bool = { _ in false },
        thumbnail: @escaping (String) -> [UInt8]? = { _ in nil }
    ) -> [UInt8] {
        switch format {
        case .json: JSONExport.render(log, isCached: isCached)
        case .gpx: GPXExport.render(log)
        case .geojson: GeoJSONExport.render(log, isCached: isCached)
        case .html: HTMLExport.render(log, isCached: isCached, thumbnail: thumbnail)
        }
    }
}
