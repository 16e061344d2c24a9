import SystemIO

/// One request at a time, and none before the time a server asked to wait for (`Retry-After`): Wikimedia
/// asks clients to send requests one after another, and to back off when told to (maxlag, 429).
package actor RequestTurn {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private let clock = ContinuousClock()
    private var notBefore: ContinuousClock.Instant

    package init() {
        notBefore = clock.now
    }

    /// Waits for the previous request to end, then for any wait the server asked for.
    package func begin() async {
        if busy {
            await withCheckedContinuation { waiting.append($0) }
        } else {
            busy = true
        }
        let wait = notBefore - clock.now
        if wait > .zero { try? await sleepOnEventLoop(for: wait) }
    }

    /// Hands the turn to the next request waiting, if any.
    package func end() {
        if waiting.isEmpty {
            busy = false
        } else {
            waiting.removeFirst().resume()
        }
    }

    /// No request before `seconds` from now.
    package func holdOff(seconds: Double) {
        notBefore = max(notBefore, clock.now + .milliseconds(Int64(seconds * 1000)))
    }
}
