import SystemIO

/// Paces requests under a per-hour quota (Flickr allows 3600 calls per key per hour; searches and image
/// downloads both count here). A token bucket on the monotonic clock: network pacing is about real time,
/// unlike the walk, which runs on GPS time.
public actor RequestBudget {
    private let perHour: Int
    private let clock = ContinuousClock()
    private var tokens: Double
    private var refilled: ContinuousClock.Instant
    /// A small burst, so that a back-fill after an outage starts at once but soon settles to the rate.
    private let burst: Double

    public init(perHour: Int = 3000, burst: Int = 20) {
        self.perHour = perHour
        self.burst = Double(burst)
        tokens = Double(burst)
        refilled = clock.now
    }

    /// Waits until a request may be made, and counts it.
    public func acquire() async {
        while true {
            refill()
            if tokens >= 1 {
                tokens -= 1
                return
            }
            let wait = (1 - tokens) * 3600 / Double(perHour)
            try? await sleepOnEventLoop(for: .seconds(wait))
            if Task.isCancelled { return }
        }
    }

    private func refill() {
        let now = clock.now
        let elapsed = now - refilled
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        tokens = min(burst, tokens + seconds * Double(perHour) / 3600)
        refilled = now
    }
}
