import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What can wake a job besides its schedule. The scheduler knows jobs only
/// through this declaration, never by name.
public struct JobWakeups: Sendable {
    /// The LISTEN channel whose NOTIFY runs the job soon (normal mode only).
    public var notifyChannel: String?
    /// Asks the database when the job's work is next due, so the job runs at that
    /// moment rather than at its next slot (normal mode only). Arguments: the
    /// connection, the quoted app schema, and when the job's last run started here.
    public var nextDeadline: (@Sendable (Connection, String, Date?) throws -> DeadlineAnswer)?
    /// The longest wait between deadline queries: work that appears later cannot
    /// come due before then.
    public var deadlineLookahead: Duration?

    public static let scheduleOnly = JobWakeups()
}

/// What a job's deadline query says.
public struct DeadlineAnswer: Sendable, Equatable {
    /// Work that was due when the last run started is still not done: that run could
    /// not do it (rows locked by the app, or a failure), so it waits for the retry rules.
    public var stuck: Bool
    /// Seconds until the first work that came due after the last run started
    /// (≤ 0: due now, a `deadline` run starts); nil when there is none.
    public var secondsUntilNext: Double?

    public init(stuck: Bool = false, secondsUntilNext: Double?) {
        self.stuck = stuck
        self.secondsUntilNext = secondsUntilNext
    }
}
