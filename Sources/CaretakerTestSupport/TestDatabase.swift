import CaretakerCore
import Foundation
import Logging
import Postgres

/// A fresh database of its own for one test, on the shared throwaway cluster (or on
/// one the test started for itself).
public struct TestDatabase: @unchecked Sendable {
    public let server: TemporaryPostgres
    public let name: String
    public let conninfo: String
    /// A connection for arranging and inspecting data (not the one jobs run on).
    public let connection: Connection
    /// `database.app_schema`; the connection's `search_path` starts with it.
    public let appSchema: String

    /// `appSchema` other than `public`: migrated into that schema instead of copied from the template.
    public init(
        _ test: String = #function, migrated: Bool = true, appSchema: String = "public",
        on server: TemporaryPostgres = .shared
    ) throws {
        self.server = server
        name = try server.makeDatabase(test, migrated: migrated && appSchema == "public")
        conninfo = server.conninfo(database: name)
        connection = try server.connect(database: name)
        self.appSchema = appSchema
        if migrated && appSchema == "public" {
            // Copied from the template, which can be older than the jobs' grace for a first
            // success when the suite runs long: `check` would call every job overdue. A test
            // of that grace sets `applied_at` itself.
            try connection.execute(script: "UPDATE caretaker.schema_migrations SET applied_at = now()")
        }
        if appSchema != "public" {
            if migrated {
                try Migrator(appSchema: appSchema).migrate(on: connection)
                // As the template has them for `public`.
                try TemporaryPostgres.grantWorkerDefaults(appSchema: appSchema, on: connection)
            }
            try connection.query("SELECT set_config('search_path', $1, false)", quoteIdentifier(appSchema) + ", public")
        }
    }

    /// A `jobs.toml` pointing at this database, followed by `extra` (tables other than `[database]`).
    public func configurationText(_ extra: String = "") -> String {
        let schema = appSchema == "public" ? "" : "app_schema = \"\(Self.tomlEscaped(appSchema))\"\n"
        return "[database]\nurl = \"\(conninfo)\"\n\(schema)\n" + extra
    }

    /// `text` inside a TOML basic string.
    private static func tomlEscaped(_ text: String) -> String {
        text.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
    }

    public func configuration(_ extra: String = "") throws -> Configuration {
        try ConfigurationLoader.parse(configurationText(extra), file: "test.toml")
    }

    /// Writes the configuration to a file (for the CLI) and returns its path, a
    /// `scratchPath`. No daemon reads the file while a test writes it (a reload test
    /// writes, then signals), so it is written in place.
    public func writeConfiguration(_ extra: String = "") throws -> String {
        let path = scratchPath("jobs.toml")
        try configurationText(extra).write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    /// A path for a test's own file or directory (its configuration, a secret, a mail
    /// directory) in the cluster's directory, which goes when the test process does: a
    /// day of test runs leaves nothing behind, and the test needs no clean-up of its own.
    public func scratchPath(_ label: String) -> String {
        server.directory + "/caretaker-\(name)-\(label)"
    }

    /// Grants `TemporaryPostgres.workerRole` what `extra`'s enabled jobs need on this
    /// database's tables (migrated databases have the defaults' grants from the template
    /// already), as `migrate --grant` does, but leaves the role's parameter rights as the
    /// template gave them (`SET` on `wal_compression`, granted). Those are the cluster's,
    /// and the role is shared by every test running at once: a grant for jobs that do
    /// not compress would revoke the right in the middle of another test's sweep, whose
    /// next batch then fails with "permission denied to set parameter".
    public func grantWorker(_ extra: String = "") throws {
        let grants = RuntimeGrants(appSchema: appSchema, jobs: try configuration(extra).jobs)
        try connection.withTransaction {
            for statement in grants.statements(role: TemporaryPostgres.workerRole) {
                try connection.execute(script: statement)
            }
        }
    }

    /// Connects as the restricted worker role, as the daemon would in production.
    public func connectAsWorker() throws -> Connection {
        try Connection(
            .init(
                conninfo: server.workerConninfo(database: name),
                applicationName: "caretaker-tests"))
    }

    /// Runs a job once on a new connection as the restricted worker role, as `caretaker once`
    /// would, and returns the outcome: a grant `RuntimeGrants` lacks fails the job.
    @discardableResult
    public func run(
        _ job: String, _ extra: String = "", dryRun: Bool = false, trigger: RunTrigger = .manual,
        mail: (any MailTransport)? = nil, logOutput: LineOutput? = nil
    ) throws -> RunOutcome {
        let configuration = try configuration(extra)
        guard let jobConfiguration = configuration.job(named: job) else {
            throw TemporaryPostgresError(message: "no job \(job)")
        }
        let output = logOutput ?? LineOutput.capturing()
        let logger = Logger(label: "test") { _ in LineLogHandler(format: .logfmt, journald: false, output: output) }
        let runner = JobRunner(configuration: configuration, mail: mail, logger: logger)
        let jobConnection = try connectAsWorker()
        return try runner.run(.init(job: jobConfiguration, trigger: trigger, dryRun: dryRun), on: jobConnection)
    }

    /// Runs a job and returns its stats, failing when it did not succeed.
    public func runSucceeding(
        _ job: String, _ extra: String = "", dryRun: Bool = false,
        mail: (any MailTransport)? = nil, logOutput: LineOutput? = nil
    ) throws -> JobStats {
        let outcome = try run(job, extra, dryRun: dryRun, mail: mail, logOutput: logOutput)
        guard case .finished(_, .succeeded, let stats, _) = outcome else {
            throw TemporaryPostgresError(message: "\(job) did not succeed: \(outcome)")
        }
        return stats
    }

    /// The first column of the first row, as an integer.
    public func count(_ sql: String, _ parameters: any PostgresBindable...) throws -> Int {
        try connection.query(sql, parameters).first?[0].flatMap { Int($0) } ?? 0
    }
}

extension JobStats {
    /// The counter `name` for arithmetic and comparisons in tests; throws when the job
    /// did not report it (a renamed or forgotten counter fails the test that reads it).
    public func reported(_ name: String) throws -> Int {
        guard let value = self[name] else {
            throw TemporaryPostgresError(message: "the job reported no counter \(name) (it reported: \(self))")
        }
        return value
    }
}
