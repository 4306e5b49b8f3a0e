import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The run history read back: `caretaker history`, `jobs`, `status` and `check`, the
/// health of each job, the metrics and alerts, and the dashboard. It only reads;
/// the runner's writes are `RunRecorder`'s, alert states `AlertStates`'.
///
/// Rows come back as `RunRecord`s (a status or trigger this caretaker does not
/// know throws `UnknownHistoryValue`). A read that finds no row returns nil or an
/// empty list; a failed statement throws its `PostgresError`.
public struct RunHistory {
    public let connection: Connection

    public init(_ connection: Connection) {
        self.connection = connection
    }

    // MARK: Runs

    /// The most recent runs first, as `caretaker history` shows them.
    public func recent(_ filter: RunRecord.Filter) throws -> [RunRecord] {
        try connection.query(
            """
            SELECT \(RunRecord.columns) FROM caretaker.job_runs
            WHERE ($1::text IS NULL OR job = $1) AND ($2::text IS NULL OR status = $2)
            ORDER BY started_at DESC, id DESC
            LIMIT $3
            """, filter.job, filter.status?.rawValue, filter.limit
        ).rows.map(RunRecord.init)
    }

    /// Which of a job's rows `latest(_:job:)` picks from.
    public enum Latest: Sendable {
        /// Any row (`caretaker jobs`).
        case anyRow
        /// Rows that ran, not skipped slots, dry runs included (the dashboard).
        case ran
        /// Rows that are not `running`, dry runs left out (`caretaker status`).
        case ended
        /// Runs that succeeded, failed or were interrupted, dry runs left out (an alert mail).
        case finished

        fileprivate var condition: String {
            switch self {
            case .anyRow: "true"
            case .ran: "status <> 'skipped'"
            case .ended: "NOT dry_run AND status <> 'running'"
            case .finished: "NOT dry_run AND status IN ('succeeded', 'failed', 'interrupted')"
            }
        }
    }

    /// `job`'s latest row of the kind `which` names; nil when it has none.
    public func latest(_ which: Latest, job: String) throws -> RunRecord? {
        try connection.query(
            """
            SELECT \(RunRecord.columns) FROM caretaker.job_runs
            WHERE job = $1 AND \(which.condition) ORDER BY started_at DESC, id DESC LIMIT 1
            """, job
        ).rows.first.map(RunRecord.init)
    }

    /// A `running` row, with whether its process still holds the job's lock.
    public struct Going: Sendable {
        public let run: RunRecord
        /// False when no session holds the job's lock: its process died (the next run marks it interrupted).
        public let alive: Bool
    }

    /// `job`'s `running` rows, oldest first.
    public func running(job: String) throws -> [Going] {
        try connection.query(
            """
            SELECT \(RunRecord.columns), caretaker.job_lock_held(job) AS alive FROM caretaker.job_runs
            WHERE job = $1 AND status = 'running'
            ORDER BY started_at, id
            """, job
        ).rows.map { Going(run: try RunRecord($0), alive: $0.bool("alive") ?? false) }
    }

    /// One page of `job`'s rows, newest first, filtered by status, trigger and start (any of them nil: all).
    public func runs(
        job: String, status: RunStatus?, trigger: RunTrigger?, startedSince since: Double?,
        limit: Int, offset: Int
    ) throws -> [RunRecord] {
        try connection.query(
            """
            SELECT \(RunRecord.columns) FROM caretaker.job_runs
            WHERE job = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR trigger = $3)
              AND ($4::float8 IS NULL OR started_at >= to_timestamp($4::float8))
            ORDER BY started_at DESC, id DESC
            LIMIT $5 OFFSET $6
            """, job, status?.rawValue, trigger?.rawValue, since, limit, offset
        ).rows.map(RunRecord.init)
    }

    /// Run `id`, with the database clock; nil when there is no such run.
    public func run(id: Int64) throws -> (run: RunRecord, now: Date)? {
        let row = try connection.query(
            """
            SELECT \(RunRecord.columns), extract(epoch FROM now())::float8 AS now FROM caretaker.job_runs WHERE id = $1
            """, id
        ).first
        guard let row, let now = row.double("now") else { return nil }
        return (try RunRecord(row), Date(timeIntervalSince1970: now))
    }

    /// Whether the history holds any row of `job` (a job no longer configured).
    public func hasRuns(job: String) throws -> Bool {
        try connection.query("SELECT EXISTS (SELECT 1 FROM caretaker.job_runs WHERE job = $1) AS known", job)
            .first?.bool("known") ?? false
    }

    // MARK: What health, metrics and alerts judge by

    /// What `job`'s history says about its health (dry runs left out).
    public struct JobFacts: Sendable {
        /// The status of the latest run that succeeded, failed or was interrupted.
        public var lastStatus: RunStatus?
        /// That run's error.
        public var lastError: String?
        /// The latest successful finish (database clock).
        public var lastSuccess: Date?
        /// The latest finish that succeeded, failed or was interrupted.
        public var lastRun: Date?
        /// When caretaker first knew of the job: its earliest claimed slot or run.
        public var firstSeen: Date?
        /// Of the job's last `blockedRuns` finished runs: how many there are, and how
        /// many reported a `…_blocked` counter above zero.
        public var recentRuns = 0
        public var recentBlocked = 0
        /// The latest of them's blocked counters (`posts_blocked=1`).
        public var latestBlocked: String?

        public init(
            lastStatus: RunStatus? = nil, lastError: String? = nil, lastSuccess: Date? = nil, lastRun: Date? = nil,
            firstSeen: Date? = nil
        ) {
            self.lastStatus = lastStatus
            self.lastError = lastError
            self.lastSuccess = lastSuccess
            self.lastRun = lastRun
            self.firstSeen = firstSeen
        }
    }

    /// The facts of every job in `jobs`, in one statement (a refresh of the metrics
    /// and alerts reads the history once, however many jobs there are); a job
    /// without rows has empty facts. `blockedRuns`: how many of each job's latest
    /// finished runs to count blocked rows over.
    public func facts(jobs: [String], blockedRuns: Int) throws -> [String: JobFacts] {
        var facts: [String: JobFacts] = [:]
        for row in try connection.query(
            """
            SELECT j.job, last.id AS last_id, last.status AS last_status, last.error AS last_error,
                   (SELECT extract(epoch FROM max(finished_at))::float8 FROM caretaker.job_runs
                    WHERE job = j.job AND NOT dry_run AND status = 'succeeded') AS last_success,
                   (SELECT extract(epoch FROM max(finished_at))::float8 FROM caretaker.job_runs
                    WHERE job = j.job AND NOT dry_run AND status IN ('succeeded', 'failed', 'interrupted')) AS last_run,
                   extract(epoch FROM least(
                       (SELECT min(claimed_at) FROM caretaker.job_slots WHERE job = j.job),
                       (SELECT min(started_at) FROM caretaker.job_runs WHERE job = j.job AND NOT dry_run)))::float8 AS first_seen,
                   blocked.runs AS recent_runs, blocked.blocked AS recent_blocked, blocked.latest AS latest_blocked
            FROM unnest($1::text[]) AS j(job)
            LEFT JOIN LATERAL (
                SELECT id, status, error FROM caretaker.job_runs
                WHERE job = j.job AND NOT dry_run AND status IN ('succeeded', 'failed', 'interrupted')
                ORDER BY started_at DESC, id DESC LIMIT 1
            ) last ON true
            CROSS JOIN LATERAL (
                SELECT count(*) AS runs, count(recent.blocked) AS blocked,
                       (array_agg(recent.blocked ORDER BY recent.started_at DESC, recent.id DESC))[1] AS latest
                FROM (SELECT r.started_at, r.id,
                             (SELECT string_agg(e.key || '=' || e.value, ' ' ORDER BY e.key) FROM jsonb_each_text(r.stats) e
                              WHERE e.key LIKE '%\\_blocked' AND e.value <> '0') AS blocked
                      FROM caretaker.job_runs r
                      WHERE r.job = j.job AND NOT r.dry_run AND r.status IN ('succeeded', 'failed', 'interrupted')
                      ORDER BY r.started_at DESC, r.id DESC LIMIT $2) recent
            ) blocked
            """, PostgresArray(jobs), blockedRuns
        ).rows {
            guard let job = row["job"] else { continue }
            var fact = JobFacts(
                lastStatus: try row["last_status"].map { try RunStatus(stored: $0, runID: row.int64("last_id") ?? 0) },
                lastError: row["last_error"],
                lastSuccess: row.double("last_success").map(Date.init(timeIntervalSince1970:)),
                lastRun: row.double("last_run").map(Date.init(timeIntervalSince1970:)),
                firstSeen: row.double("first_seen").map(Date.init(timeIntervalSince1970:)))
            fact.recentRuns = row.int("recent_runs") ?? 0
            fact.recentBlocked = row.int("recent_blocked") ?? 0
            fact.latestBlocked = row["latest_blocked"]
            facts[job] = fact
        }
        return facts
    }

    /// Skipped slots of one job for one reason (a row counts `stats.missed_slots`
    /// slots when it says so, else one).
    public struct SkippedSlots: Sendable, Equatable {
        public let job: String
        public let reason: String
        public let slots: Int

        public init(job: String, reason: String, slots: Int) {
            self.job = job
            self.reason = reason
            self.slots = slots
        }
    }

    /// Skipped rows with an id above `afterID`, started since a minute before
    /// `lookedAt` (or, without one, within `uptime`), by job and reason; the highest
    /// id counted; and the database clock they were read at, the next look's `lookedAt`.
    public func skippedSlots(
        afterID: Int64, lookedAt: Double?, uptime: Duration
    ) throws -> (counts: [SkippedSlots], lastID: Int64?, now: Double?) {
        let rows = try connection.query(
            """
            WITH look AS (SELECT clock_timestamp() AS now),
            counted AS (
                SELECT job, coalesce(error, '') AS reason,
                       sum(CASE WHEN stats->>'missed_slots' ~ '^[0-9]+$' THEN (stats->>'missed_slots')::bigint ELSE 1 END) AS slots,
                       max(id) AS last_id
                FROM caretaker.job_runs, look
                WHERE status = 'skipped' AND id > $1
                  AND started_at >= coalesce(to_timestamp($2::float8) - interval '1 minute',
                                             look.now - make_interval(secs => $3::float8))
                GROUP BY job, coalesce(error, '')
            )
            SELECT extract(epoch FROM look.now)::float8 AS now, counted.*
            FROM look LEFT JOIN counted ON true
            ORDER BY job, reason
            """, afterID, lookedAt, uptime.seconds
        ).rows
        return (
            rows.compactMap { row in
                row["job"].map { SkippedSlots(job: $0, reason: row["reason"] ?? "", slots: row.int("slots") ?? 0) }
            },
            rows.compactMap { $0.int64("last_id") }.max(), rows.first?.double("now")
        )
    }

    // MARK: The dashboard

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
            SELECT \(RunRecord.columns), bucket_runs,
                   extract(epoch FROM last_started)::float8 AS last_started,
                   extract(epoch FROM last_finished)::float8 AS last_finished
            FROM counted WHERE nth = 1 ORDER BY started_at, id
            """, start, bucketSeconds
        ).rows.map { row in
            TimelineMark(
                first: try RunRecord(row), runs: row.int("bucket_runs") ?? 1,
                lastStartedAt: Date(timeIntervalSince1970: row.double("last_started") ?? 0),
                lastFinishedAt: row.double("last_finished").map(Date.init(timeIntervalSince1970:)))
        }
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
