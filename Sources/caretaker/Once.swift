import ArgumentParser
import CaretakerCore
import Logging
import Postgres

extension Caretaker {
    /// `caretaker once JOB... | --all [--dry-run]`
    struct Once: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run jobs once now, record them in caretaker.job_runs, then exit.",
            discussion:
                "Exit status: 0 all succeeded, 1 a job failed, 64 bad usage (an unknown job), 69 database unavailable (or a standby), 75 a job was already running elsewhere, 78 bad configuration or caretaker's schema not up to date (a migration pending: what `check` says; no job runs)."
        )

        @OptionGroup var common: CommonOptions

        @Argument(help: "Jobs to run (see `caretaker jobs`).")
        var jobs: [String] = []

        @Flag(name: .long, help: "Run every enabled job.")
        var all = false

        @Flag(name: .long, help: "Change no app data and send no mail; report what would be done.")
        var dryRun = false

        func validate() throws {
            if all && !jobs.isEmpty { throw ValidationError("give job names or --all, not both") }
            if !all && jobs.isEmpty { throw ValidationError("name at least one job, or use --all") }
            // Job names are checked here, while parsing, so that the message comes with the
            // usage of `once`; a configuration that does not load is reported by run() (78).
            if let configuration = common.configurationIfValid() {
                for name in jobs where configuration.job(named: name) == nil {
                    throw ValidationError(unknownJob(name, in: configuration))
                }
            }
        }

        func run() throws {
            try exiting {
                let configuration = try common.loadConfiguration()
                let selected = try select(from: configuration)
                let connector = try common.connector(configuration)
                let connection = try common.connect(connector)
                try common.requirePrimary(connection, for: "once")
                let readiness = try SchemaReadiness.check(connection, appSchema: configuration.database.appSchema)
                if !readiness.isReady { throw Failure(.configuration, readiness.message) }
                let logger = Logger(label: "caretaker")
                let pooler = try PoolerCheck.probe(connection, connector: connector)
                if !pooler.keepsOwnSessions { logger.warning("\(pooler); running anyway") }
                let monitor: Monitor
                do {
                    monitor = try Monitor(configuration: configuration, isDaemon: false, logger: logger)
                } catch {
                    throw Failure(.configuration, "configuration error: \(error)")
                }
                defer { monitor.stop() }
                let runner = JobRunner(
                    configuration: configuration,
                    mail: try MailSetup.transport(for: selected, configuration: configuration),
                    logger: logger, observer: monitor)
                return try runAll(selected, runner: runner, connection: connection)
            }
        }

        private func select(from configuration: Configuration) throws -> [JobConfiguration] {
            if all { return configuration.jobs.filter(\.enabled) }
            return try jobs.map { name in
                guard let job = configuration.job(named: name) else {
                    throw Failure(.usage, unknownJob(name, in: configuration))
                }
                return job
            }
        }

        private func runAll(
            _ selected: [JobConfiguration], runner: JobRunner, connection: Postgres.Connection
        ) throws -> ExitStatus {
            var table = TextTable(["JOB", "STATUS", "RUN", "STATS", "ERROR"])
            var status = ExitStatus.ok
            for (index, job) in selected.enumerated() {
                let request = JobRunner.Request(job: job, trigger: .manual, dryRun: dryRun)
                let outcome: RunOutcome
                do {
                    outcome = try runner.run(request, on: connection)
                } catch let error as PostgresError {
                    // The run's own record (slot, lock, job_runs row) failed: the tables every
                    // job shares, so the jobs after it are not tried. What ran is still shown.
                    if index > 0 { print(table.render()) }
                    let left = selected[(index + 1)...].map(\.name)
                    let doing =
                        error.kind == .connection
                        ? "running job \(job.name)" : "recording the run of job \(job.name) in caretaker's tables"
                    let failure = Failure(error, while: doing)
                    throw Failure(
                        failure.status,
                        failure.message + (left.isEmpty ? "" : "; not run: \(left.joined(separator: ", "))"))
                }
                switch outcome {
                case .finished(let runID, let runStatus, let stats, let error):
                    table.append([
                        job.name, runStatus.rawValue + (dryRun ? " (dry run)" : ""), "\(runID)", stats.description,
                        error ?? "",
                    ])
                    if runStatus != .succeeded { status = .jobFailed }
                case .busy, .skipped, .alreadyClaimed, .slotNotDue, .previousRunEnded:
                    // Only `busy` comes of a manual run, which has no slot.
                    table.append([job.name, "busy", "-", "", "another instance is running this job right now"])
                    if status == .ok { status = .busy }
                }
            }
            print(table.render())
            return status
        }
    }
}
