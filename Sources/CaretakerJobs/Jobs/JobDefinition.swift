import CaretakerConfig
import CaretakerMail

/// What caretaker needs to know about a built-in job, declared by the job in its own
/// file: what the configuration reads (`ConfigurableJob`: its name, default schedule,
/// whether it sends mail or works through backlogs), its settings and their reader, how
/// it is made, what wakes it besides its schedule, the privileges its SQL needs, the app
/// columns `check` verifies, and the stats it reports: what each measures, and which
/// the dashboard charts.
///
/// The catalogue (`BuiltInJob.allCases`) lists the types that adopt it; the
/// configuration loader, the runner, the daemon's wake-ups, `MailSetup`, `check`,
/// `migrate --grant` and the dashboard ask the job through it and never name one.
/// See `docs/adding-a-job.md`.
protocol JobDefinition: Job, ConfigurableJob {
    /// The job's own settings (the keys of its `[jobs.NAME]` table beyond the common ones).
    associatedtype Settings: Sendable

    /// Reads the job's own keys from its `[jobs.NAME]` table (the common keys are the loader's).
    static func readSettings(
        _ table: inout TableReader, file: String, worker: WorkerOptions
    ) throws(ConfigurationError) -> Settings
    /// The job that carries out `settings` (`mail` is set up only for a job that `sendsMail`).
    static func make(_ settings: Settings, mail: (any MailTransport)?, mailOptions: MailOptions) -> Self

    /// The channel whose NOTIFY wakes the job (normal mode); nil by default.
    static var notifyChannel: String? { get }
    /// What wakes the job besides its schedule; by default its `notifyChannel`.
    static func wakeups(_ settings: Settings) -> JobWakeups
    /// The job deletes caretaker's own history (`job_runs`, `job_slots`), so the runtime role needs DELETE there.
    static var deletesRunHistory: Bool { get }
    /// What the job reads and writes of caretaker's own tables beyond the run history (`migrate --grant`).
    static var caretakerTablePrivileges: [String: RuntimeGrants.TablePrivileges] { get }
    /// What the job reads and writes, per app table, for `migrate --grant`; the SQL is in the job's files.
    static var appTablePrivileges: [String: RuntimeGrants.TablePrivileges] { get }
    /// The app columns the job relies on, with the types `check` accepts: those it reads
    /// and writes (every column of `appTablePrivileges`), and the reference schema's columns no job
    /// reads of the tables it works on (so that all of docs/schema.md is verified). `check`
    /// verifies them while the job is enabled and warns about them while it is disabled.
    static var appColumns: [SchemaCheck.AppTable] { get }
    /// Server parameters the job's transactions set under `settings` (`GRANT SET ON PARAMETER`).
    static func settableParameters(_ settings: Settings) -> [String]
    /// Every counter the job's runs report in `job_runs.stats`, with what it measures
    /// (summed counts, bytes, time, or one-run figures) and whether the dashboard's
    /// overview charts it. The pacing's own (`WritePacer.stats`) come on top.
    static var stats: [StatDeclaration] { get }
}

extension JobDefinition {
    static var notifyChannel: String? { nil }
    static func wakeups(_ settings: Settings) -> JobWakeups { JobWakeups(notifyChannel: notifyChannel) }
    static var isIdempotentBulkWork: Bool { false }
    static var sendsMail: Bool { false }
    static var deletesRunHistory: Bool { false }
    static var caretakerTablePrivileges: [String: RuntimeGrants.TablePrivileges] { [:] }
    static func settableParameters(_ settings: Settings) -> [String] { [] }

    // The catalogue holds jobs as `any JobDefinition.Type` and their settings as
    // `any Sendable`: these take the settings back as the job's own type.

    static func settings(_ erased: any Sendable) -> Settings {
        guard let settings = erased as? Settings else {
            preconditionFailure("the settings of job \(name) were read by another job's definition")
        }
        return settings
    }

    static func makeJob(_ erased: any Sendable, mail: (any MailTransport)?, mailOptions: MailOptions) -> any Job {
        make(settings(erased), mail: mail, mailOptions: mailOptions)
    }

    static func wakeups(erased: any Sendable) -> JobWakeups { wakeups(settings(erased)) }

    static func settableParameters(erased: any Sendable) -> [String] { settableParameters(settings(erased)) }

    static func readErasedSettings(
        _ table: inout TableReader, file: String, worker: WorkerOptions
    ) throws(ConfigurationError) -> any Sendable {
        try readSettings(&table, file: file, worker: worker)
    }
}
