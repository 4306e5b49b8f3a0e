import CaretakerTestSupport
import Logging
import Postgres
import Testing

@testable import CaretakerConfig
@testable import CaretakerCore
@testable import CaretakerDatabase
@testable import CaretakerJobs
@testable import CaretakerMail
@testable import CaretakerSupport

/// A job defined here as a new built-in job would be (`docs/adding-a-job.md`): one
/// type that runs the job and declares its facts through `JobDefinition`, and one
/// line in the catalogue. It deletes the app's notes older than `keep`.
struct ExpireNotes: JobDefinition {
    struct Settings: Sendable {
        var keep: Duration
        /// Reports `notes_seen`, a stat the job does not declare (the test of the runner's warning).
        var reportsUndeclared = false
    }

    static let name = "expire-notes"
    static let defaultSchedule = "@hourly"

    let settings: Settings

    static func readSettings(
        _ table: inout TableReader, file: String, worker: WorkerOptions
    ) throws(ConfigurationError) -> Settings {
        Settings(
            keep: try table.duration("keep", default: .seconds(86_400), minimum: .seconds(1)),
            reportsUndeclared: try table.bool("report_undeclared_stat", default: false))
    }

    static func make(_ settings: Settings, mail: (any MailTransport)?, mailOptions: MailOptions) -> Self {
        ExpireNotes(settings: settings)
    }

    static var appTablePrivileges: [String: RuntimeGrants.TablePrivileges] {
        ["notes": RuntimeGrants.TablePrivileges(select: ["id", "created_at"], delete: true)]
    }

    static var appColumns: [SchemaCheck.AppTable] {
        [SchemaCheck.AppTable("notes", ["id": .bigintID, "created_at": .timestamptz])]
    }

    static var stats: [StatDeclaration] { [.count("notes_deleted", charted: .work)] }

    func run(_ context: JobContext) throws -> JobStats {
        var stats = JobStats([("notes_deleted", 0)])
        if settings.reportsUndeclared { stats.add("notes_seen", 2) }
        let deleted = try context.inBatch { connection in
            try connection.query(
                "DELETE FROM \(context.schema).notes WHERE created_at < now() - make_interval(secs => $1)",
                Double(settings.keep.microseconds) / 1_000_000
            ).affectedRows
        }
        stats.add("notes_deleted", deleted)
        return stats
    }
}

/// A new job needs its own file(s) and one line in the catalogue: the sample job,
/// registered through the same protocol as the built-in ones, is configured, granted
/// and run against PostgreSQL like them.
@Suite struct SampleJobTests {
    static let catalogue = BuiltInJob.allCases + [BuiltInJob(ExpireNotes.self)]

    @Test("a job defined through JobDefinition and added to the catalogue is read, granted, woken and run")
    func sampleJobRuns() throws {
        let db = try TestDatabase()
        try db.connection.execute(
            script: """
                CREATE TABLE public.notes (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL);
                INSERT INTO public.notes (created_at) VALUES (now() - interval '3 hours'), (now() - interval '10 minutes');
                """)
        let configuration = try ConfigurationLoader.parse(
            db.configurationText("[jobs.expire-notes]\nkeep = \"1h\"\n"), file: "test.toml",
            catalogue: Self.catalogue)
        let job = try #require(configuration.job(named: "expire-notes"))
        // The catalogue's facts come from the job's declaration.
        #expect(job.builtIn?.rawValue == "expire-notes")
        #expect(job.schedule == (try Schedule(parsing: "@hourly", timeZone: configuration.worker.timeZone)))
        #expect(job.settings(as: ExpireNotes.Settings.self)?.keep == .seconds(3600))
        #expect(job.wakeups.notifyChannel == nil && job.wakeups.nextDeadline == nil)
        #expect(job.builtIn?.chartedCounters == ["notes_deleted"])
        #expect(job.declaredStats.kind(of: "notes_deleted") == .count)
        #expect(job.declaredStats.kind(of: "throttled_ms") == .milliseconds)
        // Without the catalogue line, the same table is an operator job without SQL: refused.
        #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.parse(
                db.configurationText("[jobs.expire-notes]\nkeep = \"1h\"\n"), file: "test.toml")
        }

        // `migrate --grant` grants what the job declares, and the restricted role can run it.
        let grants = RuntimeGrants(appSchema: "public", jobs: configuration.jobs)
        #expect(grants.jobs.contains("expire-notes"))
        _ = try grants.apply(role: TemporaryPostgres.workerRole, on: db.connection)
        let runner = JobRunner(configuration: configuration, mail: nil, logger: Logger(label: "test"))
        let outcome = try runner.run(.init(job: job, trigger: .manual), on: try db.connectAsWorker())
        guard case .finished(let runID, .succeeded, let stats, _) = outcome else {
            Issue.record("the sample job did not succeed: \(outcome)")
            return
        }
        #expect(stats["notes_deleted"] == 1)
        #expect(try db.count("SELECT count(*) FROM public.notes") == 1)
        #expect(
            try db.count(
                "SELECT count(*) FROM caretaker.job_runs WHERE id = $1 AND job = 'expire-notes' AND status = 'succeeded'",
                runID) == 1)
    }

    @Test("a stat a run reports that its job does not declare is named in a warning, and kept in job_runs")
    func undeclaredStatIsCaught() throws {
        let db = try TestDatabase()
        try db.connection.execute(
            script: "CREATE TABLE public.notes (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL);")
        _ = try RuntimeGrants(
            appSchema: "public",
            jobs: try ConfigurationLoader.parse(
                db.configurationText(""), file: "test.toml", catalogue: Self.catalogue
            ).jobs
        ).apply(role: TemporaryPostgres.workerRole, on: db.connection)
        for undeclared in [false, true] {
            let configuration = try ConfigurationLoader.parse(
                db.configurationText("[jobs.expire-notes]\nreport_undeclared_stat = \(undeclared)\n"),
                file: "test.toml", catalogue: Self.catalogue)
            let job = try #require(configuration.job(named: "expire-notes"))
            let output = LineOutput.capturing()
            let logger = Logger(label: "test") { _ in LineLogHandler(format: .logfmt, journald: false, output: output) }
            let runner = JobRunner(configuration: configuration, mail: nil, logger: logger)
            let outcome = try runner.run(.init(job: job, trigger: .manual), on: try db.connectAsWorker())
            guard case .finished(let runID, .succeeded, let stats, _) = outcome else {
                Issue.record("the sample job did not succeed: \(outcome)")
                return
            }
            #expect(job.declaredStats.undeclared(in: stats) == (undeclared ? ["notes_seen"] : []))
            let warnings = output.lines.filter { $0.contains("does not declare") }
            if undeclared {
                #expect(warnings.count == 1 && warnings[0].contains("stats=notes_seen"), "\(output.lines)")
                #expect(warnings.first?.contains("level=warning") == true, "\(warnings)")
                // Kept in the history all the same.
                #expect(
                    try db.count(
                        "SELECT count(*) FROM caretaker.job_runs WHERE id = $1 AND (stats->>'notes_seen')::int = 2",
                        runID) == 1)
            } else {
                #expect(warnings.isEmpty, "\(output.lines)")
            }
        }
    }
}
