import Foundation
import ServiceLifecycle

/// The `fieldlog run` service: gpsd events in, walk journal out, until graceful shutdown.
public struct RecorderService: Service {
    private let reader: GPSDReader
    private let recorder: WalkRecorder
    private let status: StatusFile
    private let onEnd: @Sendable () -> Void

    /// `onEnd` runs once the session has ended and everything is synced.
    public init(
        reader: GPSDReader, recorder: WalkRecorder, status: StatusFile,
        onEnd: @escaping @Sendable () -> Void = {}
    ) {
        self.reader = reader
        self.recorder = recorder
        self.status = status
        self.onEnd = onEnd
    }

    public func run() async throws {
        let events = reader.events()
        try await recorder.note(.sessionStart, message: "pid \(getpid())")
        status.update(gpsd: .connecting, summary: await recorder.summary)
        try await withGracefulShutdownHandler {
            for await event in events {
                try await handle(event)
            }
        } onGracefulShutdown: { [reader] in
            reader.stop()
        }
        try await recorder.finishSession(reason: Task.isShuttingDownGracefully ? "stopped" : "gpsd stream ended")
        status.update(gpsd: .stopped, summary: await recorder.summary)
        onEnd()
    }

    private func handle(_ event: GPSEvent) async throws {
        switch event {
        case let .fix(fix):
            try await recorder.record(fix)
            status.noteFix(summary: await recorder.summary)
        case .idle:
            try await recorder.flush()
            status.update(gpsd: .connected, summary: await recorder.summary)
        case .connected:
            try await recorder.note(.gpsdConnected)
            status.update(gpsd: .connected, summary: await recorder.summary)
        case let .disconnected(reason):
            try await recorder.flush()
            try await recorder.note(.gpsdLost, message: reason)
            status.update(gpsd: .disconnected, summary: await recorder.summary)
        }
    }
}
