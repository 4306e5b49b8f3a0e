#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Postgres

/// What the shared history says about each job, read in one place so that the
/// metrics, the alerts and every instance agree.
public struct HistoryReadings: Sendable {
    public struct Job: Sendable {
        public let name: String
        public let health: JobHealth
        /// Seconds since the epoch (database clock) of the last successful finish; nil: never.
        public let lastSuccess: Double?
        /// Seconds since the epoch of the last finished run, whatever its status; nil: never.
        public let lastRun: Double?
    }

    /// Skipped slots recorded since the cursor, by job and reason (a row counts
    /// `stats.missed_slots` slots when it says so, else one).
    public struct SkippedSlots: Sendable, Equatable {
        public let job: String
        public let reason: String
        public let slots: Int
    }

    public let jobs: [Job]

    /// Reads the readings of every enabled job.
    public static func read(_ connection: Connection, configuration: Configuration) throws -> HistoryReadings {
        let health = try JobHealth.assess(connection, configuration: configuration)
        let jobs = try health.map { health in
            let row = try connection.query("""
                SELECT (SELECT extract(epoch FROM max(finished_at)) FROM caretaker.job_runs
                        WHERE job = $1 AND NOT dry_run AND status = 'succeeded') AS last_success,
                       (SELECT extract(epoch FROM max(finished_at)) FROM caretaker.job_runs
                        WHERE job = $1 AND NOT dry_run AND status IN ('succeeded', 'failed', 'interrupted')) AS last_run
                """, health.job).first
            return Job(name: health.job, health: health, lastSuccess: row?.double("last_success"),
                       lastRun: row?.double("last_run"))
        }
        return HistoryReadings(jobs: jobs)
    }

    /// Skipped rows recorded since this process started (`uptime` ago, on the
    /// database clock) with an id above `cursor`, and the new cursor.
    ///
    /// Counted by tailing ids rather than over the whole history, so the counter
    /// never goes down when `prune` deletes old rows.
    public static func skippedSlots(_ connection: Connection, after cursor: Int64,
                                    uptime: Duration) throws -> ([SkippedSlots], Int64) {
        let rows = try connection.query("""
            SELECT job, coalesce(error, '') AS reason,
                   sum(CASE WHEN stats->>'missed_slots' ~ '^[0-9]+$' THEN (stats->>'missed_slots')::bigint ELSE 1 END) AS slots,
                   max(id) AS last_id
            FROM caretaker.job_runs
            WHERE id > $1 AND status = 'skipped' AND started_at >= clock_timestamp() - make_interval(secs => $2::float8)
            GROUP BY job, coalesce(error, '')
            ORDER BY job, reason
            """, cursor, uptime.seconds).rows
        let counts = rows.map { SkippedSlots(job: $0["job"] ?? "", reason: $0["reason"] ?? "", slots: $0.int("slots") ?? 0) }
        let newest = rows.compactMap { $0.int64("last_id") }.max() ?? cursor
        return (counts, max(cursor, newest))
    }
}
