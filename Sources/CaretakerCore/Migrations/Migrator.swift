import Postgres

/// Applies `Migration.all` in order, each in its own transaction, once.
///
/// A session-level advisory lock serialises concurrent `caretaker migrate` runs
/// from several hosts: the second waits, then finds nothing left to do.
public struct Migrator: Sendable {
    public let appSchema: String

    /// Arbitrary but fixed: "caretaker migrate" in ASCII, folded into 63 bits.
    static let lockKey: Int64 = 0x6361_7265_6D69_6772

    public init(appSchema: String) {
        self.appSchema = appSchema
    }

    /// Versions already applied; empty when caretaker never migrated this database.
    public func appliedVersions(on connection: Connection) throws(PostgresError) -> Set<Int> {
        let exists = try connection.query("SELECT to_regclass('caretaker.schema_migrations') IS NOT NULL AS present")
        guard exists.first?.bool("present") == true else { return [] }
        let rows = try connection.query("SELECT version FROM caretaker.schema_migrations").rows
        return Set(rows.compactMap { $0.int("version") })
    }

    /// The migrations `migrate` would apply now.
    public func pending(on connection: Connection) throws(PostgresError) -> [Migration] {
        let applied = try appliedVersions(on: connection)
        return Migration.all.filter { !applied.contains($0.version) }
    }

    /// Applies what is pending and returns it; with `dryRun`, only returns it.
    @discardableResult
    public func migrate(on connection: Connection, dryRun: Bool = false) throws -> [Migration] {
        if dryRun { return try pending(on: connection) }
        try connection.query("SELECT pg_advisory_lock($1)", Self.lockKey)
        defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", Self.lockKey) }
        try connection.execute(script: """
            CREATE SCHEMA IF NOT EXISTS caretaker;
            CREATE TABLE IF NOT EXISTS caretaker.schema_migrations (
                version     integer PRIMARY KEY,
                name        text NOT NULL,
                app_schema  text NOT NULL,
                applied_at  timestamptz NOT NULL DEFAULT now()
            );
            """)
        let todo = try pending(on: connection)
        for migration in todo {
            try apply(migration, on: connection)
        }
        return todo
    }

    private func apply(_ migration: Migration, on connection: Connection) throws {
        do {
            try connection.withTransaction {
                try connection.execute(script: migration.sql(appSchema: appSchema))
                try connection.query(
                    "INSERT INTO caretaker.schema_migrations (version, name, app_schema) VALUES ($1, $2, $3)",
                    migration.version, migration.name, appSchema)
            }
        } catch let error as PostgresError {
            throw MigrationError(version: migration.version, name: migration.name, underlying: error)
        }
    }
}

/// A migration failed; nothing of it was applied.
public struct MigrationError: Error, CustomStringConvertible {
    public let version: Int
    public let name: String
    public let underlying: PostgresError

    public var description: String {
        "migration \(version) (\(name)) failed and was rolled back: \(underlying)"
    }
}
