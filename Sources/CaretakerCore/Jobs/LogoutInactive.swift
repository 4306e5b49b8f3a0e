#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Postgres

/// `logout-inactive`: revokes sessions idle for `idle_timeout` (database clock).
///
/// Only `revoked_at` and `revoked_reason` change. The daemon also asks
/// `deadlines` when to look again, so a session is revoked within seconds of
/// going idle rather than at the next scheduled slot.
struct LogoutInactive: Job {
    let settings: LogoutInactiveSettings

    func run(_ context: JobContext) throws -> JobStats {
        let s = context.schema
        let timeout = settings.idleTimeout.microseconds
        if context.dryRun {
            let row = try context.inBatch { connection in
                try connection.query("""
                    SELECT count(*) AS n FROM \(s).sessions
                    WHERE revoked_at IS NULL AND last_seen_at <= now() - $1::bigint * interval '1 microsecond'
                    """, timeout).first
            }
            return JobStats([("sessions_revoked", row?.int("n") ?? 0)])
        }
        var stats = JobStats([("sessions_revoked", 0), ("sessions_blocked", 0)])
        while !context.shouldStop {
            let parameters: [any PostgresBindable] = [timeout, context.job.batchSize, context.blockedIDs("sessions_blocked")]
            let handled: Int
            do {
                handled = try context.inBatch { connection in
                    try connection.query("""
                        WITH idle AS (\(Self.idleSessions(schema: s)) FOR UPDATE SKIP LOCKED)
                        UPDATE \(s).sessions t SET revoked_at = now(), revoked_reason = 'inactivity'
                        FROM idle WHERE t.id = idle.id
                        """, parameters).affectedRows
                }
                stats.add("sessions_revoked", handled)
            } catch let error as PostgresError where error.isRowLevel {
                // A session the app protects (a trigger, a lock): the batch again, one session at a time.
                let idle = try context.inBatch { connection in
                    try connection.query(Self.idleSessions(schema: s), parameters).rows.compactMap { $0["id"] }
                }
                handled = idle.count
                let revoked = try context.oneByOne(idle, counter: "sessions_blocked") { connection, id in
                    try connection.query("""
                        UPDATE \(s).sessions SET revoked_at = now(), revoked_reason = 'inactivity'
                        WHERE id = $2 AND revoked_at IS NULL AND last_seen_at <= now() - $1::bigint * interval '1 microsecond'
                        """, timeout, id).affectedRows
                }
                stats.add("sessions_revoked", revoked.reduce(0, +))
            }
            if handled < context.job.batchSize { break }
            context.pauseBetweenBatches()
        }
        return try context.finish(stats)
    }

    /// Up to `$2` sessions idle for `$1` µs, oldest first, leaving out `$3` (blocked this run) → `id`.
    private static func idleSessions(schema s: String) -> String {
        """
        SELECT id FROM \(s).sessions
        WHERE revoked_at IS NULL AND last_seen_at <= now() - $1::bigint * interval '1 microsecond' AND id <> ALL($3)
        ORDER BY last_seen_at LIMIT $2
        """
    }

    /// For the daemon's deadline wake-ups: whether a session that was already idle
    /// at `since` (the start of the last run) is still active (the run could not
    /// revoke it: the app holds it locked, or the update fails), and the seconds from
    /// the database's now until the first session that goes idle after `since` does
    /// (≤ 0: it already has; nil: none). Without `since`, every idle session is new.
    static func deadlines(_ connection: Connection, schema s: String, idleTimeout: Duration,
                          since: Date?) throws -> DeadlineAnswer {
        let row = try connection.query("""
            SELECT EXISTS (SELECT 1 FROM \(s).sessions
                           WHERE revoked_at IS NULL
                             AND last_seen_at <= to_timestamp($2::float8) - $1::bigint * interval '1 microsecond') AS stuck,
                   extract(epoch FROM (SELECT min(last_seen_at) FROM \(s).sessions
                                       WHERE revoked_at IS NULL
                                         AND last_seen_at > to_timestamp($2::float8) - $1::bigint * interval '1 microsecond')
                                      + $1::bigint * interval '1 microsecond' - now()) AS wait
            """, idleTimeout.microseconds, since.map(\.timeIntervalSince1970) ?? -1e11).first
        return DeadlineAnswer(stuck: row?.bool("stuck") == true && since != nil, secondsUntilNext: row?.double("wait"))
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
