import CaretakerDatabase
import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The database clock, read once and carried forward with the monotonic clock,
/// so the scheduler can sleep without asking the server every time and without
/// ever trusting the host's wall clock (every time decision uses the database's clock).
///
/// Carried forward from when the reading arrived, it stays behind the server's clock
/// (by the reply's way back): a slot the scheduler finds due on a fresh reading is
/// due on the server when its run claims it, so "not due yet" is decided once, here,
/// before a connection or a thread is taken.
struct ClockEstimate: Sendable {
    private var databaseTime: Date
    private var readAt: ContinuousClock.Instant

    init(databaseTime: Date, readAt: ContinuousClock.Instant = .now) {
        self.databaseTime = databaseTime
        self.readAt = readAt
    }

    /// Re-reads the server's clock.
    mutating func refresh(_ connection: Connection) throws {
        let serverTime = try DatabaseClock.now(connection)
        // No credit for the round trip: the estimate must never run ahead of the server.
        databaseTime = serverTime
        readAt = .now
    }

    /// The database's "now", estimated (never ahead of it, but for the server's clock stepping back).
    var now: Date {
        databaseTime.addingTimeInterval((ContinuousClock.now - readAt).seconds)
    }

    /// How long until `date` on the database clock (zero when it has passed).
    func duration(until date: Date) -> Duration {
        let seconds = date.timeIntervalSince(now)
        return seconds > 0 ? .microseconds(Int64(seconds * 1_000_000)) : .zero
    }
}
