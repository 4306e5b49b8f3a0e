import Postgres

/// `logout-inactive`: revokes sessions idle for `idle_timeout` (database clock).
///
/// Only `revoked_at` and `revoked_reason` change. The daemon also asks
/// `nextDeadline` when to look again, so a session is revoked within seconds of
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
        var stats = JobStats([("sessions_revoked", 0)])
        while !context.shouldStop {
            let revoked = try context.inBatch { connection in
                try connection.query("""
                    WITH idle AS (
                        SELECT id FROM \(s).sessions
                        WHERE revoked_at IS NULL AND last_seen_at <= now() - $1::bigint * interval '1 microsecond'
                        ORDER BY last_seen_at LIMIT $2
                        FOR UPDATE SKIP LOCKED
                    )
                    UPDATE \(s).sessions t SET revoked_at = now(), revoked_reason = 'inactivity'
                    FROM idle WHERE t.id = idle.id
                    """, timeout, context.job.batchSize).affectedRows
            }
            stats.add("sessions_revoked", revoked)
            if revoked < context.job.batchSize { break }
            context.pauseBetweenBatches()
        }
        if context.wasInterrupted { throw JobInterrupted(stats: stats) }
        return stats
    }

    /// Seconds from the database's now until the next active session goes idle;
    /// `nil` when no session is active.
    static func secondsUntilNextDeadline(_ connection: Connection, schema s: String,
                                         idleTimeout: Duration) throws -> Double? {
        let row = try connection.query("""
            SELECT extract(epoch FROM min(last_seen_at) + $1::bigint * interval '1 microsecond' - now()) AS wait
            FROM \(s).sessions WHERE revoked_at IS NULL
            """, idleTimeout.microseconds).first
        return row?.double("wait")
    }
}
