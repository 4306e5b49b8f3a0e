/// The catalogue of built-in jobs: the one list of them (`allCases`). Each job says
/// what the rest of caretaker needs to know about it in its own file, through
/// `JobDefinition`; this type only hands those facts on. A new job is its own
/// file(s) and one line in `allCases`. See `docs/adding-a-job.md`.
public struct BuiltInJob: Sendable, Hashable, CustomStringConvertible {
    let definition: any JobDefinition.Type

    init(_ definition: any JobDefinition.Type) {
        self.definition = definition
    }

    /// The built-in jobs, in the order `jobs` and `once --all` list them.
    public static let allCases: [BuiltInJob] = [
        BuiltInJob(ExpireContent.self),
        BuiltInJob(LogoutInactive.self),
        BuiltInJob(SendTempPasswords.self),
        BuiltInJob(LeaderSuccession.self),
        BuiltInJob(Prune.self),
    ]

    /// The built-in job named `rawValue`, if there is one.
    public init?(rawValue: String) {
        guard let found = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = found
    }

    /// The job's name (`jobs.toml`, the log, `job_runs`).
    public var rawValue: String { definition.name }
    public var description: String { rawValue }

    public static func == (a: BuiltInJob, b: BuiltInJob) -> Bool { a.rawValue == b.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

    var defaultSchedule: String { definition.defaultSchedule }

    /// Reads the job's own keys from its `[jobs.NAME]` table (the common keys are the loader's).
    func readSettings(
        _ table: inout TableReader, file: String, worker: WorkerOptions
    ) throws(ConfigurationError) -> JobSettings {
        .builtIn(self, try definition.readSettings(&table, file: file, worker: worker))
    }

    var isIdempotentBulkWork: Bool { definition.isIdempotentBulkWork }
    public var notifyChannel: String? { definition.notifyChannel }
    public var sendsMail: Bool { definition.sendsMail }
    var deletesRunHistory: Bool { definition.deletesRunHistory }
    var caretakerTablePrivileges: [String: RuntimeGrants.TablePrivileges] { definition.caretakerTablePrivileges }
    var appTablePrivileges: [String: RuntimeGrants.TablePrivileges] { definition.appTablePrivileges }
    var appColumns: [SchemaCheck.AppTable] { definition.appColumns }
    /// The stats the job's runs report, as the job declares them (the pacing's come on top).
    public var stats: [StatDeclaration] { definition.stats }
    /// The counters of the job's stats that the dashboard's overview charts.
    public var chartedCounters: [String] { definition.stats.filter { $0.chart != nil }.map(\.name) }
}

/// What each kind of job needs beyond the common keys: a built-in job's own settings
/// (its `JobDefinition.Settings`, read in the job's file), or an operator job's SQL.
public enum JobSettings: Sendable {
    case builtIn(BuiltInJob, any Sendable)
    case sql(SQLJobSettings)
}

extension JobConfiguration {
    /// The built-in job this is; nil for an operator SQL job.
    public var builtIn: BuiltInJob? {
        if case .builtIn(let job, _) = settings { job } else { nil }
    }

    /// The settings of a built-in job as its own type; nil for another job's.
    public func settings<Settings>(as type: Settings.Type) -> Settings? {
        if case .builtIn(_, let settings) = settings { settings as? Settings } else { nil }
    }

    /// The job that carries out this configuration.
    public func makeJob(mail: (any MailTransport)?, mailOptions: MailOptions) -> any Job {
        switch settings {
        case .builtIn(let job, let settings): job.definition.makeJob(settings, mail: mail, mailOptions: mailOptions)
        case .sql(let settings): OperatorSQL(settings: settings)
        }
    }

    /// What wakes this job besides its schedule, as the job declares it.
    public var wakeups: JobWakeups {
        switch settings {
        case .builtIn(let job, let settings): job.definition.wakeups(erased: settings)
        case .sql: .scheduleOnly
        }
    }

    /// Every stat a run of this job may report, with what it measures: the job's own
    /// declarations (an operator job's are `OperatorSQL.stats`) and the pacing's.
    public var declaredStats: [StatDeclaration] {
        switch settings {
        case .builtIn(let job, _): job.stats + WritePacer.stats
        case .sql: OperatorSQL.stats + WritePacer.stats
        }
    }

    /// Server parameters this job's transactions set (`GRANT SET ON PARAMETER`).
    var settableParameters: [String] {
        if case .builtIn(let job, let settings) = settings {
            job.definition.settableParameters(erased: settings)
        } else {
            []
        }
    }
}
