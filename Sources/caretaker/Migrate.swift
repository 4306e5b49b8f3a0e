import ArgumentParser
import CaretakerCore

extension Caretaker {
    /// `caretaker migrate [--dry-run]`
    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create or update the caretaker schema and the reference app schema (SPEC §1).")

        @OptionGroup var common: CommonOptions

        @Flag(help: "List the migrations that would be applied; change nothing.")
        var dryRun = false

        func run() throws {
            try exiting {
                let configuration = try common.loadConfiguration()
                let (_, connection) = try common.connect(configuration)
                try common.requirePrimary(connection, for: "migrate")
                let migrator = Migrator(appSchema: configuration.database.appSchema)
                let migrations = try migrator.migrate(on: connection, dryRun: dryRun)
                if migrations.isEmpty {
                    print("schema is up to date (version \(Migration.all.last?.version ?? 0))")
                } else {
                    print(dryRun ? "would apply:" : "applied:")
                    for migration in migrations {
                        print("  \(migration.version)  \(migration.name)")
                    }
                }
                return .ok
            }
        }
    }
}
