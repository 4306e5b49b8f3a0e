import CaretakerConfig
import CaretakerDatabase
import CaretakerJobs
import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
        /// What `SchemaReadiness` found missing, when anything is (no job runs meanwhile).
        public var problem: String? = nil
    }

    public struct Job: Sendable {
        public let name: String
        public let enabled: Bool
        public let schedule: String
        /// Nil for a disabled job, or before the schema exists.
        public let health: JobHealth?
        /// The latest row that is not `running`, dry runs left out.
        public let lastRun: RunRecord?
        public let nextSlot: Date?
        /// The runs going on now, oldest first.
        public let running: [RunHistory.Going]
        /// `caretaker.job_alerts.state`, when alerts have judged the job.
        public let alertState: AlertState?
    }

    public let database: Database
    public let schema: Schema
    public let now: Date
    public let jobs: [Job]

    public var unhealthyJobs: [Job] { jobs.filter { $0.health?.healthy == false } }

    public static func read(_ connection: Connection, configuration: Configuration) throws -> StatusReport {
        let info = try connection.query(
            """
            SELECT current_database() AS name, current_setting('server_version') AS version,
                   pg_is_in_recovery() AS recovery, extract(epoch FROM clock_timestamp())::float8 AS now
            """
        ).first
        let database = Database(
            name: info?["name"] ?? "", serverVersion: info?["version"] ?? "",
            inRecovery: info?.bool("recovery") ?? false)
        let now = Date(timeIntervalSince1970: info?.double("now") ?? 0)
        let applied = try Migrator(appSchema: configuration.database.appSchema).appliedVersions(on: connection)
        let latest = Migration.all.last?.version ?? 0
        var schema = Schema(
            version: applied.max() ?? 0, latest: latest,
            pending: Migration.all.filter { !applied.contains($0.version) }.count)
        if !applied.isEmpty {
            let readiness = try SchemaReadiness.check(connection, appSchema: configuration.database.appSchema)
            if !readiness.isReady { schema.problem = readiness.message }
        }
        guard !applied.isEmpty else {
            let jobs = configuration.jobs.map {
                Job(
                    name: $0.name, enabled: $0.enabled, schedule: $0.schedule.text, health: nil, lastRun: nil,
                    nextSlot: $0.enabled ? $0.schedule.nextDate(after: now) : nil, running: [], alertState: nil)
            }
            return StatusReport(database: database, schema: schema, now: now, jobs: jobs)
        }
        var health: [String: JobHealth] = [:]
        for judged in try JobHealth.assess(connection, configuration: configuration) { health[judged.job] = judged }
        let history = RunHistory(connection)
        let alerts = AlertStates(connection)
        let alertsTable = try alerts.tableExists()
        let jobs = try configuration.jobs.map { job in
            Job(
                name: job.name, enabled: job.enabled, schedule: job.schedule.text, health: health[job.name],
                lastRun: try history.latest(.ended, job: job.name),
                nextSlot: job.enabled ? job.schedule.nextDate(after: now) : nil,
                running: try history.running(job: job.name),
                alertState: alertsTable ? try alerts.state(job: job.name) : nil)
        }
        return StatusReport(database: database, schema: schema, now: now, jobs: jobs)
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
