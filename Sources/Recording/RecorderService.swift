import FoundationEssentials
import Glibc
import ServiceLifecycle
import WalkModel

/// The `fieldlog run` service: gpsd events in, walk journal out, until graceful shutdown.
package struct RecorderService: Service {
    private let reader: GPSDReader
    private let recorder: WalkRecorder
    private let status: StatusFile
    private let onEnd: @Sendable () -> Void

    /// `onEnd` runs once the session has ended and everything is synced.
    package init(
        reader: GPSDReader, recorder: WalkRecorder, status: StatusFile,
        onEnd: @escaping @Sendable () -> Void = {}
    ) {
        self.reader = reader
        self.recorder = recorder
        self.status = status
        self.onEnd = onEnd
    }

    package func run() async throws {
        recorder.note(.sessionStart, message: "pid \(getpid())")
        status.update(gpsd: .connecting, recording: recorder.status)
        try await withGracefulShutdownHandler {
            try await reader.run { [recorder, status] event in
                Self.handle(event, recorder: recorder, status: status)
            }
        } onGracefulShutdown: { [reader] in
            reader.stop()
        }
        recorder.finishSession(reason: Task.isShuttingDownGracefully ? "stopped" : "gpsd stream ended")
        status.update(gpsd: .stopped, recording: recorder.status)
        onEnd()
    }

    /// Runs on the gpsd reader thread.
    private static func handle(_ event: GPSEvent, recorder: WalkRecorder, status: StatusFile) {
        switch event {
        case let .fix(fix):
            recorder.record(fix)
            status.noteFix(recorder.status)
        case .noFix:
            // gpsd keeps reporting while the receiver has no fix (a tunnel, indoors): the last fix is
            // complete and what is due is synced now, not when the sky comes back.
            recorder.flush()
        case .idle:
            recorder.flush()
            status.update(gpsd: .connected, recording: recorder.status)
        case .connected:
            recorder.note(.gpsdConnected)
            status.update(gpsd: .connected, recording: recorder.status)
        case let .disconnected(reason):
            recorder.flush()
            recorder.note(.gpsdLost, message: reason)
            status.update(gpsd: .disconnected, recording: recorder.status)
        }
    }
}
