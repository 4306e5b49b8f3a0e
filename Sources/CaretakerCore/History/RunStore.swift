import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The SQL on caretaker's own bookkeeping tables: `caretaker.job_runs` (the run
/// history), `caretaker.job_slots` (claimed schedule slots) and the job's advisory
/// lock; what monitoring reads of them and `caretaker.job_alerts` (what alerts last
/// said of a job) are in `Monitoring/RunStore+Monitoring.swift`. Nothing else in
/// caretaker, its CLI or its dashboard names these tables in SQL.
///
/// Errors follow one rule: a failed statement throws its `PostgresError`, and a
/// write that must hand back a row (the id of the run it recorded) and got none
/// throws too (a `PostgresError` of kind `.query` naming the statement), so no
/// caller ever sees a made-up id. A read that finds no row returns nil or an empty list.
///
/// Times cross as seconds since the epoch (`to_timestamp($n::float8)`), and every
/// time decision uses the database clock.
public struct RunStore {
    public let connection: Connection

    public init(_ connection: Connection) {
        self.connection = connection
    }

    // MARK: Recording runs (the runner)

    /// Inserts the `running` row of a run and returns its id.
    public func startRun(job: String, trigger: RunTrigger, slot: Date?, dryRun: Bool, attempt: Int) throws -> Int64 {
        try insertedID(
            connection.query(
                """
                INSERT INTO caretaker.job_runs (job, trigger, status, slot, attempt, dry_run, host, pid, backend_pid)
                VALUES ($1, $2, 'running', to_timestamp($3::float8), $4, $5, $6, $7, pg_backend_pid())
                RETURNING id
                """, job, trigger.rawValue, slot.map { $0.timeIntervalSince1970 }, attempt, dryRun,
                ProcessIdentity.hostname, ProcessIdentity.pid), recording: "the start of a run of \(job)")
    }

    /// Completes a run: status, stats, error (secret-free), `finished_at` from the database clock.
    ///
    /// With `releasingLock`, the same statement then lets go of the job's advisory
    /// lock, right after `finished_at` is taken: another instance that finds the lock
    /// held is then sure the run had not finished when it looked, so a slot it records
    /// `skipped` for that reason came due before `finished_at`. (Its `interruptOrphans`
    /// waits on this row until the statement commits, and then finds it finished.)
    public func finishRun(
        _ runID: Int64, status: RunStatus, stats: JobStats, error: String?, releasingLock: Bool = false
    ) throws {
        try connection.query(
            """
            WITH finished AS (
                UPDATE caretaker.job_runs
                SET status = $2, stats = $3::jsonb, error = $4, finished_at = clock_timestamp()
                WHERE id = $1
                RETURNING job
            )
            SELECT pg_advisory_unlock(caretaker.job_lock_key(job)) FROM finished WHERE $5
            """, runID, status.rawValue, stats.json, error, releasingLock)
    }

    /// True when a run of `job` was going when `slot` came due: one holds the job's
    /// lock or is `running`, or the latest finished at or after `slot` (runs of a job
    /// never overlap, so the latest started is the latest to finish). False means the job's
    /// previous run had ended before the slot came (or the next has not taken the lock
    /// yet), so the slot is not one to record `skipped` because a run was still going.
    public func runWasGoing(atSlot slot: Date, job: String) throws -> Bool {
        try connection.query(
            """
            SELECT caretaker.job_lock_held($1)
                OR EXISTS (SELECT 1 FROM caretaker.job_runs WHERE job = $1 AND status = 'running')
                OR coalesce((SELECT finished_at >= to_timestamp($2::float8) FROM caretaker.job_runs
                             WHERE job = $1 AND status <> 'skipped'
                             ORDER BY started_at DESC LIMIT 1), false) AS going
            """, job, slot.timeIntervalSince1970
        ).first?.bool("going") == true
    }

    /// Records `slot` of `job` as `skipped` for `reason` and returns the row's id.
    public func recordSkipped(job: String, trigger: RunTrigger, slot: Date, reason: String) throws -> Int64 {
        try insertedID(
            connection.query(
                """
                INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, finished_at, error, host, pid, backend_pid)
                VALUES ($1, $2, 'skipped', to_timestamp($3::float8), clock_timestamp(), clock_timestamp(), $4, $5, $6, pg_backend_pid())
                RETURNING id
                """, job, trigger.rawValue, slot.timeIntervalSince1970, reason,
                ProcessIdentity.hostname, ProcessIdentity.pid), recording: "a skipped slot of \(job)")
    }

    /// Inserts the one `skipped` row that stands for the slots of `job` nobody ran
    /// while no worker was up; `stats` counts them and names the first and last.
    public func recordMissed(job: String, count: Int, first: Date, last: Date, reason: String) throws -> Int64 {
        try insertedID(
            connection.query(
                """
                INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, finished_at, stats, error, host, pid, backend_pid)
                VALUES ($1, 'schedule', 'skipped', to_timestamp($4::float8), clock_timestamp(), clock_timestamp(),
                        jsonb_build_object('missed_slots', $2::bigint, 'first_missed', to_timestamp($3::float8),
                                           'last_missed', to_timestamp($4::float8)),
                        $5, $6, $7, pg_backend_pid())
                RETURNING id
                """, job, count, first.timeIntervalSince1970, last.timeIntervalSince1970, reason,
                ProcessIdentity.hostname, ProcessIdentity.pid), recording: "the missed slots of \(job)")
    }

    private func insertedID(_ result: QueryResult, recording what: String) throws -> Int64 {
        guard let id = result.first?.int64("id") else {
            throw PostgresError(
                kind: .query, message: "recording \(what) gave no id (INSERT … RETURNING id returned no row)")
        }
        return id
    }

    private static let diedText = "the process running it died (its advisory lock is gone)"

    /// Marks `running` rows of `job` as `interrupted`. Call only while holding the
    /// job's advisory lock: then no live process can own such a row.
    @discardableResult
    public func interruptOrphans(job: String) throws -> Int {
        try connection.query(
            """
            UPDATE caretaker.job_runs
            SET status = 'interrupted', finished_at = clock_timestamp(), error = coalesce(error, $2)
            WHERE job = $1 AND status = 'running'
            """, job, Self.diedText
        ).affectedRows
    }

    /// Marks every `running` row whose owner no longer holds its job's advisory lock as `interrupted`.
    @discardableResult
    public func interruptAllOrphans() throws -> Int {
        try connection.query(
            """
            UPDATE caretaker.job_runs
            SET status = 'interrupted', finished_at = clock_timestamp(), error = coalesce(error, $1)
            WHERE status = 'running' AND NOT caretaker.job_lock_held(job)
            """, Self.diedText
        ).affectedRows
    }

    // MARK: Slots and the job's lock

    /// What taking a slot found.
    public enum SlotClaim: Sendable, Equatable {
        /// This call inserted the `(job, slot)` record: the slot is ours.
        case claimed
        /// Another instance had already taken it.
        case taken
        /// The slot has not come yet on the database clock: nothing was inserted.
        case notDue
    }

    /// Takes the unique `(job, slot)` record.
    ///
    /// The record is only inserted when the slot is due on the database's own
    /// clock (rule zero): the scheduler decides from an estimate of that clock,
    /// and a slot must never run early because the estimate was a little ahead.
    public func claimSlot(_ slot: Date, job: String) throws -> SlotClaim {
        let row = try connection.query(
            """
            WITH due AS (SELECT to_timestamp($2::float8) <= clock_timestamp() AS due),
                 taken AS (
                     INSERT INTO caretaker.job_slots (job, slot)
                     SELECT $1, to_timestamp($2::float8) FROM due WHERE due
                     ON CONFLICT DO NOTHING RETURNING 1
                 )
            SELECT (SELECT due FROM due) AS due, EXISTS (SELECT 1 FROM taken) AS claimed
            """, job, slot.timeIntervalSince1970
        ).first
        guard row?.bool("due") == true else { return .notDue }
        return row?.bool("claimed") == true ? .claimed : .taken
    }

    /// Notes on the claimed `slot` of `job` which run (or skipped row) answered it.
    public func attach(runID: Int64, toSlot slot: Date, job: String) throws {
        try connection.query(
            "UPDATE caretaker.job_slots SET run_id = $3 WHERE job = $1 AND slot = to_timestamp($2::float8)",
            job, slot.timeIntervalSince1970, runID)
    }

    /// Until when some worker looked after `job`: its latest claimed slot, or its
    /// latest run's slot or start; nil when it never ran.
    public func lastLookedAfter(job: String) throws -> Date? {
        try connection.query(
            """
            SELECT extract(epoch FROM greatest(
                       (SELECT max(slot) FROM caretaker.job_slots WHERE job = $1),
                       (SELECT max(coalesce(slot, started_at)) FROM caretaker.job_runs WHERE job = $1)))::float8 AS looked_after
            """, job
        ).first?.double("looked_after").map { Date(timeIntervalSince1970: $0) }
    }

    /// Takes `job`'s session-level advisory lock if it is free; false when another session holds it.
    public func tryLock(job: String) throws -> Bool {
        try connection.query("SELECT pg_try_advisory_lock(caretaker.job_lock_key($1)) AS locked", job)
            .first?.bool("locked") == true
    }

    /// Lets go of `job`'s advisory lock (a broken connection has lost it already).
    public func unlock(job: String) {
        _ = try? connection.query("SELECT pg_advisory_unlock(caretaker.job_lock_key($1))", job)
    }

    // MARK: Pruning

    /// Rows `prune` may delete from one of these tables, in its batched loop: the
    /// table, the key it deletes by, and the condition (`$1` is the age to keep, in microseconds).
    public struct Prunable: Sendable {
        public let table: String
        public let key: String
        public let condition: String
    }

    /// Runs older than `keep_history` of any status but `running`, except the latest
    /// of each job in each status (a job that runs less often keeps its last success and failure).
    public static let prunableRuns = Prunable(
        table: "caretaker.job_runs", key: "id",
        condition: """
            started_at < now() - $1::bigint * interval '1 microsecond' AND status <> 'running' \
            AND EXISTS (SELECT 1 FROM caretaker.job_runs later
                        WHERE later.job = job_runs.job AND later.status = job_runs.status
                          AND (later.started_at, later.id) > (job_runs.started_at, job_runs.id))
            """)

    /// Claimed slots older than `keep_history`.
    public static let prunableSlots = Prunable(
        table: "caretaker.job_slots", key: "ctid", condition: "slot < now() - $1::bigint * interval '1 microsecond'")

    // MARK: Reading the history (history, jobs, status, check, metrics, alerts)

    /// The most recent runs first, as `caretaker history` shows them.
    public func recent(_ filter: RunRecord.Filter) throws -> [RunRecord] {
        try connection.query(
            """
            SELECT id, job, trigger, status,
                   to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS started,
                   to_char(finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS finished,
                   (extract(epoch FROM finished_at - started_at) * 1000)::bigint AS duration_ms,
                   dry_run, stats::text AS stats, error, host, pid
            FROM caretaker.job_runs
            WHERE ($1::text IS NULL OR job = $1) AND ($2::text IS NULL OR status = $2)
            ORDER BY started_at DESC, id DESC
            LIMIT $3
            """, filter.job, filter.status, filter.limit
        ).rows.map { row in
            RunRecord(
                id: row.int64("id") ?? 0, job: row["job"] ?? "", trigger: row["trigger"] ?? "",
                status: row["status"] ?? "", startedAt: row["started"] ?? "", finishedAt: row["finished"],
                durationMilliseconds: row.int("duration_ms"), dryRun: row.bool("dry_run") ?? false,
                stats: row["stats"] ?? "{}", error: row["error"], host: row["host"] ?? "", pid: row.int("pid") ?? 0)
        }
    }

    /// The status and start (`2026-01-02T03:04:05Z`) of `job`'s latest row of any kind, for `caretaker jobs`.
    public func latestStart(job: String) throws -> (status: String, startedAt: String)? {
        try connection.query(
            """
            SELECT status, to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS started
            FROM caretaker.job_runs WHERE job = $1 ORDER BY started_at DESC, id DESC LIMIT 1
            """, job
        ).first.map { ($0["status"] ?? "", $0["started"] ?? "") }
    }

    /// What `job`'s finished runs (dry runs left out) say about its health.
    public struct FinishedRuns: Sendable {
        /// The status of the latest run that succeeded, failed or was interrupted.
        public let lastStatus: String?
        /// That run's error.
        public let lastError: String?
        /// Seconds since the epoch (database clock) of the latest successful finish.
        public let lastSuccess: Double?
        /// The same, as `2026-01-02T03:04:05Z`.
        public let lastSuccessText: String?
        /// Seconds since the epoch of the latest finish that succeeded, failed or was interrupted.
        public let lastRun: Double?
    }

    public func finishedRuns(job: String) throws -> FinishedRuns {
        let row = try connection.query(
            """
            SELECT (SELECT status FROM caretaker.job_runs
                    WHERE job = $1 AND NOT dry_run AND status IN ('succeeded', 'failed', 'interrupted')
                    ORDER BY started_at DESC, id DESC LIMIT 1) AS last_status,
                   (SELECT error FROM caretaker.job_runs
                    WHERE job = $1 AND NOT dry_run AND status IN ('succeeded', 'failed', 'interrupted')
                    ORDER BY started_at DESC, id DESC LIMIT 1) AS last_error,
                   (SELECT extract(epoch FROM max(finished_at)) FROM caretaker.job_runs
                    WHERE job = $1 AND NOT dry_run AND status = 'succeeded') AS last_success,
                   (SELECT to_char(max(finished_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') FROM caretaker.job_runs
                    WHERE job = $1 AND NOT dry_run AND status = 'succeeded') AS last_success_text,
                   (SELECT extract(epoch FROM max(finished_at)) FROM caretaker.job_runs
                    WHERE job = $1 AND NOT dry_run AND status IN ('succeeded', 'failed', 'interrupted')) AS last_run
            """, job
        ).first
        return FinishedRuns(
            lastStatus: row?["last_status"], lastError: row?["last_error"],
            lastSuccess: row?.double("last_success"), lastSuccessText: row?["last_success_text"],
            lastRun: row?.double("last_run"))
    }

    /// Seconds since the epoch (database clock) when caretaker first knew of `job`:
    /// its earliest claimed slot or run, dry runs left out; nil when it has neither.
    public func firstSeen(job: String) throws -> Double? {
        try connection.query(
            """
            SELECT extract(epoch FROM least(
                       (SELECT min(claimed_at) FROM caretaker.job_slots WHERE job = $1),
                       (SELECT min(started_at) FROM caretaker.job_runs WHERE job = $1 AND NOT dry_run)))::float8 AS first_seen
            """, job
        ).first?.double("first_seen")
    }

    /// Of `job`'s last `runs` finished runs (dry runs left out): how many there
    /// are, how many reported a `…_blocked` counter above zero, and the latest
    /// one's blocked counters (`posts_blocked=1`).
    public func blockedCounters(job: String, lastRuns runs: Int) throws -> (runs: Int, blocked: Int, latest: String?) {
        let row = try connection.query(
            """
            SELECT count(*) AS runs, count(blocked) AS blocked, (array_agg(blocked ORDER BY started_at DESC, id DESC))[1] AS latest
            FROM (SELECT r.started_at, r.id,
                         (SELECT string_agg(e.key || '=' || e.value, ' ' ORDER BY e.key) FROM jsonb_each_text(r.stats) e
                          WHERE e.key LIKE '%\\_blocked' AND e.value <> '0') AS blocked
                  FROM caretaker.job_runs r
                  WHERE r.job = $1 AND NOT r.dry_run AND r.status IN ('succeeded', 'failed', 'interrupted')
                  ORDER BY r.started_at DESC, r.id DESC LIMIT $2) recent
            """, job, runs
        ).first
        return (row?.int("runs") ?? 0, row?.int("blocked") ?? 0, row?["latest"])
    }

    // MARK: Reading the history (the dashboard)

    /// The columns of a `RunSummary`, times as epoch seconds.
    private static let summaryColumns = """
        id, job, trigger, status, extract(epoch FROM slot)::float8 AS slot, attempt,
        extract(epoch FROM started_at)::float8 AS started, extract(epoch FROM finished_at)::float8 AS finished,
        dry_run, stats::text AS stats, error, host, pid, backend_pid,
        (SELECT string_agg(s.key || '=' || s.value, ' ') FROM jsonb_each_text(stats) AS s(key, value)
         WHERE s.value ~ '^-?[0-9]{1,18}$') AS counters
        """

    /// The timeline's marks for the rows started at or after `start`: a row alone in
    /// its `bucketSeconds` (one pixel of the chart) for its job and status is a mark
    /// of its own; the rows of a crowded bucket are one mark (its first row, their
    /// count and the span they cover). So a page shows a week of an `@every 1s` job
    /// in at most one mark per pixel, not 600,000, and the dashboard never holds them all.
    public func timelineMarks(startedSince start: Double, bucketSeconds: Double) throws -> [TimelineMark] {
        try connection.query(
            """
            WITH bucketed AS (
                SELECT r.*, floor(extract(epoch FROM r.started_at - to_timestamp($1::float8)) / $2::float8) AS bucket
                FROM caretaker.job_runs r
                WHERE r.started_at >= to_timestamp($1::float8)
            ), counted AS (
                SELECT b.*, count(*) OVER bucket_rows AS bucket_runs,
                       row_number() OVER (bucket_rows ORDER BY started_at, id) AS nth,
                       max(started_at) OVER bucket_rows AS last_started,
                       CASE WHEN bool_or(finished_at IS NULL) OVER bucket_rows THEN NULL
                            ELSE max(finished_at) OVER bucket_rows END AS last_finished
                FROM bucketed b
                WINDOW bucket_rows AS (PARTITION BY job, status, bucket)
            )
            SELECT \(Self.summaryColumns), bucket_runs,
                   extract(epoch FROM last_started)::float8 AS last_started,
                   extract(epoch FROM last_finished)::float8 AS last_finished
            FROM counted WHERE nth = 1 ORDER BY started_at, id
            """, start, bucketSeconds
        ).rows.map { row in
            TimelineMark(
                first: RunSummary(row), runs: row.int("bucket_runs") ?? 1,
                lastStartedAt: Date(timeIntervalSince1970: row.double("last_started") ?? 0),
                lastFinishedAt: row.double("last_finished").map(Date.init(timeIntervalSince1970:)))
        }
    }

    /// One page of `job`'s rows, newest first, filtered by status, trigger and start (any of them nil: all).
    public func runSummaries(
        job: String, status: RunStatus?, trigger: RunTrigger?, startedSince since: Double?,
        limit: Int, offset: Int
    ) throws -> [RunSummary] {
        try connection.query(
            """
            SELECT \(Self.summaryColumns) FROM caretaker.job_runs
            WHERE job = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR trigger = $3)
              AND ($4::float8 IS NULL OR started_at >= to_timestamp($4::float8))
            ORDER BY started_at DESC, id DESC
            LIMIT $5 OFFSET $6
            """, job, status?.rawValue, trigger?.rawValue, since, limit, offset
        ).rows.map(RunSummary.init)
    }

    /// The latest row of `job` that ran (not a skipped slot), dry runs included.
    public func latestRanSummary(job: String) throws -> RunSummary? {
        try connection.query(
            """
            SELECT \(Self.summaryColumns) FROM caretaker.job_runs
            WHERE job = $1 AND status <> 'skipped' ORDER BY started_at DESC, id DESC LIMIT 1
            """, job
        ).rows.first.map(RunSummary.init)
    }

    /// Run `id`, with the database clock; nil when there is no such run.
    public func runSummary(id: Int64) throws -> (run: RunSummary, now: Date)? {
        let row = try connection.query(
            """
            SELECT \(Self.summaryColumns), extract(epoch FROM now())::float8 AS now FROM caretaker.job_runs WHERE id = $1
            """, id
        ).first
        guard let row, let now = row.double("now") else { return nil }
        return (RunSummary(row), Date(timeIntervalSince1970: now))
    }

    /// Whether the history holds any row of `job` (a job no longer configured).
    public func hasRuns(job: String) throws -> Bool {
        try connection.query("SELECT EXISTS (SELECT 1 FROM caretaker.job_runs WHERE job = $1) AS known", job)
            .first?.bool("known") ?? false
    }

    /// The slots from `start` on that some instance claimed or some row answered,
    /// by job, in milliseconds since the epoch.
    public func claimedSlots(since start: Double) throws -> [String: Set<Int64>] {
        var claimed: [String: Set<Int64>] = [:]
        for row in try connection.query(
            """
            SELECT job, (extract(epoch FROM slot) * 1000)::bigint AS slot FROM caretaker.job_slots
            WHERE slot >= to_timestamp($1::float8)
            UNION
            SELECT job, (extract(epoch FROM slot) * 1000)::bigint FROM caretaker.job_runs
            WHERE slot >= to_timestamp($1::float8)
            """, start
        ).rows {
            if let job = row["job"], let slot = row.int64("slot") { claimed[job, default: []].insert(slot) }
        }
        return claimed
    }

    /// The sums of each job's whole-number counters over runs started from `start`
    /// on (not dry runs, not skipped rows), in buckets of `bucketSeconds`.
    public func counterSums(
        since start: Double, bucketSeconds: Double
    ) throws
        -> [(job: String, counter: String, bucket: Int, total: Int64)]
    {
        try connection.query(
            """
            SELECT r.job, s.key,
                   floor((extract(epoch FROM r.started_at) - $1::float8) / $2::float8)::int AS bucket,
                   sum(s.value::numeric)::bigint AS total
            FROM caretaker.job_runs r, jsonb_each_text(r.stats) AS s(key, value)
            WHERE r.started_at >= to_timestamp($1::float8) AND NOT r.dry_run AND r.status <> 'skipped'
              AND s.value ~ '^-?[0-9]{1,18}$'
            GROUP BY 1, 2, 3
            """, start, bucketSeconds
        ).rows.compactMap { row in
            guard let job = row["job"], let key = row["key"], let bucket = row.int("bucket"),
                let total = row.int64("total")
            else { return nil }
            return (job, key, bucket, total)
        }
    }
}
