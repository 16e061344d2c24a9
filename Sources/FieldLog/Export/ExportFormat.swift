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
    public static func render(_ log: WalkLog, as format: ExportFormat) -> [UInt8] {
        switch format {
        case .json: JSONExport.render(log)
        case .gpx: GPXExport.render(log)
        case .geojson: GeoJSONExport.render(log)
        }
    }
}
