/// The photo sources to ask, in order of preference (`--photo-sources`): each milestone is served by the
/// first that finds a photo within its widest radius; the next is asked when one finds nothing or cannot
/// be used (a rejected key).
package enum PhotoSourceChain {
    package struct Member: Sendable {
        /// As journaled in a photo record's `source`: "flickr", "commons" or "local".
        package var name: String
        package var source: any PhotoSource
        /// The widest search radius, in metres (Commons refuses more than 10 km).
        package var maxRadius: Double

        package init(name: String, source: any PhotoSource, maxRadius: Double = PhotoService.radii.last!) {
            self.name = name
            self.source = source
            self.maxRadius = maxRadius
        }

        /// The service's radii up to this source's widest.
        package var radii: [Double] {
            var radii = PhotoService.radii.filter { $0 < maxRadius }
            radii.append(min(maxRadius, PhotoService.radii.last!))
            return radii
        }
    }

    package static let names = ["flickr", "commons", "local", "none"]

    /// The names in `list` ("flickr,commons"), in order; nil with the reason when it is not a comma list of
    /// distinct known names, or `none` alone.
    package static func parse(_ list: String) -> (names: [String]?, problem: String?) {
        let names = list.split(separator: ",", omittingEmptySubsequences: false).map {
            String($0.unicodeScalars.filter { !$0.properties.isWhitespace }.map(Character.init)).lowercased()
        }
        if let unknown = names.first(where: { !Self.names.contains($0) }) {
            return (
                nil,
                "--photo-sources: \(unknown.isEmpty ? "an empty name" : "\"\(unknown)\"") is not one of flickr, commons, local, none"
            )
        }
        if Set(names).count != names.count { return (nil, "--photo-sources names a source twice") }
        if names.contains("none") {
            return names == ["none"] ? ([], nil) : (nil, "--photo-sources: none stands alone")
        }
        return (names, nil)
    }

    /// Without `--photo-sources`: the folder when there is one; else Flickr when it has a key, then Commons,
    /// which needs none.
    package static func defaultNames(hasPhotosDirectory: Bool, hasFlickrKey: Bool) -> [String] {
        hasPhotosDirectory ? ["local"] : hasFlickrKey ? ["flickr", "commons"] : ["commons"]
    }
}
