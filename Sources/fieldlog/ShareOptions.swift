import ArgumentParser
import FieldLogDaemon

/// Where the walk is published live (`--share`), as OwnTracks locations.
struct ShareOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Publish the walk live to this OwnTracks server; repeat for several (the file: URLs separated by spaces).",
            discussion: """
                mqtt://[USER@]HOST[:PORT][/TOPIC] or mqtts://… (TLS, verified) for an MQTT broker, topic \
                owntracks/USER/DEVICE by default; https://[USER@]HOST[:PORT]/pub for the OwnTracks Recorder's \
                HTTP mode or Traccar's OwnTracks port (plain http only on loopback). A password goes only to a URL \
                that names a user, from --share-credentials or --share-password-file, never from the URL, and \
                never over plain mqtt or http to another host. A destination that cannot be set up is reported \
                (log, status, live page) and left out; the walk is recorded all the same.
                """,
            valueName: "url"))
    var share: [String] = []

    @Option(help: "The OwnTracks device name (the topic's last level, the Recorder's d). Default: the host name.")
    var shareDevice: String?

    @Option(help: "The OwnTracks tracker id shown on the map: two characters. Default: the device's last two.")
    var shareTid: String?

    @Option(
        help:
            "Seconds of GPS time between shared fixes at most (the first and last of a segment and milestones always go)."
    )
    var shareEvery: Double = ShareSettings().every

    @Option(help: "Messages a second at most per destination, also for a backlog after an outage.")
    var shareRate: Double = ShareSettings().rate

    @Option(
        help: ArgumentHelp(
            "Read a password per destination from this file: lines of URL PASSWORD.",
            discussion: """
                Each line: a destination's URL exactly as given to --share, spaces or tabs, and its password (the \
                rest of the line); blank lines and lines starting with # are skipped. At most 4 KiB, a regular \
                file (not a link), best mode 0600. A relative path is looked up in $CREDENTIALS_DIRECTORY first \
                (systemd LoadCredential=). Without this option the credential share-credentials is used if \
                systemd passes one.
                """,
            valueName: "file"))
    var shareCredentials: String?

    @Option(
        help: ArgumentHelp(
            "Read the password of the one destination whose URL names a user from this file (its first line).",
            discussion: """
                For one destination with a login; with several, give each its own in --share-credentials (a \
                destination listed there takes its line). At most 4 KiB, a regular file (not a link), best \
                mode 0600. A relative path is looked up in $CREDENTIALS_DIRECTORY first (systemd \
                LoadCredential=). Without this option the credential share-password is used if systemd passes one.
                """,
            valueName: "file"))
    var sharePasswordFile: String?

    @Option(help: "Also trust the CA certificate(s) in this PEM file for the destinations' TLS.")
    var shareCaFile: String?

    @Option(
        help: ArgumentHelp(
            "Seconds before a destination that refused the credentials (HTTP 401/403, MQTT not authorised) is asked again.",
            discussion: "Then twice as long each time, up to 30 minutes, for as long as the walk goes on.",
            valueName: "seconds"))
    var shareRejectedRetry: Double = ShareSettings().rejectedRetry

    var settings: ShareSettings {
        var settings = ShareSettings()
        settings.share = share
        settings.device = shareDevice
        settings.tid = shareTid
        settings.every = shareEvery
        settings.rate = shareRate
        settings.credentialsFile = shareCredentials
        settings.passwordFile = sharePasswordFile
        settings.caFile = shareCaFile
        settings.rejectedRetry = shareRejectedRetry
        return settings
    }
}
