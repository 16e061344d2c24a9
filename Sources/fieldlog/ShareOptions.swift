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
                HTTP mode or Traccar's OwnTracks port (plain http only on loopback). The password comes from \
                --share-password-file, never from the URL.
                """,
            valueName: "url"))
    var share: [String] = []

    @Option(help: "The OwnTracks device name (the topic's last level, the Recorder's d). Default: the host name.")
    var shareDevice: String?

    @Option(help: "The OwnTracks tracker id shown on the map: two characters. Default: the device's last two.")
    var shareTid: String?

    @Option(help: "Seconds of GPS time between shared fixes at most (the first and last of a segment and milestones always go).")
    var shareEvery: Double = ShareSettings().every

    @Option(help: "Messages a second at most per destination, also for a backlog after an outage.")
    var shareRate: Double = ShareSettings().rate

    @Option(
        help: ArgumentHelp(
            "Read the password for the destinations from this file.",
            discussion: """
                A relative path is looked up in $CREDENTIALS_DIRECTORY first (systemd LoadCredential=). Without \
                this option the credential share-password is used if systemd passes one.
                """))
    var sharePasswordFile: String?

    @Option(help: "Also trust the CA certificate(s) in this PEM file for the destinations' TLS.")
    var shareCaFile: String?

    var settings: ShareSettings {
        var settings = ShareSettings()
        settings.share = share
        settings.device = shareDevice
        settings.tid = shareTid
        settings.every = shareEvery
        settings.rate = shareRate
        settings.passwordFile = sharePasswordFile
        settings.caFile = shareCaFile
        return settings
    }
}
