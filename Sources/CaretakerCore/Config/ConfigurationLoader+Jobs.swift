#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The built-in jobs, in the order `jobs` and `once --all` list them.
public enum BuiltInJob: String, Sendable, CaseIterable {
    case expireContent = "expire-content"
    case logoutInactive = "logout-inactive"
    case sendTempPasswords = "send-temp-passwords"
    case leaderSuccession = "leader-succession"
    case prune = "prune"

    /// Default schedules from SPEC §3 and §8.
    var defaultSchedule: String {
        switch self {
        case .expireContent, .leaderSuccession: "*/5 * * * *"
        case .logoutInactive, .sendTempPasswords: "@every 1m"
        case .prune: "@daily"
        }
    }
}

extension ConfigurationLoader {
    /// Default rows per transaction; low-footprint mode uses `lowFootprintBatchSize`.
    static let defaultBatchSize = 1000
    static let lowFootprintBatchSize = 200
    /// `max_wal_rate`: what a backlog's batches may write per second (BENCHMARKS.md, C1);
    /// in low-footprint mode what an SD card takes without holding up the app's commits.
    static let defaultMaxWALRate: Int64 = 64 << 20
    static let lowFootprintMaxWALRate: Int64 = 16 << 20
    /// `max_replica_lag`: how far behind a streaming standby may replay before batches wait.
    static let defaultMaxReplicaLag: Duration = .seconds(5)

    static func readJobs(_ root: inout TableReader, worker: WorkerOptions) throws(ConfigurationError) -> [JobConfiguration] {
        let jobsTable = try root.optionalTable("jobs") ?? TableReader.emptyTable
        for entry in jobsTable.entries {
            guard case .table = entry.value else {
                throw ConfigurationError(file: root.file, line: entry.line, key: "jobs.\(entry.key)",
                                         message: "expected a table [jobs.\(entry.key)]")
            }
        }
        var jobs: [JobConfiguration] = []
        for builtIn in BuiltInJob.allCases {
            jobs.append(try readJob(named: builtIn.rawValue, builtIn: builtIn, in: jobsTable, file: root.file, worker: worker))
        }
        for entry in jobsTable.entries where BuiltInJob(rawValue: entry.key) == nil {
            jobs.append(try readJob(named: entry.key, builtIn: nil, in: jobsTable, file: root.file, worker: worker))
        }
        return jobs
    }

    private static func readJob(named name: String, builtIn: BuiltInJob?, in jobs: TOMLTable,
                                file: String, worker: WorkerOptions) throws(ConfigurationError) -> JobConfiguration {
        var ownTable: TOMLTable = TableReader.emptyTable
        if case .table(let found)? = jobs[name] { ownTable = found }
        var table = TableReader(ownTable, path: "jobs.\(name)", file: file)
        if builtIn == nil { try validateOperatorJobName(name, table: table) }

        let settings: JobSettings = switch builtIn {
        case .expireContent: .expireContent(try readExpireContent(&table))
        case .logoutInactive: .logoutInactive(try readLogoutInactive(&table))
        case .sendTempPasswords: .sendTempPasswords(try readSendTempPasswords(&table, file: file, worker: worker))
        case .leaderSuccession: .leaderSuccession(try readLeaderSuccession(&table))
        case .prune: .prune(try readPrune(&table))
        case nil: .sql(try readSQLJob(&table))
        }
        let job = try readCommonKeys(&table, name: name, defaultSchedule: builtIn?.defaultSchedule, worker: worker, settings: settings)
        try table.finish()
        return job
    }

    private static func validateOperatorJobName(_ name: String, table: TableReader) throws(ConfigurationError) {
        let allowed = name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        guard allowed, !name.isEmpty, name.count <= 48 else {
            throw ConfigurationError(file: table.file, line: table.table.headerLine, key: "jobs.\(name)",
                                     message: "a job name may use letters, digits, - and _ (at most 48)")
        }
        guard table.table["sql"] != nil else {
            let builtIns = BuiltInJob.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationError(file: table.file, line: table.table.headerLine, key: "jobs.\(name)",
                                     message: "unknown job; the built-in jobs are \(builtIns), and an operator job needs sql = \"…\"")
        }
    }

    private static func readCommonKeys(_ table: inout TableReader, name: String, defaultSchedule: String?,
                                       worker: WorkerOptions, settings: JobSettings) throws(ConfigurationError) -> JobConfiguration {
        let enabled = try table.bool("enabled", default: true)
        var zone = worker.timeZone
        var zoneLabel = worker.timeZoneName
        if let zoneName = try table.optionalString("timezone") {
            guard let found = ZoneInfo(identifier: zoneName) else {
                throw table.error("timezone", "\"\(zoneName)\" is not an IANA time zone name (e.g. \"UTC\", \"Europe/Berlin\")")
            }
            zone = found
            zoneLabel = zoneName
        }
        guard let scheduleText = try table.optionalString("schedule") ?? defaultSchedule else {
            throw table.error("schedule", "is required for an operator job, e.g. schedule = \"@hourly\"")
        }
        let schedule: Schedule
        do {
            schedule = try Schedule(parsing: scheduleText, timeZone: zone)
        } catch {
            throw table.error("schedule", error.message)
        }
        // A typo such as "0 0 31 2 *" must not silently disable a job.
        guard schedule.nextDate(after: Date()) != nil else {
            throw table.error("schedule", "\"\(scheduleText)\" never fires")
        }
        return JobConfiguration(
            name: name,
            enabled: enabled,
            schedule: schedule,
            timeZoneName: zoneLabel,
            statementTimeout: try table.duration("statement_timeout", default: .seconds(30), minimum: .milliseconds(1),
                                                 maximum: JobConfiguration.longestTimeout),
            lockTimeout: try table.duration("lock_timeout", default: .seconds(2), minimum: .milliseconds(1),
                                            maximum: JobConfiguration.longestTimeout),
            maxRuntime: try table.duration("max_runtime", default: .seconds(300), minimum: .milliseconds(1)),
            batchSize: try table.integer("batch_size",
                                         default: worker.lowFootprint ? lowFootprintBatchSize : defaultBatchSize,
                                         in: 1...1_000_000),
            batchPause: try table.duration("batch_pause", default: worker.batchPause),
            catchUp: try table.bool("catch_up", default: true),
            maxRetries: try table.integer("max_retries", default: 3, in: 0...100),
            staleAfter: try table.optionalDuration("stale_after", minimum: .seconds(1)),
            maxWALRate: try table.optionalRate("max_wal_rate",
                                               default: worker.lowFootprint ? lowFootprintMaxWALRate : defaultMaxWALRate),
            maxReplicaLag: try table.optionalDuration("max_replica_lag", default: defaultMaxReplicaLag,
                                                      minimum: .milliseconds(1)),
            synchronousCommit: try table.bool("synchronous_commit", default: !settings.isIdempotentBulkWork),
            settings: settings)
    }

    private static func readExpireContent(_ table: inout TableReader) throws(ConfigurationError) -> ExpireContentSettings {
        var settings = ExpireContentSettings()
        settings.minLifetime = try table.duration("min_lifetime", default: settings.minLifetime)
        settings.maxLifetime = try table.duration("max_lifetime", default: settings.maxLifetime)
        guard settings.maxLifetime >= settings.minLifetime else {
            throw table.error("max_lifetime", "must not be shorter than min_lifetime")
        }
        settings.postFullPopularity = try table.integer("post_full_popularity", default: 100, in: 1...Int(Int32.max))
        settings.packFullPopularity = try table.integer("pack_full_popularity", default: 100, in: 1...Int(Int32.max))
        settings.compressWAL = try table.bool("compress_wal", default: false)
        return settings
    }

    private static func readLogoutInactive(_ table: inout TableReader) throws(ConfigurationError) -> LogoutInactiveSettings {
        LogoutInactiveSettings(idleTimeout: try table.duration("idle_timeout", default: .seconds(600), minimum: .seconds(1)))
    }

    private static func readSendTempPasswords(_ table: inout TableReader, file: String,
                                              worker: WorkerOptions) throws(ConfigurationError) -> SendTempPasswordsSettings {
        var settings = SendTempPasswordsSettings()
        settings.maxPerHour = try table.integer("max_per_hour", default: 3, in: 1...1000)
        // bcrypt reads at most 72 bytes of a password.
        settings.tempPasswordLength = try table.integer("temp_password_length", default: 16, in: 12...72)
        settings.tempPasswordTTL = try table.duration("temp_password_ttl", default: settings.tempPasswordTTL, minimum: .seconds(60))
        settings.bcryptCost = try table.integer("bcrypt_cost", default: worker.lowFootprint ? 10 : 12, in: 4...31)
        settings.maxAttempts = try table.integer("max_attempts", default: 5, in: 1...100)
        settings.templateFile = try table.string("template_file", default: "")
        if !settings.templateFile.isEmpty {
            settings.template = try readTemplate(settings.templateFile, relativeTo: file, table: table)
        }
        return settings
    }

    private static func readTemplate(_ path: String, relativeTo file: String, table: TableReader) throws(ConfigurationError) -> MailTemplate {
        let resolved = path.hasPrefix("/") ? path
            : URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent(path).path
        let text: String
        do {
            text = try TextFile.read(resolved)
        } catch {
            throw table.error("template_file", "cannot read \(resolved) (\(error))")
        }
        if text.utf8.contains(0) { throw table.error("template_file", "\(resolved) contains a NUL byte") }
        switch MailTemplate.parse(text) {
        case .success(let template): return template
        case .failure(let problem): throw table.error("template_file", "\(resolved): \(problem.message)")
        }
    }

    private static func readLeaderSuccession(_ table: inout TableReader) throws(ConfigurationError) -> LeaderSuccessionSettings {
        LeaderSuccessionSettings(leaderInactiveAfter: try table.optionalDuration("leader_inactive_after", minimum: .seconds(60)))
    }

    private static func readPrune(_ table: inout TableReader) throws(ConfigurationError) -> PruneSettings {
        var settings = PruneSettings()
        settings.keepHistory = try table.duration("keep_history", default: settings.keepHistory, minimum: .seconds(3600))
        settings.keepRevokedSessions = try table.duration("keep_revoked_sessions", default: settings.keepRevokedSessions)
        settings.keepResetRequests = try table.duration("keep_reset_requests", default: settings.keepResetRequests)
        return settings
    }

    private static func readSQLJob(_ table: inout TableReader) throws(ConfigurationError) -> SQLJobSettings {
        let sql = try table.string("sql", default: "").trimmed()
        let repeatUntilZero = try table.bool("repeat_until_zero", default: false)
        switch SQLText.check(sql, mustChangeRows: repeatUntilZero) {
        case .success: break
        case .failure(let problem): throw table.error(problem.key, problem.message)
        }
        return SQLJobSettings(sql: sql, repeatUntilZero: repeatUntilZero)
    }
}
