#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Postgres

/// Whether each enabled job is healthy: its last run did not fail, its last
/// success is recent enough (`stale_after`, default three periods), and its runs
/// do not keep skipping rows the app protects (the last `blockedRunsLimit` runs
/// each reporting a `…_blocked` counter above zero: the same rows, most likely,
/// that only the app's owner can set free).
public struct JobHealth: Sendable {
    public let job: String
    public let healthy: Bool
    /// Why, in a phrase an operator can act on.
    public let reason: String
    public let lastStatus: String?
    public let lastSuccessAt: String?

    /// This many finished runs in a row with blocked rows make a job unhealthy.
    public static let blockedRunsLimit = 3

    /// Judges every enabled job against the database clock.
    public static func assess(_ connection: Connection, configuration: Configuration) throws -> [JobHealth] {
        guard let clock = try connection.query("""
            SELECT extract(epoch FROM now()) AS now,
                   (SELECT extract(epoch FROM min(applied_at)) FROM caretaker.schema_migrations) AS installed
            """).first, let now = clock.double("now") else { return [] }
        let installed = clock.double("installed") ?? now
        return try configuration.jobs.filter(\.enabled).map { job in
            try assess(job, connection: connection, now: now, installed: installed)
        }
    }

    /// The latest run's blocked counters (`posts_blocked=1`) when each of the last
    /// `blockedRunsLimit` finished runs blocked some rows; else nil.
    private static func keepsBlocking(_ job: JobConfiguration, connection: Connection) throws -> String? {
        let row = try connection.query("""
            SELECT count(*) AS runs, count(blocked) AS blocked, (array_agg(blocked ORDER BY started_at DESC, id DESC))[1] AS latest
            FROM (SELECT r.started_at, r.id,
                         (SELECT string_agg(e.key || '=' || e.value, ' ' ORDER BY e.key) FROM jsonb_each_text(r.stats) e
                          WHERE e.key LIKE '%\\_blocked' AND e.value <> '0') AS blocked
                  FROM caretaker.job_runs r
                  WHERE r.job = $1 AND NOT r.dry_run AND r.status IN ('succeeded', 'failed', 'interrupted')
                  ORDER BY r.started_at DESC, r.id DESC LIMIT $2) recent
            """, job.name, blockedRunsLimit).first
        guard let row, row.int("runs") == blockedRunsLimit, row.int("blocked") == blockedRunsLimit else { return nil }
        return row["latest"]
    }

    private static func assess(_ job: JobConfiguration, connection: Connection, now: Double, installed: Double) throws -> JobHealth {
        let row = try connection.query("""
            SELECT (SELECT status FROM caretaker.job_runs
                    WHERE job = $1 AND NOT dry_run AND status IN ('succeeded', 'failed', 'interrupted')
                    ORDER BY started_at DESC, id DESC LIMIT 1) AS last_status,
                   (SELECT error FROM caretaker.job_runs
                    WHERE job = $1 AND NOT dry_run AND status IN ('succeeded', 'failed', 'interrupted')
                    ORDER BY started_at DESC, id DESC LIMIT 1) AS last_error,
                   (SELECT extract(epoch FROM max(finished_at)) FROM caretaker.job_runs
                    WHERE job = $1 AND NOT dry_run AND status = 'succeeded') AS last_success,
                   (SELECT to_char(max(finished_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') FROM caretaker.job_runs
                    WHERE job = $1 AND NOT dry_run AND status = 'succeeded') AS last_success_text
            """, job.name).first
        let lastStatus = row?["last_status"]
        let lastSuccess = row?.double("last_success")
        let stale = job.staleness(after: Date(timeIntervalSince1970: now)).seconds
        let staleText = DurationText.format(.seconds(Int64(stale.rounded())))
        func health(_ healthy: Bool, _ reason: String) -> JobHealth {
            JobHealth(job: job.name, healthy: healthy, reason: reason, lastStatus: lastStatus, lastSuccessAt: row?["last_success_text"])
        }
        if lastStatus == "failed" {
            return health(false, "last run failed: \(row?["last_error"] ?? "no error recorded")")
        }
        guard let lastSuccess else {
            if now - installed > stale {
                return health(false, "has never succeeded, and the schema was migrated more than \(staleText) ago")
            }
            return health(true, "has not run yet")
        }
        if now - lastSuccess > stale {
            return health(false, "last success is older than stale_after (\(staleText))")
        }
        if let blocked = try keepsBlocking(job, connection: connection) {
            return health(false, "the last \(blockedRunsLimit) runs each skipped rows the app protects (latest: \(blocked)): "
                + "the run's warning in the log names the constraint or trigger and the rows")
        }
        return health(true, "ok")
    }
}
