import ArgumentParser
import CaretakerCore
import Postgres

extension Caretaker {
    /// `caretaker migrate [--dry-run] [--grant ROLE]`
    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create or update the caretaker schema and the reference app schema (docs/schema.md).",
            discussion: """
                Run it as the owner of the schema. --grant ROLE then gives the role the daemon connects as \
                exactly what the enabled built-in jobs need (per column), revoking anything else it held on \
                caretaker's and the reference tables; operator SQL jobs need grants of their own. Run by a \
                superuser, it also lets the role set wal_compression when compress_wal is on; otherwise it prints the \
                GRANT for a superuser to run. \
                Exit status: 0 done, 1 a migration or grant failed, 64 bad usage (a role --grant refuses), \
                69 database unavailable (or a standby), 75 gave up waiting for its locks (try again), \
                78 bad configuration.
                """)

        @OptionGroup var common: CommonOptions

        @Flag(help: "List the migrations that would be applied; change nothing.")
        var dryRun = false

        @Option(
            name: .customLong("grant"),
            help: ArgumentHelp(
                "Afterwards, grant ROLE what the enabled jobs need, and nothing else (with --dry-run: print the SQL).",
                valueName: "ROLE"))
        var grantee: String?

        @Option(
            help: ArgumentHelp(
                "How long to keep trying for a migration's locks on the app's tables (each try waits at most 2 s, "
                    + "so the app's writes never queue long behind it), then give up with exit 75.",
                valueName: "DURATION"),
            transform: { text in
                guard let duration = DurationText.parse(text), duration > .zero else {
                    throw ValidationError("--lock-wait: \"\(text)\" is not a duration such as \"90s\" or \"5m\"")
                }
                return duration
            })
        var lockWait: Duration = Migrator.defaultLockWait

        func run() throws {
            try exiting {
                let configuration = try common.loadConfiguration()
                let connection = try common.connect(configuration)
                try common.requirePrimary(connection, for: "migrate")
                let migrator = Migrator(appSchema: configuration.database.appSchema, lockWait: lockWait)
                let migrations = try migrator.migrate(on: connection, dryRun: dryRun)
                if migrations.isEmpty {
                    print("schema is up to date (version \(Migration.all.last?.version ?? 0))")
                } else {
                    print(dryRun ? "would apply:" : "applied:")
                    for migration in migrations {
                        print("  \(migration.version)  \(migration.name)")
                    }
                }
                if let grantee { try grant(to: grantee, configuration: configuration, on: connection) }
                return .ok
            }
        }

        private func grant(to role: String, configuration: Configuration, on connection: Connection) throws {
            let grants = RuntimeGrants(appSchema: configuration.database.appSchema, jobs: configuration.jobs)
            if dryRun {
                print(
                    "would run, in one transaction (run again, up to \(RuntimeGrants.concurrentChangeAttempts) times in all, when another session changes the same rights at once):"
                )
                for statement in grants.statements(role: role) { print("  \(statement);") }
                print("and, as a superuser on PostgreSQL 15 or later:")
                for statement in grants.parameterStatements(role: role) { print("  \(statement);") }
                return
            }
            let notes: [String]
            do {
                notes = try grants.apply(role: role, on: connection)
            } catch let error as GrantError {
                throw Failure(.usage, error.description)
            }
            for note in notes { print("note: \(note)") }
            let scope =
                grants.jobs.isEmpty
                ? "on caretaker's tables (no built-in job is enabled)"
                : "for " + grants.jobs.joined(separator: ", ")
            print("granted \(role) its rights \(scope); operator SQL jobs need grants of their own")
        }
    }
}
