#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import CaretakerCore
import Postgres

/// The dashboard's reads of `caretaker.job_runs` and `caretaker.job_slots`: the only SQL it sends.
///
/// Every time decision (the window, "ago", the next slot, which slots were missed)
/// is made against `now()` of the read's transaction: the database clock.
public enum DashboardQueries {
    /// The columns of a `RunSummary`, times as epoch seconds.
    static let runColumns = """
        id, job, trigger, status, extract(epoch FROM slot)::float8 AS slot, attempt,
        extract(epoch FROM started_at)::float8 AS started, extract(epoch FROM finished_at)::float8 AS finished,
        dry_run, stats::text AS stats, error, host, pid, backend_pid,
        (SELECT string_agg(s.key || '=' || s.value, ' ') FROM jsonb_each_text(stats) AS s(key, value)
         WHERE s.value ~ '^-?[0-9]{1,18}$') AS counters
        """

    /// Everything the overview shows for `window`, read on `connection` (in one transaction).
    public static func overview(_ connection: Connection, configuration: Configuration, window: TimeWindow) throws -> Overview {
        let clock = try connection.query("""
            SELECT extract(epoch FROM now())::float8 AS now,
                   (SELECT extract(epoch FROM min(applied_at))::float8 FROM caretaker.schema_migrations) AS installed
            """).first
        guard let nowSeconds = clock?.double("now") else {
            throw PostgresError(kind: .query, message: "the server did not return its clock")
        }
        let now = Date(timeIntervalSince1970: nowSeconds)
        let installed = clock?.double("installed").map(Date.init(timeIntervalSince1970:)) ?? now
        let start = nowSeconds - window.seconds
        let health = Dictionary(uniqueKeysWithValues: try JobHealth.assess(connection, configuration: configuration).map { ($0.job, $0) })

        var runsByJob: [String: [RunSummary]] = [:]
        for run in try connection.query("""
            SELECT \(runColumns) FROM caretaker.job_runs
            WHERE started_at >= to_timestamp($1::float8) ORDER BY started_at, id
            """, start).rows.map(run) {
            runsByJob[run.job, default: []].append(run)
        }
        var claimedByJob: [String: Set<Int64>] = [:]
        for row in try connection.query("""
            SELECT job, (extract(epoch FROM slot) * 1000)::bigint AS slot FROM caretaker.job_slots
            WHERE slot >= to_timestamp($1::float8)
            UNION
            SELECT job, (extract(epoch FROM slot) * 1000)::bigint FROM caretaker.job_runs
            WHERE slot >= to_timestamp($1::float8)
            """, start).rows {
            if let job = row["job"], let slot = row.int64("slot") { claimedByJob[job, default: []].insert(slot) }
        }
        var sums: [String: [String: [Int64]]] = [:]
        for row in try connection.query("""
            SELECT r.job, s.key,
                   floor((extract(epoch FROM r.started_at) - $1::float8) / $2::float8)::int AS bucket,
                   sum(s.value::numeric)::bigint AS total
            FROM caretaker.job_runs r, jsonb_each_text(r.stats) AS s(key, value)
            WHERE r.started_at >= to_timestamp($1::float8) AND NOT r.dry_run AND r.status <> 'skipped'
              AND s.value ~ '^-?[0-9]{1,18}$'
            GROUP BY 1, 2, 3
            """, start, window.bucketSeconds).rows {
            guard let job = row["job"], let key = row["key"], let bucket = row.int("bucket"), let total = row.int64("total"),
                  (0..<window.bucketCount).contains(bucket) else { continue }
            sums[job, default: [:]][key, default: Array(repeating: 0, count: window.bucketCount)][bucket] += total
        }

        let jobs = try configuration.jobs.map { job -> JobOverview in
            let runs = runsByJob[job.name] ?? []
            let last = try lastRun(connection, job: job.name)
            let missed = job.enabled
                ? missedSpans(job.schedule, from: max(Date(timeIntervalSince1970: start), installed), to: now,
                              claimed: claimedByJob[job.name] ?? [])
                : []
            let series = DashboardCounters.main(for: job).map { counter in
                CounterSeries(counter: counter, buckets: sums[job.name]?[counter] ?? Array(repeating: 0, count: window.bucketCount))
            }
            return summary(job, now: now, health: health[job.name], lastRun: last, runs: runs, missed: missed, series: series)
        }
        return Overview(now: now, window: window, jobs: jobs)
    }

    /// A job's line: what the configuration says, with what the history says.
    static func summary(_ job: JobConfiguration, now: Date, health: JobHealth?, lastRun: RunSummary?,
                        runs: [RunSummary] = [], missed: [MissedSpan] = [], series: [CounterSeries] = []) -> JobOverview {
        JobOverview(name: job.name, enabled: job.enabled, schedule: job.schedule.text,
                    scheduleWords: ScheduleWords.describe(job.schedule), timeZone: job.timeZoneName,
                    health: health, lastRun: lastRun, nextSlot: job.enabled ? job.schedule.nextDate(after: now) : nil,
                    runs: runs, missed: missed, series: series)
    }

    /// The latest run of `job` that ran (not a skipped slot), dry runs included.
    static func lastRun(_ connection: Connection, job: String) throws -> RunSummary? {
        try connection.query("""
            SELECT \(runColumns) FROM caretaker.job_runs
            WHERE job = $1 AND status <> 'skipped' ORDER BY started_at DESC, id DESC LIMIT 1
            """, job).rows.first.map(run)
    }

    /// The slots of `schedule` in `[from, to)` that no instance claimed, grouped into
    /// spans of consecutive slots (a stopped daemon leaves one span, not hundreds of marks).
    public static func missedSpans(_ schedule: Schedule, from: Date, to: Date, claimed: Set<Int64>) -> [MissedSpan] {
        var spans: [MissedSpan] = []
        var previousMissed = false
        var slot = schedule.nextDate(after: from.addingTimeInterval(-0.001))
        while let current = slot, current < to {
            let key = Int64((current.timeIntervalSince1970 * 1000).rounded())
            if claimed.contains(key) {
                previousMissed = false
            } else if previousMissed, var span = spans.popLast() {
                span.last = current
                span.slots += 1
                spans.append(span)
            } else {
                spans.append(MissedSpan(first: current, last: current, slots: 1))
                previousMissed = true
            }
            slot = schedule.nextDate(after: current)
        }
        return spans
    }

    /// One page of `job`'s runs, newest first, as `filter` says.
    public static func jobRuns(_ connection: Connection, configuration: Configuration, job: String,
                               filter: RunFilter) throws -> JobRuns {
        guard let nowSeconds = try connection.query("SELECT extract(epoch FROM now())::float8 AS now").first?.double("now") else {
            throw PostgresError(kind: .query, message: "the server did not return its clock")
        }
        let configured = configuration.job(named: job)
        if configured == nil {
            let known = try connection.query("SELECT EXISTS (SELECT 1 FROM caretaker.job_runs WHERE job = $1) AS known", job)
                .first?.bool("known") ?? false
            guard known else { throw DashboardError.notFound("no job \(job) in the configuration or the history") }
        }
        let since = filter.range.seconds.map { nowSeconds - $0 }
        let rows = try connection.query("""
            SELECT \(runColumns) FROM caretaker.job_runs
            WHERE job = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR trigger = $3)
              AND ($4::float8 IS NULL OR started_at >= to_timestamp($4::float8))
            ORDER BY started_at DESC, id DESC
            LIMIT $5 OFFSET $6
            """, job, filter.status?.rawValue, filter.trigger?.rawValue, since,
            RunFilter.pageSize + 1, (filter.page - 1) * RunFilter.pageSize).rows.map(run)
        let now = Date(timeIntervalSince1970: nowSeconds)
        let overview = try configured.map { job in
            summary(job, now: now, health: try JobHealth.assess(connection, configuration: configuration).first { $0.job == job.name },
                    lastRun: try lastRun(connection, job: job.name))
        }
        return JobRuns(now: now, job: job, configured: overview, filter: filter,
                       runs: Array(rows.prefix(RunFilter.pageSize)), hasNextPage: rows.count > RunFilter.pageSize)
    }

    /// One run's full record, and the database clock.
    public static func run(_ connection: Connection, id: Int64) throws -> (run: RunSummary, now: Date) {
        let row = try connection.query("""
            SELECT \(runColumns), extract(epoch FROM now())::float8 AS now FROM caretaker.job_runs WHERE id = $1
            """, id).first
        guard let row, let now = row.double("now") else { throw DashboardError.notFound("no run \(id)") }
        return (run(row), Date(timeIntervalSince1970: now))
    }

    static func run(_ row: Row) -> RunSummary {
        RunSummary(
            id: row.int64("id") ?? 0, job: row["job"] ?? "", trigger: row["trigger"] ?? "", status: row["status"] ?? "",
            slot: row.double("slot").map(Date.init(timeIntervalSince1970:)), attempt: row.int("attempt") ?? 1,
            startedAt: Date(timeIntervalSince1970: row.double("started") ?? 0),
            finishedAt: row.double("finished").map(Date.init(timeIntervalSince1970:)),
            dryRun: row.bool("dry_run") ?? false, counters: counters(row["counters"]), stats: row["stats"] ?? "{}",
            error: row["error"], host: row["host"] ?? "", pid: row.int("pid") ?? 0, backendPID: row.int("backend_pid"))
    }
}

extension DashboardQueries {
    /// `posts_deleted=512 packs_deleted=3` (counter names are identifiers the jobs define).
    static func counters(_ text: String?) -> [(name: String, value: Int64)] {
        (text ?? "").split(separator: " ").compactMap { pair in
            guard let equals = pair.firstIndex(of: "="), let value = Int64(pair[pair.index(after: equals)...]) else { return nil }
            return (String(pair[..<equals]), value)
        }
    }
}

/// Which counters of a job's `stats` its overview chart shows.
public enum DashboardCounters {
    public static func main(for job: JobConfiguration) -> [String] {
        job.builtIn?.chartedCounters ?? ["rows"]
    }
}
