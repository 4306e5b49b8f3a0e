import CaretakerSchedule
import CaretakerTOML
import CaretakerText

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ConfigurationLoader {
    /// Default rows per transaction; low-footprint mode uses `lowFootprintBatchSize`.
    static let defaultBatchSize = 1000
    static let lowFootprintBatchSize = 200
    /// `max_wal_rate`: what a backlog's batches may write per second at most (BENCHMARKS.md,
    /// C1; the budget starts at half of it and follows `max_commit_slowdown`); in
    /// low-footprint mode what an SD card takes without holding up the app's commits.
    static let defaultMaxWALRate: Int64 = 384 << 20
    static let lowFootprintMaxWALRate: Int64 = 16 << 20
    /// `max_commit_slowdown`: how much slower than the run's quietest a commit may get
    /// before the WAL budget is cut (`WriteBudget`).
    static let defaultMaxCommitSlowdown = 100
    /// `max_replica_lag`: how far behind a streaming standby may replay before batches wait.
    static let defaultMaxReplicaLag: Duration = .seconds(5)
    /// `max_busy_share` of a job that works through backlogs (`BuiltInJob.isIdempotentBulkWork`):
    /// its batches rest so that they keep the server busy at most this share of the time.
    static let defaultMaxBusyShare = 80

    static func readJobs(
        _ root: inout TableReader, worker: WorkerOptions, catalogue: [BuiltInJob]
    ) throws(ConfigurationError) -> [JobConfiguration] {
        let jobsTable = try root.optionalTable("jobs") ?? TableReader.emptyTable
        for entry in jobsTable.entries {
            guard case .table = entry.value else {
                throw ConfigurationError(
                    file: root.file, line: entry.line, key: "jobs.\(entry.key)",
                    message: "expected a table [jobs.\(entry.key)]")
            }
        }
        var jobs: [JobConfiguration] = []
        for builtIn in catalogue {
            jobs.append(
                try readJob(
                    named: builtIn.rawValue, builtIn: builtIn, in: jobsTable, file: root.file, worker: worker,
                    catalogue: catalogue))
        }
        for entry in jobsTable.entries where !catalogue.contains(where: { $0.rawValue == entry.key }) {
            jobs.append(
                try readJob(
                    named: entry.key, builtIn: nil, in: jobsTable, file: root.file, worker: worker,
                    catalogue: catalogue))
        }
        return jobs
    }

    private static func readJob(
        named name: String, builtIn: BuiltInJob?, in jobs: TOMLTable,
        file: String, worker: WorkerOptions, catalogue: [BuiltInJob]
    ) throws(ConfigurationError) -> JobConfiguration {
        var ownTable: TOMLTable = TableReader.emptyTable
        if case .table(let found)? = jobs[name] { ownTable = found }
        var table = TableReader(ownTable, path: "jobs.\(name)", file: file)
        if builtIn == nil { try validateOperatorJobName(name, table: table, catalogue: catalogue) }

        let settings: JobSettings =
            if let builtIn {
                try builtIn.readSettings(&table, file: file, worker: worker)
            } else {
                .sql(try readSQLJob(&table))
            }
        var job = try readCommonKeys(&table, name: name, builtIn: builtIn, worker: worker, settings: settings)
        job.pingURL = try table.string("ping_url", default: "")
        if !job.pingURL.isEmpty, !(job.pingURL.hasPrefix("http://") || job.pingURL.hasPrefix("https://")) {
            throw table.error("ping_url", "must start with http:// or https:// (empty: no pings)")
        }
        try table.finish()
        return job
    }

    private static func validateOperatorJobName(
        _ name: String, table: TableReader, catalogue: [BuiltInJob]
    ) throws(ConfigurationError) {
        let allowed = name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        guard allowed, !name.isEmpty, name.count <= 48 else {
            throw ConfigurationError(
                file: table.file, line: table.table.headerLine, key: "jobs.\(name)",
                message: "a job name may use letters, digits, - and _ (at most 48)")
        }
        guard table.table["sql"] != nil else {
            let builtIns = catalogue.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationError(
                file: table.file, line: table.table.headerLine, key: "jobs.\(name)",
                message: "unknown job; the built-in jobs are \(builtIns), and an operator job needs sql = \"…\"")
        }
    }

    private static func readCommonKeys(
        _ table: inout TableReader, name: String, builtIn: BuiltInJob?,
        worker: WorkerOptions, settings: JobSettings
    ) throws(ConfigurationError) -> JobConfiguration {
        let enabled = try table.bool("enabled", default: true)
        var zone = worker.timeZone
        var zoneLabel = worker.timeZoneName
        if let zoneName = try table.optionalString("timezone") {
            guard let found = ZoneInfo(identifier: zoneName) else {
                throw table.error(
                    "timezone", "\"\(zoneName)\" is not an IANA time zone name (e.g. \"UTC\", \"Europe/Berlin\")")
            }
            zone = found
            zoneLabel = zoneName
        }
        guard let scheduleText = try table.optionalString("schedule") ?? builtIn?.defaultSchedule else {
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
            statementTimeout: try table.duration(
                "statement_timeout", default: .seconds(30), minimum: .milliseconds(1),
                maximum: JobConfiguration.longestTimeout),
            lockTimeout: try table.duration(
                "lock_timeout", default: .seconds(2), minimum: .milliseconds(1),
                maximum: JobConfiguration.longestTimeout),
            maxRuntime: try table.duration("max_runtime", default: .seconds(300), minimum: .milliseconds(1)),
            batchSize: try table.integer(
                "batch_size",
                default: worker.lowFootprint ? lowFootprintBatchSize : defaultBatchSize,
                in: 1...1_000_000),
            batchPause: try table.duration("batch_pause", default: worker.batchPause),
            catchUp: try table.bool("catch_up", default: true),
            maxRetries: try table.integer("max_retries", default: 3, in: 0...100),
            staleAfter: try table.optionalDuration("stale_after", minimum: .seconds(1)),
            maxWALRate: try table.optionalRate(
                "max_wal_rate",
                default: worker.lowFootprint ? lowFootprintMaxWALRate : defaultMaxWALRate),
            maxCommitSlowdown: try table.optionalPercent("max_commit_slowdown", default: defaultMaxCommitSlowdown),
            maxReplicaLag: try table.optionalDuration(
                "max_replica_lag", default: defaultMaxReplicaLag,
                minimum: .milliseconds(1)),
            maxBusyShare: try table.optionalPercent(
                "max_busy_share", default: builtIn?.isIdempotentBulkWork == true ? defaultMaxBusyShare : nil,
                in: 1...100),
            waitForVacuum: try table.bool(
                "wait_for_vacuum", default: worker.lowFootprint && builtIn?.isIdempotentBulkWork == true),
            checkpointSpacing: try checkpointSpacing(&table),
            synchronousCommit: try table.bool("synchronous_commit", default: !(builtIn?.isIdempotentBulkWork ?? false)),
            settings: settings)
    }

    /// `checkpoint_spacing`: absent or `"auto"`, scaled to the server's `max_wal_size`;
    /// `""`, no checkpoint cap; a duration, that.
    private static func checkpointSpacing(_ table: inout TableReader) throws(ConfigurationError) -> CheckpointSpacing? {
        if table.isAbsent("checkpoint_spacing") || table.isWord("checkpoint_spacing", "auto") { return .scaled }
        return try table.optionalDuration("checkpoint_spacing", minimum: .milliseconds(1)).map(CheckpointSpacing.every)
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
