/// How a simulated GPS receiver reports a true path: the errors real receivers make, as gpsd passes
/// them on.
package struct Receiver: Sendable {
    /// Standard deviation (metres, per axis) of the slowly wandering position error, and the time
    /// constant (seconds) it wanders with: a first-order Gauss-Markov process, as a receiver's Kalman
    /// filter leaves multipath and atmosphere errors.
    package var wander: Double
    package var wanderTime: Double
    /// Independent noise on top, uniform up to this many metres in any direction.
    package var jitter: Double
    /// The eph gpsd will report: gpsd makes it 19 x HDOP for NMEA receivers, whatever the true error.
    package var reportedError: Double
    /// Whether the receiver measures its speed (Doppler) and sends speed and course. Without, the RMC
    /// sentence has empty fields and gpsd derives a speed from positions and sends no course.
    package var measuresSpeed: Bool
    /// Standard deviation (m/s, per axis) of the measured velocity's error: the reported speed is the
    /// length of (true velocity + error), never exactly zero, and the course is noisy at low speed.
    package var speedNoise: Double
    /// Some receivers leave the course empty when they hardly move.
    package var dropsCourseWhenSlow: Bool
    /// A marine plotter's order (the bundled B&G Zeus² capture): each second GGA labelled with the second
    /// before, GLL (in stretches labelled so too), RMC, VTG and the compass's HDG. gpsd 3.25 starts a cycle at
    /// GLL and in those stretches reports no Doppler speed: `SyntheticWalk.fixes` are then as it reports them.
    package var startsWithGLL: Bool

    package init(
        wander: Double = 0, wanderTime: Double = 60, jitter: Double = 1, reportedError: Double = 17.1,
        measuresSpeed: Bool = true, speedNoise: Double = 0.1, dropsCourseWhenSlow: Bool = false,
        startsWithGLL: Bool = false
    ) {
        self.wander = wander
        self.wanderTime = wanderTime
        self.jitter = jitter
        self.reportedError = reportedError
        self.measuresSpeed = measuresSpeed
        self.speedNoise = speedNoise
        self.dropsCourseWhenSlow = dropsCourseWhenSlow
        self.startsWithGLL = startsWithGLL
    }

    /// A receiver in a pocket as the distance goals describe it: position error wandering with `wander`
    /// metres, eph as reported, speed measured or not.
    package static func realistic(wander: Double, reportedError: Double, measuresSpeed: Bool = true) -> Receiver {
        Receiver(
            wander: wander, wanderTime: 60, jitter: 0.5, reportedError: reportedError, measuresSpeed: measuresSpeed,
            speedNoise: 0.12)
    }
}
