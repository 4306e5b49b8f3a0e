import CaretakerConfig
import CaretakerDatabase
import CaretakerSchedule
import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Whether each enabled job is healthy: its last run did not fail, its last
/// success is recent enough (`stale_after`, default three periods), and its runs
/// do not keep skipping rows the app protects (the last `blockedRunsLimit` runs
/// each reporting a `…_blocked` counter above zero: the same rows, most likely,
/// that only the app's owner can set free).
///
/// A job that never succeeded gets `stale_after` of grace. For `check`, `status`
/// and the dashboard it counts from the schema's first migration, so a
/// daemon that was never started shows. The daemon's own alerts and metrics
/// (`watchedFor` given) count it from when caretaker first saw the job, if that is
/// later: the job's earliest claimed slot or run (dry runs left out), or, while it
/// has none, since the daemon watched it (`JobWatch`). A job added to `jobs.toml`
/// long after `caretaker migrate` is thus not alerted on before it had its chance.
public struct JobHealth: Sendable {
    public let job: String
    public let healthy: Bool
    /// Why, in a phrase an operator can act on.
    public let reason: String
    public let lastStatus: RunStatus?
    /// The last successful finish, as `2026-01-02T03:04:05Z`.
    public let lastSuccessAt: String?

    public init(job: String, healthy: Bool, reason: String, lastStatus: RunStatus?, lastSuccessAt: String?) {
        self.job = job
        self.healthy = healthy
        self.reason = reason
        self.lastStatus = lastStatus
        self.lastSuccessAt = lastSuccessAt
    }

    /// This many finished runs in a row with blocked rows make a job unhealthy.
    public static let blockedRunsLimit = 3

    /// Judges every enabled job against the database clock. `watchedFor` (the daemon):
    /// how long it has had each job enabled (`JobWatch`; a job not in it counts from
    /// now); `nil` (the commands): the grace counted from the migration alone.
    public static func assess(
        _ connection: Connection, configuration: Configuration, watchedFor: [String: Duration]? = nil
    ) throws -> [JobHealth] {
        try judge(connection, configuration: configuration, watchedFor: watchedFor).map(\.health)
    }

    /// Each enabled job's health with the facts it was judged by, in two statements
    /// whatever the number of jobs: the clock, then the history (`RunHistory.facts`).
    package static func judge(
        _ connection: Connection, configuration: Configuration, watchedFor: [String: Duration]? = nil
    ) throws -> [(health: JobHealth, facts: RunHistory.JobFacts)] {
        guard
            let clock = try connection.query(
                """
                SELECT extract(epoch FROM now()) AS now,
                       \(Migrator.installedAtSQL) AS installed
                """
            ).first, let now = clock.double("now")
        else { return [] }
        let installed = clock.double("installed") ?? now
        let jobs = configuration.jobs.filter(\.enabled)
        let facts = try RunHistory(connection).facts(jobs: jobs.map(\.name), blockedRuns: blockedRunsLimit)
        return jobs.map { job in
            let facts = facts[job.name] ?? RunHistory.JobFacts()
            let health = assess(
                job, facts: facts, now: now, installed: installed, watchedFor: watchedFor.map { $0[job.name] ?? .zero })
            return (health, facts)
        }
    }

    /// Judges `job` by its `facts`; `now` and `installed` are epoch seconds of the database clock.
    static func assess(
        _ job: JobConfiguration, facts runs: RunHistory.JobFacts, now: Double, installed: Double,
        watchedFor: Duration?
    ) -> JobHealth {
        let lastStatus = runs.lastStatus
        let lastSuccess = runs.lastSuccess?.timeIntervalSince1970
        let stale = job.staleness(after: Date(timeIntervalSince1970: now)).seconds
        let staleText = DurationText.format(.seconds(Int64(stale.rounded())))
        func health(_ healthy: Bool, _ reason: String) -> JobHealth {
            JobHealth(
                job: job.name, healthy: healthy, reason: reason, lastStatus: lastStatus,
                lastSuccessAt: runs.lastSuccess.map { UTCTimestamp.iso($0) })
        }
        if lastStatus == .failed {
            return health(false, "last run failed: \(runs.lastError ?? "no error recorded")")
        }
        guard let lastSuccess else {
            // The grace runs from the migration (the commands), or from when the daemon first saw the job.
            var graceFrom = installed
            var overdue = "has never succeeded, and the schema was migrated more than \(staleText) ago"
            if let watchedFor {
                graceFrom = max(installed, runs.firstSeen?.timeIntervalSince1970 ?? now - watchedFor.seconds)
                overdue = "has never succeeded in the \(staleText) (stale_after) since caretaker first saw it"
            }
            return now - graceFrom > stale ? health(false, overdue) : health(true, "has not run yet")
        }
        if now - lastSuccess > stale {
            return health(false, "last success is older than stale_after (\(staleText))")
        }
        // Each of the last `blockedRunsLimit` finished runs blocked some rows.
        if runs.recentRuns == blockedRunsLimit, runs.recentBlocked == blockedRunsLimit {
            return health(
                false,
                "the last \(blockedRunsLimit) runs each skipped rows the app protects (latest: \(runs.latestBlocked ?? "")): "
                    + "the run's warning in the log names the constraint or trigger and the rows")
        }
        return health(true, "ok")
    }
}
