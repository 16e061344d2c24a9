/// The file formats a walk can be exported in.
public enum ExportFormat: String, CaseIterable, Sendable {
    case json
    case gpx
    case geojson

    /// The format a file name's extension asks for: `json`, `gpx` or `geojson`, in any case.
    public init?(pathExtension: String) {
        self.init(rawValue: pathExtension.lowercased())
    }
}

/// Turns a walk's journal into a file a map, a GIS or a script can read.
public enum WalkExport {
    /// `isCached` tells whether a photo's thumbnail is still in the on-device cache (it may have been
    /// evicted; the journal keeps the photo's metadata regardless).
    public static func render(
        _ log: WalkLog, as format: ExportFormat, isCached: (String) -> Bool = { _ in false }
    ) -> [UInt8] {
        switch format {
        case .json: JSONExport.render(log, isCached: isCached)
        case .gpx: GPXExport.render(log)
        case .geojson: GeoJSONExport.render(log, isCached: isCached)
        }
    }
}
