import FoundationEssentials

/// The Flickr API key: never on the command line, never logged.
package enum FlickrKey {
    /// The credential the systemd unit loads the key into (LoadCredential=flickr-api-key:...).
    package static let credential = "flickr-api-key"

    /// The key from `file` (a relative name is looked up in $CREDENTIALS_DIRECTORY first), else
    /// $FLICKR_API_KEY, else the service's credential; nil when none is set up. An empty key counts as none:
    /// the systemd unit gives its credential an empty default so that the service starts before anyone has
    /// installed a key.
    package static func load(file: String?, environment: [String: String]) throws(SettingsError) -> String? {
        let key: String?
        if let file {
            let path = Credential.path(file: file, name: credential, environment: environment) ?? file
            guard let data = FileManager.default.contents(atPath: path) else {
                throw SettingsError(key: "api-key-file", "cannot read the API key file \(path)")
            }
            key = String(decoding: data, as: UTF8.self)
        } else if let variable = environment["FLICKR_API_KEY"], !variable.isEmpty {
            key = variable
        } else {
            key = Credential.path(file: nil, name: credential, environment: environment)
                .flatMap { FileManager.default.contents(atPath: $0) }.map { String(decoding: $0, as: UTF8.self) }
        }
        let trimmed = String(
            String.UnicodeScalarView(
                (key ?? "").unicodeScalars.drop { $0.properties.isWhitespace }.reversed()
                    .drop { $0.properties.isWhitespace }.reversed()))
        return trimmed.isEmpty ? nil : trimmed
    }
}
