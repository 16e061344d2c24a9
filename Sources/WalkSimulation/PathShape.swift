import Foundation

/// The paths people take, each about two kilometres (a ride three), for measuring distance against what
/// was really walked. Every shape is deterministic for its seed.
package enum PathShape: String, CaseIterable, Sendable {
    case straight
    /// A trail zigzagging up a slope: 40 m legs, 130-degree turns, at hiking pace.
    case switchbacks
    /// City blocks of 25 m, turning left or right at every corner.
    case streetGrid = "street-grid"
    /// A path winding left and right through a park.
    case curvy
    /// Running at 3 m/s along streets with right-angle turns every 100 m.
    case run
    /// Cycling at 6 m/s, blocks of 150-300 m.
    case ride
    /// A walk with stops of 5 s, 30 s, 2 min, 10 min and an hour.
    case stops
    /// Two tunnels without a fix: 20 s (within a segment) and 60 s (a segment break).
    case tunnels
    /// Wild single fixes and a reflection that holds the position 40 m off for 8 s.
    case multipath
    /// Ten minutes standing in one place.
    case standing

    package func stretches(seed: UInt64) -> [SyntheticWalk.Stretch] {
        var random = SplitMix(seed: seed)
        func side() -> Double { random.next(in: 0..<1) < 0.5 ? -1 : 1 }
        switch self {
        case .straight:
            return [.leg(metres: 2000, speed: 1.4)]
        case .switchbacks:
            return (0..<50).flatMap { leg in [.leg(metres: 40, speed: 1.1), .turn(degrees: leg % 2 == 0 ? 130 : -130)] }
        case .streetGrid:
            return (0..<80).flatMap { _ in [.leg(metres: 25, speed: 1.4), .turn(degrees: 90 * side())] }
        case .curvy:
            // Turning rate swinging between +-4 degrees a second over a minute: bends of about 75 degrees.
            return (0..<143).map { (chunk: Int) -> SyntheticWalk.Stretch in
                let turn: Double = 4 * sin(Double(chunk) * 2 * Double.pi / 6)
                return .walk(seconds: 10, speed: 1.4, turn: turn)
            }
        case .run:
            return (0..<20).flatMap { _ in [.leg(metres: 100, speed: 3), .turn(degrees: 90 * side())] }
        case .ride:
            return (0..<14).flatMap { _ in
                [.leg(metres: random.next(in: 150..<300), speed: 6), .turn(degrees: 90 * side())]
            }
        case .stops:
            return [5, 30, 120, 600, 3600].flatMap { pause in
                [.leg(metres: 330, speed: 1.4), .turn(degrees: 60 * side()), .stand(seconds: pause, jitter: 0.5)]
            } + [.leg(metres: 350, speed: 1.4)]
        case .tunnels:
            return [
                .leg(metres: 600, speed: 1.4), .noFix(seconds: 20, speed: 1.4), .leg(metres: 300, speed: 1.4),
                .turn(degrees: 45), .leg(metres: 300, speed: 1.4), .noFix(seconds: 60, speed: 1.4),
                .leg(metres: 716, speed: 1.4),
            ]
        case .multipath:
            return (0..<5).flatMap { stretch in
                [
                    .leg(metres: 190, speed: 1.4), .outlier(metres: 60), .leg(metres: 190, speed: 1.4),
                    .turn(degrees: 30 * side()),
                    stretch == 2 ? .multipath(seconds: 8, metres: 40, speed: 1.4) : .outlier(metres: 120),
                ]
            }
        case .standing:
            return [.stand(seconds: 600, jitter: 0.5)]
        }
    }

    /// The walk itself, as `receiver` reports it.
    package func walk(receiver: Receiver, seed: UInt64) -> SyntheticWalk {
        var walk = SyntheticWalk(seed: seed, receiver: receiver)
        walk.add(stretches(seed: seed))
        return walk
    }
}
