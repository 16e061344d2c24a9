import WalkJournal
package import WalkModel

extension WalkLog {
    /// Every track point, read into memory: for tests, whose walks are short.
    package var points: [TrackPoint] {
        var all: [TrackPoint] = []
        try! forEachPoint { all.append($0) }
        return all
    }
}
