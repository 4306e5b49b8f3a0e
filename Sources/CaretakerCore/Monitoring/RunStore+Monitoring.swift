import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What monitoring reads of caretaker's run history and keeps of its alert states:
/// the skipped slots the metrics count, the rows `caretaker status` shows, the run an
/// alert mail names, and `caretaker.job_alerts`. Kept here, beside the types it
/// returns, so that the history knows nothing of monitoring.
extension RunStore {
    /// Skipped rows with an id above `afterID`, started since a minute before
    /// `lookedAt` (or, without one, within `uptime`), by job and reason, with the
    /// number of slots each stands for and the highest id counted.
    public func skippedSlots(
        afterID: Int64, lookedAt: Double?, uptime: Duration
    ) throws
        -> [(counts: HistoryReadings.SkippedSlots, lastID: Int64?)]
    {
        try connection.query(
            """
            SELECT job, coalesce(error, '') AS reason,
                   sum(CASE WHEN stats->>'missed_slots' ~ '^[0-9]+$' THEN (stats->>'missed_slots')::bigint ELSE 1 END) AS slots,
                   max(id) AS last_id
            FROM caretaker.job_runs
            WHERE status = 'skipped' AND id > $1
              AND started_at >= coalesce(to_timestamp($2::float8) - interval '1 minute',
                                         clock_timestamp() - make_interval(secs => $3::float8))
            GROUP BY job, coalesce(error, '')
            ORDER BY job, reason
            """, afterID, lookedAt, uptime.seconds
        ).rows.map {
            (
                HistoryReadings.SkippedSlots(
                    job: $0["job"] ?? "", reason: $0["reason"] ?? "", slots: $0.int("slots") ?? 0),
                $0.int64("last_id")
            )
        }
    }

    /// `job`'s latest row that is not `running` (dry runs left out), as `caretaker status` shows it.
    public func lastRun(job: String) throws -> StatusReport.LastRun? {
        try connection.query(
            """
            SELECT id, status, trigger, stats::text AS stats, error, host, pid,
                   to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS started,
                   extract(epoch FROM clock_timestamp() - started_at)::float8 AS age,
                   (extract(epoch FROM finished_at - started_at) * 1000)::bigint AS duration_ms
            FROM caretaker.job_runs
            WHERE job = $1 AND NOT dry_run AND status <> 'running'
            ORDER BY started_at DESC, id DESC LIMIT 1
            """, job
        ).first.map {
            StatusReport.LastRun(
                id: $0.int64("id") ?? 0, status: $0["status"] ?? "", trigger: $0["trigger"] ?? "",
                startedAt: $0["started"] ?? "", ageSeconds: $0.double("age") ?? 0,
                durationMilliseconds: $0.int("duration_ms"), stats: $0["stats"] ?? "{}",
                error: $0["error"], host: $0["host"] ?? "", pid: $0.int("pid") ?? 0)
        }
    }

    /// `job`'s `running` rows, oldest first, each with whether its process still holds the job's lock.
    public func running(job: String) throws -> [StatusReport.Running] {
        try connection.query(
            """
            SELECT id, host, pid, caretaker.job_lock_held(job) AS alive,
                   to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS started,
                   extract(epoch FROM clock_timestamp() - started_at)::float8 AS running_for
            FROM caretaker.job_runs
            WHERE job = $1 AND status = 'running'
            ORDER BY started_at, id
            """, job
        ).rows.map {
            StatusReport.Running(
                id: $0.int64("id") ?? 0, host: $0["host"] ?? "", pid: $0.int("pid") ?? 0,
                startedAt: $0["started"] ?? "", forSeconds: $0.double("running_for") ?? 0,
                alive: $0.bool("alive") ?? false)
        }
    }

    /// `job`'s latest run that succeeded, failed or was interrupted (dry runs left out), for an alert mail.
    func lastFinishedRun(job: String) throws -> AlertMessage.LastRun? {
        try connection.query(
            """
            SELECT id, status, error, host, pid,
                   to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"') AS started
            FROM caretaker.job_runs
            WHERE job = $1 AND NOT dry_run AND status IN ('succeeded', 'failed', 'interrupted')
            ORDER BY started_at DESC, id DESC LIMIT 1
            """, job
        ).first.map {
            AlertMessage.LastRun(
                id: $0.int64("id") ?? 0, status: $0["status"] ?? "", error: $0["error"],
                host: $0["host"] ?? "", pid: $0.int("pid") ?? 0, startedAt: $0["started"] ?? "")
        }
    }

    // MARK: Alert states (caretaker.job_alerts)

    /// Whether `caretaker.job_alerts` exists (it came with a later migration).
    public func hasAlertStates() throws -> Bool {
        try connection.query("SELECT to_regclass('caretaker.job_alerts') IS NOT NULL AS present").first?.bool("present")
            == true
    }

    /// The stored alert state of `job` (`healthy`, `unhealthy`), nil before alerts judged it.
    public func alertState(job: String) throws -> String? {
        try connection.query("SELECT state FROM caretaker.job_alerts WHERE job = $1", job).first?["state"]
    }

    /// Every job's stored alert state.
    func alertStates() throws -> [String: AlertPolicy.Stored] {
        var stored: [String: AlertPolicy.Stored] = [:]
        for row in try connection.query("SELECT job, state FROM caretaker.job_alerts").rows {
            stored[row["job"] ?? ""] = row["state"].flatMap(AlertPolicy.Stored.init)
        }
        return stored
    }

    /// Moves `job` from `previous` (nil: no row yet) to `next` if the stored state
    /// is still `previous` and no failed send asked to wait; returns since when
    /// the job was in the state it leaves (`2026-01-02 03:04:05 UTC`), nil when
    /// another instance took the change first.
    func claimAlertChange(
        job: String, from previous: AlertPolicy.Stored?, to next: AlertPolicy.Stored,
        cause: String?
    ) throws -> String? {
        let result: QueryResult
        if let previous {
            result = try connection.query(
                """
                UPDATE caretaker.job_alerts new SET state = $2, cause = $4, since = clock_timestamp(), retry_after = NULL
                FROM caretaker.job_alerts old
                WHERE new.job = $1 AND old.job = new.job AND new.state = $3
                  AND (new.retry_after IS NULL OR new.retry_after <= clock_timestamp())
                RETURNING to_char(old.since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"') AS since
                """, job, next.rawValue, previous.rawValue, cause)
        } else {
            result = try connection.query(
                """
                INSERT INTO caretaker.job_alerts (job, state, cause) VALUES ($1, $2, $3)
                ON CONFLICT (job) DO NOTHING
                RETURNING to_char(since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"') AS since
                """, job, next.rawValue, cause)
        }
        return result.first.map { $0["since"] ?? "" }
    }

    /// Gives a change whose mail could not be sent back (`next` to `previous`),
    /// and asks every instance to wait `retryAfter` (an interval, `5 minutes`) before trying again.
    func handBackAlertChange(
        job: String, to previous: AlertPolicy.Stored, from next: AlertPolicy.Stored,
        retryAfter: String
    ) throws {
        try connection.query(
            """
            UPDATE caretaker.job_alerts SET state = $2, retry_after = clock_timestamp() + $4::interval
            WHERE job = $1 AND state = $3
            """, job, previous.rawValue, next.rawValue, retryAfter)
    }
}
