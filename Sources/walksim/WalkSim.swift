import ArgumentParser
import Foundation
import WalkSimulation

/// Writes a generated walk as an NMEA capture for gpsfake, and prints what was really walked.
@main
struct WalkSim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "walksim",
        abstract: "Write a generated walk as NMEA 0183, with the truth about it.",
        discussion: """
            The walk follows SHAPE (one of \(PathShape.allCases.map(\.rawValue).joined(separator: ", "))) \
            and is reported by a receiver whose position wanders with --wander metres and whose eph is \
            --eph metres. Prints one JSON object: the true length in metres, the epochs and the milestones \
            a walk of that length has.
            """)

    @Argument(help: "The path's shape.")
    var shape: String

    @Option(help: "Where to write the NMEA capture.")
    var out: String

    @Option(help: "Standard deviation of the wandering position error, metres.")
    var wander: Double = 4

    @Option(help: "The eph gpsd is to report, metres (sent as HDOP = eph / 19).")
    var eph: Double = 15

    @Flag(help: "A receiver without Doppler speed: empty speed and course in RMC.")
    var noSpeed = false

    @Flag(help: "A marine plotter's order: GGA labelled a second early, GLL, RMC, VTG, HDG.")
    var gllFirst = false

    @Option(help: "Seed of the shape's and the receiver's randomness.")
    var seed: UInt64 = 1

    @Option(help: "A milestone every this many metres, for the expected milestone count.")
    var every: Double = 100

    func run() throws {
        guard let path = PathShape(rawValue: shape) else {
            throw ValidationError("unknown shape '\(shape)'")
        }
        var receiver = Receiver.realistic(wander: wander, reportedError: eph, measuresSpeed: !noSpeed)
        receiver.startsWithGLL = gllFirst
        let walk = path.walk(receiver: receiver, seed: seed)
        try walk.write(to: out)
        let milestones = Int((walk.trueDistance / every).rounded(.down)) + 1
        print(
            #"{"shape":"\#(shape)","walked":\#(walk.trueDistance),"epochs":\#(walk.epochs),"milestones":\#(milestones)}"#
        )
    }
}
