#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Postgres

/// What can wake a job besides its schedule. The scheduler knows jobs only
/// through this declaration, never by name.
public struct JobWakeups: Sendable {
    /// The LISTEN channel whose NOTIFY runs the job soon (normal mode only).
    public var notifyChannel: String?
    /// Asks the database how many seconds remain until the job's work is next due
    /// (`nil`: nothing pending, ≤ 0: due now), so the job runs at that moment rather
    /// than at its next slot. Normal mode only. Arguments: the connection and the
    /// quoted app schema.
    public var nextDeadline: (@Sendable (Connection, String) throws -> Double?)?
    /// The longest wait between deadline queries: work that appears later cannot
    /// come due before then.
    public var deadlineLookahead: Duration?

    public static let scheduleOnly = JobWakeups()
}

extension SendTempPasswords {
    /// The migrations' trigger on `password_reset_requests` NOTIFYs this channel.
    static let notifyChannel = "caretaker_send_temp_passwords"
}

extension LeaderSuccession {
    /// The migrations' triggers on members, communities and users NOTIFY this channel.
    static let notifyChannel = "caretaker_leader_succession"
}

extension JobConfiguration {
    /// What wakes this job besides its schedule.
    public var wakeups: JobWakeups {
        switch settings {
        case .sendTempPasswords: JobWakeups(notifyChannel: SendTempPasswords.notifyChannel)
        case .leaderSuccession: JobWakeups(notifyChannel: LeaderSuccession.notifyChannel)
        case .logoutInactive(let settings):
            JobWakeups(nextDeadline: { connection, schema in
                try LogoutInactive.secondsUntilNextDeadline(connection, schema: schema, idleTimeout: settings.idleTimeout)
            }, deadlineLookahead: settings.idleTimeout)
        case .expireContent, .prune, .sql: .scheduleOnly
        }
    }
}
