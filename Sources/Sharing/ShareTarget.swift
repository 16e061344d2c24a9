/// One `--share` destination as the settings set it up: ready, with the password meant for it alone, or
/// unusable, with the reason in words (never a password). An unusable one is reported and left out; the
/// others, and the recording, go on.
package enum ShareTarget: Sendable {
    /// `password`: nil for none. `warning`: something to fix that does not stop it (a password file every user
    /// may read).
    case ready(ShareDestination, password: String?, warning: String?)
    case unusable(url: String, reason: String)

    package var url: String {
        switch self {
        case let .ready(destination, _, _): destination.url
        case let .unusable(url, _): url
        }
    }
}
