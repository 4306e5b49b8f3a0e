import CaretakerConfig
import CaretakerDatabase
import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `logout-inactive`: revokes sessions idle for `idle_timeout` (database clock).
///
/// Only `revoked_at` and `revoked_reason` change. The daemon also asks
/// `deadlines` when to look again, so a session is revoked within seconds of
/// going idle rather than at the next scheduled slot.
struct LogoutInactive: Job {
    let settings: LogoutInactiveSettings

    func run(_ context: JobContext) throws -> JobStats {
        let pass = LogoutInactivePass(settings: settings, context: context)
        try pass.run()
        return pass.stats
    }

    /// For the daemon's deadline wake-ups: whether a session that was already idle
    /// at `since` (the start of the last run) is still active (the run could not
    /// revoke it: the app holds it locked, or the update fails), and the seconds from
    /// the database's now until the first session that goes idle after `since` does
    /// (≤ 0: it already has; nil: none). Without `since`, every idle session is new.
    static func deadlines(
        _ connection: Connection, schema s: String, idleTimeout: Duration,
        since: Date?
    ) throws -> DeadlineAnswer {
        let row = try connection.query(
            LogoutInactiveQueries(schema: s).deadlines,
            idleTimeout.microseconds, since.map(\.timeIntervalSince1970) ?? -1e11
        ).first
        return DeadlineAnswer(stuck: row?.bool("stuck") == true && since != nil, secondsUntilNext: row?.double("wait"))
    }
}

/// One run of `logout-inactive`: its context, queries and counters.
private final class LogoutInactivePass {
    let context: JobContext
    let queries: LogoutInactiveQueries
    /// `idle_timeout` in microseconds (`$1` of every query).
    let timeout: Int64
    var stats = JobStats([("sessions_revoked", 0), ("sessions_blocked", 0)])

    init(settings: LogoutInactiveSettings, context: JobContext) {
        self.context = context
        queries = LogoutInactiveQueries(schema: context.schema)
        timeout = settings.idleTimeout.microseconds
    }

    func run() throws {
        if context.dryRun {
            let idle = try context.inBatch { try $0.query(queries.countIdle, timeout).first?.int("n") ?? 0 }
            stats = JobStats([("sessions_revoked", idle)])
            return
        }
        try context.repeatBatches(revokeBatch)
    }

    /// Revokes up to `batch_size` idle sessions (one at a time when the app
    /// protects one: a trigger, a lock); returns how many it looked at.
    private func revokeBatch() throws -> Int {
        let parameters: [any PostgresBindable] = [
            timeout, context.job.batchSize, context.blockedIDs("sessions_blocked"),
        ]
        let batch = try context.changeBatch(
            queries.revokeIdle, orOneByOne: queries.idleSessions, parameters,
            counter: "sessions_blocked"
        ) { connection, id in
            try connection.query(queries.revokeOne, timeout, id).affectedRows
        }
        stats.add("sessions_revoked", batch.changed)
        return batch.handled
    }
}

/// `[jobs.logout-inactive]`'s own keys.
public struct LogoutInactiveSettings: Sendable {
    public var idleTimeout: Duration = .seconds(600)
}

extension LogoutInactiveSettings {
    /// Reads them from the job's table, with their defaults and bounds.
    init(reading table: inout TableReader) throws(ConfigurationError) {
        idleTimeout = try table.duration("idle_timeout", default: .seconds(600), minimum: .seconds(1))
    }
}
