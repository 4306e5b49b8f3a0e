#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Postgres

/// What `caretaker status` shows: the database and schema, and per job its
/// health, last run, next slot and the runs going on right now (where), all
/// read from the database, on its clock.
public struct StatusReport: Sendable {
    public struct Database: Sendable {
        public let name: String
        public let serverVersion: String
        public let inRecovery: Bool
    }

    public struct Schema: Sendable {
        /// The highest applied migration; 0 when caretaker never migrated this database.
        public let version: Int
        public let latest: Int
        public let pending: Int
    }

    public struct LastRun: Sendable {
        public let id: Int64
        public let status: String
        public let trigger: String
        public let startedAt: String
        public let ageSeconds: Double
        public let durationMilliseconds: Int?
        /// `job_runs.stats` as stored (JSON text).
        public let stats: String
        public let error: String?
        public let host: String
        public let pid: Int
    }

    public struct Running: Sendable {
        public let id: Int64
        public let host: String
        public let pid: Int
        public let startedAt: String
        public let forSeconds: Double
        /// False when no session holds the job's lock: its process died (the next run marks it interrupted).
        public let alive: Bool
    }

    public struct Job: Sendable {
        public let name: String
        public let enabled: Bool
        public let schedule: String
        /// Nil for a disabled job, or before the schema exists.
        public let health: JobHealth?
        public let lastRun: LastRun?
        public let nextSlot: Date?
        public let running: [Running]
        /// `caretaker.job_alerts.state`, when alerts have judged the job.
        public let alertState: String?
    }

    public let database: Database
    public let schema: Schema
    public let now: Date
    public let jobs: [Job]

    public var unhealthyJobs: [Job] { jobs.filter { $0.health?.healthy == false } }

    public static func read(_ connection: Connection, configuration: Configuration) throws -> StatusReport {
        let info = try connection.query("""
            SELECT current_database() AS name, current_setting('server_version') AS version,
                   pg_is_in_recovery() AS recovery, extract(epoch FROM clock_timestamp())::float8 AS now
            """).first
        let database = Database(name: info?["name"] ?? "", serverVersion: info?["version"] ?? "",
                                inRecovery: info?.bool("recovery") ?? false)
        let now = Date(timeIntervalSince1970: info?.double("now") ?? 0)
        let applied = try Migrator(appSchema: configuration.database.appSchema).appliedVersions(on: connection)
        let latest = Migration.all.last?.version ?? 0
        let schema = Schema(version: applied.max() ?? 0, latest: latest,
                            pending: Migration.all.filter { !applied.contains($0.version) }.count)
        guard !applied.isEmpty else {
            let jobs = configuration.jobs.map {
                Job(name: $0.name, enabled: $0.enabled, schedule: $0.schedule.text, health: nil, lastRun: nil,
                    nextSlot: $0.enabled ? $0.schedule.nextDate(after: now) : nil, running: [], alertState: nil)
            }
            return StatusReport(database: database, schema: schema, now: now, jobs: jobs)
        }
        var health: [String: JobHealth] = [:]
        for judged in try JobHealth.assess(connection, configuration: configuration) { health[judged.job] = judged }
        let alertsTable = try connection.query("SELECT to_regclass('caretaker.job_alerts') IS NOT NULL AS present").first?.bool("present") == true
        let jobs = try configuration.jobs.map { job in
            Job(name: job.name, enabled: job.enabled, schedule: job.schedule.text, health: health[job.name],
                lastRun: try lastRun(of: job.name, on: connection),
                nextSlot: job.enabled ? job.schedule.nextDate(after: now) : nil,
                running: try running(job.name, on: connection),
                alertState: alertsTable ? try connection.query("SELECT state FROM caretaker.job_alerts WHERE job = $1", job.name).first?["state"] : nil)
        }
        return StatusReport(database: database, schema: schema, now: now, jobs: jobs)
    }

    private static func lastRun(of job: String, on connection: Connection) throws -> LastRun? {
        try connection.query("""
            SELECT id, status, trigger, stats::text AS stats, error, host, pid,
                   to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS started,
                   extract(epoch FROM clock_timestamp() - started_at)::float8 AS age,
                   (extract(epoch FROM finished_at - started_at) * 1000)::bigint AS duration_ms
            FROM caretaker.job_runs
            WHERE job = $1 AND NOT dry_run AND status <> 'running'
            ORDER BY started_at DESC, id DESC LIMIT 1
            """, job).first.map {
            LastRun(id: $0.int64("id") ?? 0, status: $0["status"] ?? "", trigger: $0["trigger"] ?? "",
                    startedAt: $0["started"] ?? "", ageSeconds: $0.double("age") ?? 0,
                    durationMilliseconds: $0.int("duration_ms"), stats: $0["stats"] ?? "{}", error: $0["error"],
                    host: $0["host"] ?? "", pid: $0.int("pid") ?? 0)
        }
    }

    private static func running(_ job: String, on connection: Connection) throws -> [Running] {
        try connection.query("""
            SELECT id, host, pid, caretaker.job_lock_held(job) AS alive,
                   to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS started,
                   extract(epoch FROM clock_timestamp() - started_at)::float8 AS running_for
            FROM caretaker.job_runs
            WHERE job = $1 AND status = 'running'
            ORDER BY started_at, id
            """, job).rows.map {
            Running(id: $0.int64("id") ?? 0, host: $0["host"] ?? "", pid: $0.int("pid") ?? 0,
                    startedAt: $0["started"] ?? "", forSeconds: $0.double("running_for") ?? 0,
                    alive: $0.bool("alive") ?? false)
        }
    }

    /// A short age for people: `42s`, `7m`, `3h12m`, `5d`.
    public static func age(_ seconds: Double) -> String {
        let whole = max(0, Int(seconds.rounded(.down)))
        switch whole {
        case ..<60: return "\(whole)s"
        case ..<3600: return "\(whole / 60)m"
        case ..<86400: return "\(whole / 3600)h" + (whole % 3600 / 60 > 0 ? "\(whole % 3600 / 60)m" : "")
        default: return "\(whole / 86400)d"
        }
    }
}
