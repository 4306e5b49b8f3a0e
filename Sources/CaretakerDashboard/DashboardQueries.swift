import CaretakerCore
import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The dashboard's reads: the history through `RunHistory` (which reads caretaker's
/// tables), plus the database clock and when caretaker's schema was installed.
///
/// Every time decision (the window, "ago", the next slot, which slots were missed)
/// is made against `now()` of the read's transaction: the database clock.
public enum DashboardQueries {
    /// Everything the overview shows for `window`, read on `connection` (in one transaction).
    public static func overview(
        _ connection: Connection, configuration: Configuration, window: TimeWindow
    ) throws -> Overview {
        let clock = try connection.query(
            """
            SELECT extract(epoch FROM now())::float8 AS now,
                   \(Migrator.installedAtSQL) AS installed
            """
        ).first
        guard let nowSeconds = clock?.double("now") else {
            throw PostgresError(kind: .query, message: "the server did not return its clock")
        }
        let now = Date(timeIntervalSince1970: nowSeconds)
        let installed = clock?.double("installed").map(Date.init(timeIntervalSince1970:)) ?? now
        let start = nowSeconds - window.seconds
        let health = Dictionary(
            uniqueKeysWithValues: try JobHealth.assess(connection, configuration: configuration).map { ($0.job, $0) })

        let history = RunHistory(connection)
        let marksByJob = Dictionary(
            grouping: try history.timelineMarks(startedSince: start, bucketSeconds: window.timelinePixelSeconds),
            by: \.first.job)
        let claimedByJob = try history.claimedSlots(since: start)
        var sums: [String: [String: [Int64]]] = [:]
        for sum in try history.counterSums(since: start, bucketSeconds: window.bucketSeconds)
        where (0..<window.bucketCount).contains(sum.bucket) {
            sums[sum.job, default: [:]][sum.counter, default: Array(repeating: 0, count: window.bucketCount)][
                sum.bucket] += sum.total
        }

        let missedBefore = now.addingTimeInterval(-missedGrace(configuration))
        let jobs = try configuration.jobs.map { job -> JobOverview in
            let marks = marksByJob[job.name] ?? []
            let last = try history.latest(.ran, job: job.name)
            let missed =
                job.enabled
                ? missedSpans(
                    job.schedule, from: max(Date(timeIntervalSince1970: start), installed), to: missedBefore,
                    claimed: claimedByJob[job.name] ?? [])
                : []
            // The counters the job's declarations chart (`StatDeclaration.chart`), in their colours.
            let series = job.declaredStats.filter { $0.chart != nil }.map { stat in
                CounterSeries(
                    counter: stat.name,
                    buckets: sums[job.name]?[stat.name] ?? Array(repeating: 0, count: window.bucketCount),
                    tone: stat.chart ?? .work)
            }
            return summary(
                job, now: now, health: health[job.name], lastRun: last, marks: marks, missed: missed, series: series)
        }
        return Overview(now: now, window: window, jobs: jobs)
    }

    /// A job's line: what the configuration says, with what the history says.
    static func summary(
        _ job: JobConfiguration, now: Date, health: JobHealth?, lastRun: RunRecord?,
        marks: [TimelineMark] = [], missed: [MissedSpan] = [], series: [CounterSeries] = []
    ) -> JobOverview {
        JobOverview(
            name: job.name, enabled: job.enabled, schedule: job.schedule.text,
            scheduleWords: ScheduleWords.describe(job.schedule), timeZone: job.timeZoneName,
            health: health, lastRun: lastRun, nextSlot: job.enabled ? job.schedule.nextDate(after: now) : nil,
            marks: marks, missed: missed, series: series)
    }

    /// How long a slot may go unclaimed before it counts as missed: the longest
    /// `max_runtime` of the enabled jobs. A run claims its slot when it starts, and a
    /// run waits for a free place (`max_concurrent_jobs`; one at a time in
    /// low-footprint mode) while other jobs run, each for up to its `max_runtime`.
    /// Without it a waiting slot showed as missed until its run began.
    public static func missedGrace(_ configuration: Configuration) -> TimeInterval {
        configuration.jobs.filter(\.enabled).map(\.maxRuntime).max()?.seconds ?? 0
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
    public static func jobRuns(
        _ connection: Connection, configuration: Configuration, job: String,
        filter: RunFilter
    ) throws -> JobRuns {
        guard
            let nowSeconds = try connection.query("SELECT extract(epoch FROM now())::float8 AS now").first?.double(
                "now")
        else {
            throw PostgresError(kind: .query, message: "the server did not return its clock")
        }
        let history = RunHistory(connection)
        let configured = configuration.job(named: job)
        if configured == nil, try !history.hasRuns(job: job) {
            throw DashboardError.notFound("no job \(job) in the configuration or the history")
        }
        let rows = try history.runs(
            job: job, status: filter.status, trigger: filter.trigger,
            startedSince: filter.range.seconds.map { nowSeconds - $0 },
            limit: RunFilter.pageSize + 1, offset: (filter.page - 1) * RunFilter.pageSize)
        let now = Date(timeIntervalSince1970: nowSeconds)
        let overview = try configured.map { job in
            summary(
                job, now: now,
                health: try JobHealth.assess(connection, configuration: configuration).first { $0.job == job.name },
                lastRun: try history.latest(.ran, job: job.name))
        }
        return JobRuns(
            now: now, job: job, configured: overview, filter: filter,
            runs: Array(rows.prefix(RunFilter.pageSize)), hasNextPage: rows.count > RunFilter.pageSize)
    }

    /// One run's full record, and the database clock.
    public static func run(_ connection: Connection, id: Int64) throws -> (run: RunRecord, now: Date) {
        guard let found = try RunHistory(connection).run(id: id) else {
            throw DashboardError.notFound("no run \(id)")
        }
        return found
    }
}
