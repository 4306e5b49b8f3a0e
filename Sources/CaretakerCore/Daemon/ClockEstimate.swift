import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The database clock, read once and carried forward with the monotonic clock,
/// so the scheduler can sleep without asking the server every time and without
/// ever trusting the host's wall clock (every time decision uses the database's clock).
struct ClockEstimate: Sendable {
    private var databaseTime: Date
    private var readAt: ContinuousClock.Instant

    init(databaseTime: Date, readAt: ContinuousClock.Instant = .now) {
        self.databaseTime = databaseTime
        self.readAt = readAt
    }

    /// Re-reads the server's clock.
    mutating func refresh(_ connection: Connection) throws {
        let before = ContinuousClock.now
        let serverTime = try DatabaseClock.now(connection)
        // Credit half the round trip, so the estimate is centred on the reading.
        let after = ContinuousClock.now
        databaseTime = serverTime
        readAt = before + (after - before) / 2
    }

    /// The database's "now", estimated.
    var now: Date {
        databaseTime.addingTimeInterval((ContinuousClock.now - readAt).seconds)
    }

    /// How long until `date` on the database clock (zero when it has passed).
    func duration(until date: Date) -> Duration {
        let seconds = date.timeIntervalSince(now)
        return seconds > 0 ? .microseconds(Int64(seconds * 1_000_000)) : .zero
    }
}
