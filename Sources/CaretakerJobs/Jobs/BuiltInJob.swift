import CaretakerConfig
import CaretakerMail

/// The catalogue of built-in jobs: the one list of them (`allCases`). Each job says
/// what the rest of caretaker needs to know about it in its own file, through
/// `JobDefinition`; `BuiltInJob` only hands those facts on. A new job is its own
/// file(s) and one line in `allCases`. See `docs/adding-a-job.md`.
extension BuiltInJob {
    /// The built-in jobs, in the order `jobs` and `once --all` list them.
    public static let allCases: [BuiltInJob] = [
        BuiltInJob(ExpireContent.self),
        BuiltInJob(LogoutInactive.self),
        BuiltInJob(SendTempPasswords.self),
        BuiltInJob(LeaderSuccession.self),
        BuiltInJob(Prune.self),
    ]

    init(_ definition: any JobDefinition.Type) {
        self.init(configurable: definition)
    }

    /// The built-in job named `rawValue`, if there is one.
    public init?(rawValue: String) {
        guard let found = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = found
    }

    /// The job's definition. Every `BuiltInJob` is made from one (`init(_:)`; the
    /// configuration layer below sees only its `ConfigurableJob` part).
    var definition: any JobDefinition.Type {
        guard let definition = configurable as? any JobDefinition.Type else {
            preconditionFailure("built-in job \(rawValue) was not made from a JobDefinition")
        }
        return definition
    }

    public var notifyChannel: String? { definition.notifyChannel }
    var deletesRunHistory: Bool { definition.deletesRunHistory }
    var caretakerTablePrivileges: [String: RuntimeGrants.TablePrivileges] { definition.caretakerTablePrivileges }
    var appTablePrivileges: [String: RuntimeGrants.TablePrivileges] { definition.appTablePrivileges }
    var appColumns: [SchemaCheck.AppTable] { definition.appColumns }
    /// The stats the job's runs report, as the job declares them (the pacing's come on top).
    public var stats: [StatDeclaration] { definition.stats }
    /// The counters of the job's stats that the dashboard's overview charts.
    public var chartedCounters: [String] { definition.stats.filter { $0.chart != nil }.map(\.name) }
}

extension ConfigurationLoader {
    /// Reads and validates the file, for the built-in jobs of the catalogue. `lowFootprint`
    /// (the command-line flag, or a reload keeping the running mode), when given, wins
    /// over the file's `worker.low_footprint`.
    public static func load(path: String, lowFootprint: Bool? = nil) throws(ConfigurationError) -> Configuration {
        try load(path: path, lowFootprint: lowFootprint, catalogue: BuiltInJob.allCases)
    }

    /// Validates configuration text for the built-in jobs of the catalogue; `file` is
    /// only used in messages and to resolve `template_file`.
    public static func parse(
        _ text: String, file: String, lowFootprint: Bool? = nil
    ) throws(ConfigurationError) -> Configuration {
        try parse(text, file: file, lowFootprint: lowFootprint, catalogue: BuiltInJob.allCases)
    }
}

extension JobConfiguration {
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
