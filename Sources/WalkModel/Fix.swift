/// One position report from the receiver, already cleaned of libgps's "not set" states.
package struct Fix: Sendable, Equatable {
    /// GPS time, seconds since 1970-01-01 UTC. The walk runs on this clock, never the system's.
    package var time: Double
    package var latitude: Double
    package var longitude: Double
    /// Metres above the WGS84 ellipsoid, only for 3D fixes.
    package var altitude: Double?
    /// Estimated horizontal error in metres (gpsd's eph, 95 %).
    package var horizontalError: Double?
    /// 2 for a 2D fix, 3 for 3D.
    package var mode: Int
    /// Speed over ground, m/s. Receivers measure it from the Doppler shift; for receivers that send none,
    /// gpsd derives it from positions (and then sends no `track`).
    package var speed: Double?
    /// Course over ground, degrees from true north.
    package var track: Double?

    package init(
        time: Double, latitude: Double, longitude: Double, altitude: Double? = nil,
        horizontalError: Double? = nil, mode: Int = 3, speed: Double? = nil, track: Double? = nil
    ) {
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.horizontalError = horizontalError
        self.mode = mode
        self.speed = speed
        self.track = track
    }
}

extension Fix {
    /// No civilian receiver reports more: export rules (CoCom) make them stop above 1000 knots.
    package static let maximumSpeed = 514.4
    /// Beyond this (metres from the ellipsoid) an altitude is no walk's.
    package static let maximumAltitude = 50_000.0

    /// The fix without the values no receiver can mean (NaN, infinities, negative or impossible speeds and
    /// errors), each taken as not reported: they must never reach the distance or the journal.
    package var bounded: Fix {
        var fix = self
        if let speed, !(0...Self.maximumSpeed).contains(speed) { fix.speed = nil }
        if let track, !(0...360).contains(track) { fix.track = nil }
        if let horizontalError, !(horizontalError.isFinite && horizontalError >= 0) { fix.horizontalError = nil }
        if let altitude, !(-Self.maximumAltitude...Self.maximumAltitude).contains(altitude) { fix.altitude = nil }
        return fix
    }
}
