import SystemIO

/// Paces requests under a per-hour quota (Flickr allows 3600 calls per key per hour; searches and image
/// downloads both count here). A token bucket on the monotonic clock: network pacing is about real time,
/// unlike the walk, which runs on GPS time.
package actor RequestBudget {
    private let perHour: Int
    private let clock = ContinuousClock()
    private var tokens: Double
    private var refilled: ContinuousClock.Instant
    /// A small burst, so that a back-fill after an outage starts at once but soon settles to the rate.
    private let burst: Double

    package init(perHour: Int = 3000, burst: Int = 20) {
        self.perHour = perHour
        self.burst = Double(burst)
        tokens = Double(burst)
        refilled = clock.now
    }

    /// Set for work that must leave the budget to the walk being recorded (older walks' milestones): such a
    /// request waits until the bucket is full, so that the live walk always finds the burst it would have
    /// with no history, and the backlog goes at the steady rate.
    @TaskLocal package static var isBackground = false

    /// Waits until a request may be made, and counts it.
    package func acquire() async {
        let needed = Self.isBackground ? burst : 1
        while true {
            refill()
            if tokens >= needed {
                tokens -= 1
                return
            }
            let wait = (needed - tokens) * 3600 / Double(perHour)
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
