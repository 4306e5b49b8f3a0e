/// When the daemon refreshes its metrics and alerts: right at start, after each
/// run's end, and every `interval` while nothing ends (so a job that goes stale
/// while nothing runs is still noticed, and `caretaker_database_up` stays current);
/// one refresh at a time, and a run that ends during one asks for another right
/// after it. A decision apart from I/O: the daemon's event loop asks it and
/// carries out its answers, on the loop's own thread.
package struct MonitoringPlan: Sendable {
    package typealias Instant = ContinuousClock.Instant

    /// Nothing is ever due when the daemon has no refreshes of its own (low-footprint mode, or neither metrics nor alerts).
    let enabled: Bool
    let interval: Duration
    private var due: Instant
    /// A refresh is under way (between `startRefresh` and `refreshEnded`).
    package private(set) var refreshing = false
    private var wantedAgain = false

    package init(enabled: Bool, interval: Duration, now: Instant) {
        self.enabled = enabled
        self.interval = interval
        due = now
    }

    /// A run ended: its figures should show now.
    package mutating func runEnded(now: Instant) {
        guard enabled else { return }
        if refreshing {
            wantedAgain = true
        } else {
            due = min(due, now)
        }
    }

    /// True when a refresh is to start now; it is then under way until `refreshEnded`.
    package mutating func startRefresh(now: Instant) -> Bool {
        guard enabled, !refreshing, now >= due else { return false }
        refreshing = true
        return true
    }

    /// The refresh under way ended: the next is due after `interval`, or at once when a run ended meanwhile.
    package mutating func refreshEnded(now: Instant) {
        refreshing = false
        due = wantedAgain ? now : now + interval
        wantedAgain = false
    }

    /// How long until a refresh is to start; nil while one is under way or when there are none.
    package func timeUntilRefresh(now: Instant) -> Duration? {
        guard enabled, !refreshing else { return nil }
        return max(.zero, now.duration(to: due))
    }
}
