/// A built-in job as the configuration sees it: the facts `jobs.toml` needs to read
/// the job's table. The jobs layer's `JobDefinition` refines it with everything else a
/// job declares, and lists the jobs (`BuiltInJob.allCases`), so that the configuration
/// is read without knowing any job by name.
package protocol ConfigurableJob: Sendable {
    /// The name in `jobs.toml`, the log, `job_runs` and the metrics.
    static var name: String { get }
    /// The schedule when `jobs.toml` gives none.
    static var defaultSchedule: String { get }
    /// Work that a crash may undo without harm because the next run redoes it: such a job
    /// commits its batches without waiting for the WAL flush by default (`synchronous_commit`),
    /// and rests its batches for `max_busy_share` by default.
    static var isIdempotentBulkWork: Bool { get }
    /// The job sends mail: the transport (and its password) is set up only when such a job is enabled.
    static var sendsMail: Bool { get }
    /// Reads the job's own keys from its `[jobs.NAME]` table (the common keys are the
    /// loader's), as the job's own settings type.
    static func readErasedSettings(
        _ table: inout TableReader, file: String, worker: WorkerOptions
    ) throws(ConfigurationError) -> any Sendable
}

/// A job of the catalogue (`BuiltInJob.allCases`, in the jobs layer), known by its name.
public struct BuiltInJob: Sendable, Hashable, CustomStringConvertible {
    /// The job's type. The jobs layer makes every `BuiltInJob` from a `JobDefinition`.
    package let configurable: any ConfigurableJob.Type

    package init(configurable: any ConfigurableJob.Type) {
        self.configurable = configurable
    }

    /// The job's name (`jobs.toml`, the log, `job_runs`).
    public var rawValue: String { configurable.name }
    public var description: String { rawValue }

    public static func == (a: BuiltInJob, b: BuiltInJob) -> Bool { a.rawValue == b.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

    var defaultSchedule: String { configurable.defaultSchedule }
    var isIdempotentBulkWork: Bool { configurable.isIdempotentBulkWork }
    public var sendsMail: Bool { configurable.sendsMail }

    /// Reads the job's own keys from its `[jobs.NAME]` table (the common keys are the loader's).
    func readSettings(
        _ table: inout TableReader, file: String, worker: WorkerOptions
    ) throws(ConfigurationError) -> JobSettings {
        .builtIn(self, try configurable.readErasedSettings(&table, file: file, worker: worker))
    }
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
}
