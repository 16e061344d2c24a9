import ArgumentParser
import FieldLogDaemon

/// Every setting of `fieldlog run`, also taken by the processes it starts (`live-page`, `live-share`), so that
/// they read the same fieldlog.conf the same way.
struct RecorderOptions: ParsableArguments {
    @OptionGroup var configOption: ConfigOption

    @OptionGroup var settings: DaemonSettings
}
