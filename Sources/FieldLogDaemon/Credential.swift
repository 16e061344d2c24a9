import FoundationEssentials

/// Secrets (the Flickr key, the sharing password): from a file an option names, or from the credential
/// systemd hands the service (LoadCredential=); never from the command line itself.
package enum Credential {
    /// `file` (a relative name is looked up in $CREDENTIALS_DIRECTORY first), else the service's credential
    /// `name` when systemd passes one; nil when neither is set up.
    package static func path(file: String?, name: String, environment: [String: String]) -> String? {
        let credentials = environment["CREDENTIALS_DIRECTORY"]
        if let file {
            if !file.hasPrefix("/"), let credentials, FileManager.default.fileExists(atPath: credentials + "/" + file) {
                return credentials + "/" + file
            }
            return file
        }
        guard let credentials, FileManager.default.fileExists(atPath: credentials + "/" + name) else { return nil }
        return credentials + "/" + name
    }
}
