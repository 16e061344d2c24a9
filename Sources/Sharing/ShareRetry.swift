/// When a destination that refused the credentials (HTTP 401/403, MQTT "not authorised") is asked again: after
/// `first` seconds, then twice as long each time up to `rejectedMax`, for as long as the walk goes on. A proxy, a
/// captive portal or an authentication backend that blinked refuses once; asking slowly costs a wrong password
/// a few requests an hour.
package enum ShareRetry {
    package static let rejectedDefault = 60.0
    package static let rejectedMax = 1800.0

    /// The wait before the attempt after `refusals` refusals in a row (1 or more).
    package static func afterRejection(first: Double, refusals: Int) -> Double {
        min(rejectedMax, first * Double(1 << min(max(refusals - 1, 0), 20)))
    }

    /// "60 s", "30 min".
    package static func describe(_ seconds: Double) -> String {
        seconds >= 120 && seconds.truncatingRemainder(dividingBy: 60) == 0
            ? "\(Int(seconds / 60)) min" : "\(Int(seconds.rounded())) s"
    }
}
