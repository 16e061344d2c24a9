import Foundation
package import WalkJournal
import WalkModel

/// Journals of walks whose milestones wait for photos, written as the recorder writes them: for tests of
/// what the photo service serves, and in which order.
package enum PendingWalks {
    /// A walk east from `origin` with a milestone every 100 m, none of them served; `fixes` track points
    /// before the first milestone (the bulk of a real journal); closed unless `open`.
    @discardableResult
    package static func write(
        start: Double, origin: (lat: Double, lon: Double), milestones: Int, fixes: Int = 0, open: Bool = false,
        in store: JournalStore
    ) throws -> String {
        let id = store.newWalkID(startingAt: start)
        var lines = [JournalCodec.encode(.walkStart(id: id, time: start, every: 100))]
        for second in 0..<fixes {
            let fix = Fix(
                time: start + Double(second), latitude: origin.lat, longitude: origin.lon, altitude: 40,
                horizontalError: 4, mode: 3, speed: 0, track: 90)
            lines.append(JournalCodec.encode(.point(TrackPoint(fix: fix, segment: 0, distance: 0))))
        }
        for index in 0..<milestones {
            let spot = Geodesy.destination(origin.lat, origin.lon, bearing: 90, distance: Double(index) * 100)
            let time = start + Double(fixes) + Double(index) * 70
            let fix = Fix(
                time: time, latitude: spot.lat, longitude: spot.lon, altitude: 40, horizontalError: 4, mode: 3,
                speed: 1.4, track: 90)
            lines.append(JournalCodec.encode(.point(TrackPoint(fix: fix, segment: 0, distance: Double(index) * 100))))
            lines.append(
                JournalCodec.encode(
                    .milestone(
                        Milestone(
                            index: index, time: time, latitude: spot.lat, longitude: spot.lon,
                            distance: Double(index) * 100))))
        }
        if !open {
            lines.append(
                JournalCodec.encode(
                    .walkEnd(time: start + Double(fixes) + Double(milestones) * 70, distance: Double(milestones) * 100))
            )
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: store.path(for: id), atomically: true, encoding: .utf8)
        return id
    }
}
