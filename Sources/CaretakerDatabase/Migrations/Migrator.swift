import CaretakerSupport
import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Applies `Migration.all` in order, each in its own transaction, once; indexes
/// a migration builds or drops `CONCURRENTLY` come after its transaction, and its
/// version is recorded only when they are all done.
///
/// A session-level advisory lock serialises concurrent `caretaker migrate` runs
/// from several hosts: the second waits, then finds nothing left to do. It asks
/// for the lock again and again rather than waiting in the server: a statement
/// waiting there holds a snapshot, which `CREATE INDEX CONCURRENTLY` in the
/// first would wait for in turn.
///
/// A migration's transaction waits at most `attemptLockTimeout` for a lock on the
/// app's tables (`CREATE TRIGGER` takes one that conflicts with the app's writes):
/// while a statement waits for a lock, every later write to that table queues
/// behind it, so one long app transaction would otherwise stall the whole app for
/// as long as it lasts. It rolls back, pauses and tries again until `lockWait` has
/// passed (for each migration), then throws a `MigrationError` whose `lockWait` says
/// so (`caretaker migrate` exits 75: try again).
public struct Migrator: Sendable {
    public let appSchema: String
    /// How long `migrate` keeps trying to take a migration's locks before it gives up.
    public var lockWait: Duration
    /// The `lock_timeout` of one attempt (at most `lockWait`).
    public var attemptLockTimeout: Duration = .seconds(2)
    /// The pause between attempts, which lets the app's queued writes through.
    public var pauseBetweenAttempts: Duration = .seconds(1)

    /// Arbitrary but fixed: "caretaker migrate" in ASCII, folded into 63 bits.
    static let lockKey: Int64 = 0x6361_7265_6D69_6772
    public static let defaultLockWait: Duration = .seconds(60)

    public init(appSchema: String, lockWait: Duration = Migrator.defaultLockWait) {
        self.appSchema = appSchema
        self.lockWait = lockWait
    }

    /// Versions already applied; empty when caretaker never migrated this database.
    public func appliedVersions(on connection: Connection) throws(PostgresError) -> Set<Int> {
        let exists = try connection.query("SELECT to_regclass('caretaker.schema_migrations') IS NOT NULL AS present")
        guard exists.first?.bool("present") == true else { return [] }
        let rows = try connection.query("SELECT version FROM caretaker.schema_migrations").rows
        return Set(rows.compactMap { $0.int("version") })
    }

    /// A scalar subquery: when caretaker's schema was installed (its first migration, as
    /// epoch seconds on the database clock; NULL before that). A query that reads it
    /// beside other values splices this in rather than asking again.
    public static let installedAtSQL =
        "(SELECT extract(epoch FROM min(applied_at))::float8 FROM caretaker.schema_migrations)"

    /// When caretaker's schema was installed (its first migration, database clock); nil before that.
    public static func installedAt(on connection: Connection) throws(PostgresError) -> Date? {
        try connection.query("SELECT \(installedAtSQL) AS installed").first?.double("installed")
            .map { Date(timeIntervalSince1970: $0) }
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
        while try connection.query("SELECT pg_try_advisory_lock($1) AS locked", Self.lockKey).first?.bool("locked")
            != true
        {
            OSThread.sleep(for: .milliseconds(100))
        }
        defer { _ = try? connection.query("SELECT pg_advisory_unlock($1)", Self.lockKey) }
        try connection.execute(
            script: """
                CREATE SCHEMA IF NOT EXISTS caretaker;
                CREATE TABLE IF NOT EXISTS caretaker.schema_migrations (
                    version     integer PRIMARY KEY,
                    name        text NOT NULL,
                    app_schema  text NOT NULL,
                    applied_at  timestamptz NOT NULL DEFAULT now()
                );
                """)
        let applied = try appliedVersions(on: connection)
        let todo = Migration.all.filter { !applied.contains($0.version) }
        for migration in todo {
            try apply(migration, skipping: Self.droppedIndexes(applied: applied), on: connection)
        }
        return todo
    }

    /// The indexes that applied migrations dropped as redundant. A migration applied
    /// again (as `check` advises when an index it built is lost) does not build them
    /// again: re-applying migration 4 after migration 9 rebuilds the lost index, not
    /// `posts_pack_idx`, which the app's writes would then maintain for nothing.
    package static func droppedIndexes(applied: Set<Int>) -> Set<String> {
        Set(Migration.all.filter { applied.contains($0.version) }.flatMap { $0.redundantIndexes.map(\.name) })
    }

    private func apply(_ migration: Migration, skipping dropped: Set<String>, on connection: Connection) throws {
        let record = { () throws -> Void in
            try connection.query(
                "INSERT INTO caretaker.schema_migrations (version, name, app_schema) VALUES ($1, $2, $3)",
                migration.version, migration.name, appSchema)
        }
        var attempts = 0
        do {
            if !migration.isConcurrent {
                try inTransactionWaitingBriefly(on: connection, attempts: &attempts) {
                    try connection.execute(script: migration.sql(appSchema: appSchema))
                    try record()
                }
                return
            }
            if !migration.sql.isEmpty {
                try inTransactionWaitingBriefly(on: connection, attempts: &attempts) {
                    try connection.execute(script: migration.sql(appSchema: appSchema))
                }
            }
            // No lock_timeout here: CONCURRENTLY takes no lock that queues the app's
            // writes, and waits for older transactions by design.
            for index in migration.concurrentIndexes where !dropped.contains(index.name) {
                try build(index, on: connection)
            }
            for index in migration.redundantIndexes { try dropIfRedundant(index, on: connection) }
            for index in migration.concurrentReindexes { try rebuild(index, on: connection) }
            try record()
        } catch let error as PostgresError {
            throw MigrationError(
                version: migration.version, name: migration.name, underlying: error,
                lockWait: error.isLockNotAvailable ? (attempts, attemptTimeout) : nil)
        }
    }

    /// The `lock_timeout` of one attempt.
    private var attemptTimeout: Duration { min(attemptLockTimeout, lockWait) }

    /// Runs `body` in a transaction whose `lock_timeout` is `attemptTimeout`, again
    /// after a pause each time it timed out waiting for a lock, until `lockWait` passed.
    func inTransactionWaitingBriefly(
        on connection: Connection, attempts: inout Int, _ body: () throws -> Void
    ) throws {
        let deadline = ContinuousClock.now + lockWait
        let timeout = "\(max(attemptTimeout.microseconds / 1000, 1))ms"
        while true {
            attempts += 1
            do {
                try connection.withTransaction {
                    try connection.query("SELECT set_config('lock_timeout', $1, true)", timeout)
                    try body()
                }
                return
            } catch let error as PostgresError where error.isLockNotAvailable {
                if ContinuousClock.now + pauseBetweenAttempts >= deadline { throw error }
                OSThread.sleep(for: pauseBetweenAttempts)
            }
        }
    }

    /// `CREATE INDEX CONCURRENTLY IF NOT EXISTS`, after dropping an invalid index of
    /// that name: a build that failed half-way leaves one, which `IF NOT EXISTS`
    /// would otherwise keep for ever.
    private func build(_ index: ConcurrentIndex, on connection: Connection) throws {
        let schema = quoteIdentifier(appSchema)
        if let (table, rest) = PartitionedIndexes.split(index.definition),
            try PartitionedIndexes.isPartitioned(schema + "." + quoteIdentifier(table), on: connection)
        {
            return try buildPartitioned(index, table: table, rest: rest, on: connection)
        }
        let qualified = schema + "." + quoteIdentifier(index.name)
        let invalid =
            try connection.query(
                """
                SELECT NOT indisvalid AS invalid FROM pg_index WHERE indexrelid = to_regclass($1)
                """, qualified
            ).first?.bool("invalid") == true
        if invalid { try connection.execute(script: "DROP INDEX CONCURRENTLY \(qualified)") }
        try connection.execute(
            script: "CREATE INDEX CONCURRENTLY IF NOT EXISTS \(quoteIdentifier(index.name)) "
                + index.definition.replacing("{{app}}", with: schema))
    }
}

extension Migrator {
    /// `REINDEX INDEX CONCURRENTLY` of the app schema's index `name` where it exists,
    /// after dropping what an interrupted rebuild of it left. PostgreSQL builds the
    /// new index beside the old as `NAME_ccnew` (`NAME_ccnew1`, … when taken), swaps
    /// them, and drops the old one, then named `NAME_ccold`; a rebuild that fails on
    /// the way leaves them behind, invalid, and the next one would leave them for ever.
    func rebuild(_ name: String, on connection: Connection) throws {
        let schema = quoteIdentifier(appSchema)
        if try PartitionedIndexes.isPartitioned(schema + "." + quoteIdentifier(name), on: connection) {
            return try rebuildPartitioned(name, on: connection)
        }
        let leftovers = try connection.query(
            """
            SELECT c.relname FROM pg_index i
            JOIN pg_class c ON c.oid = i.indexrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND NOT i.indisvalid
              AND left(c.relname, length($2)) = $2 AND substr(c.relname, length($2) + 1) ~ '^_cc(new|old)[0-9]*$'
            """, appSchema, name
        ).rows.compactMap { $0.string("relname") }
        for leftover in leftovers {
            try connection.execute(script: "DROP INDEX CONCURRENTLY IF EXISTS \(schema).\(quoteIdentifier(leftover))")
        }
        let qualified = schema + "." + quoteIdentifier(name)
        let exists = try connection.query("SELECT to_regclass($1) IS NOT NULL AS exists", qualified).first?.bool(
            "exists")
        if exists == true { try connection.execute(script: "REINDEX INDEX CONCURRENTLY \(qualified)") }
    }

    /// `DROP INDEX CONCURRENTLY` of `index.name` when `index.coveredBy` still does its
    /// work (`RedundantIndex`); otherwise, or when either is missing, nothing.
    private func dropIfRedundant(_ index: RedundantIndex, on connection: Connection) throws {
        let schema = quoteIdentifier(appSchema)
        let qualified = schema + "." + quoteIdentifier(index.name)
        let redundant =
            try connection.query(
                Self.isRedundant, qualified, schema + "." + quoteIdentifier(index.coveredBy)
            ).first?.bool("redundant") == true
        if redundant, try PartitionedIndexes.isPartitioned(qualified, on: connection) {
            try dropPartitioned(qualified, on: connection)
        } else if redundant {
            try connection.execute(script: "DROP INDEX CONCURRENTLY IF EXISTS \(qualified)")
        }
    }

    /// Whether the index `$1` is a plain B-tree index whose key columns lead those of
    /// the valid, whole-table B-tree index `$2` on the same table, with the same
    /// operator classes, orders and collations → `redundant`. (`int2vector` and
    /// `oidvector` subscripts start at 0.)
    static let isRedundant = """
        SELECT EXISTS (
            SELECT FROM pg_index r
            JOIN pg_class rc ON rc.oid = r.indexrelid
            JOIN pg_index c ON c.indexrelid = to_regclass($2) AND c.indrelid = r.indrelid
            JOIN pg_class cc ON cc.oid = c.indexrelid
            WHERE r.indexrelid = to_regclass($1) AND c.indisvalid
              AND NOT r.indisunique AND NOT r.indisexclusion AND NOT r.indisprimary
              AND r.indpred IS NULL AND r.indexprs IS NULL AND c.indpred IS NULL AND c.indexprs IS NULL
              AND rc.relam = (SELECT oid FROM pg_am WHERE amname = 'btree') AND cc.relam = rc.relam
              AND r.indnkeyatts = r.indnatts AND r.indnkeyatts <= c.indnkeyatts
              AND (r.indkey::int2[])[0:r.indnkeyatts - 1] = (c.indkey::int2[])[0:r.indnkeyatts - 1]
              AND (r.indclass::oid[])[0:r.indnkeyatts - 1] = (c.indclass::oid[])[0:r.indnkeyatts - 1]
              AND (r.indoption::int2[])[0:r.indnkeyatts - 1] = (c.indoption::int2[])[0:r.indnkeyatts - 1]
              AND (r.indcollation::oid[])[0:r.indnkeyatts - 1] = (c.indcollation::oid[])[0:r.indnkeyatts - 1]
              AND NOT EXISTS (SELECT FROM pg_constraint WHERE conindid = r.indexrelid)
        ) AS redundant
        """
}

/// A migration failed; nothing of it was applied.
public struct MigrationError: Error, CustomStringConvertible {
    public let version: Int
    public let name: String
    public let underlying: PostgresError
    /// Set when the migration gave up waiting for its locks: how many attempts, each
    /// waiting at most how long.
    public var lockWait: (attempts: Int, timeout: Duration)?

    public var description: String {
        guard let lockWait else { return "migration \(version) (\(name)) failed and was rolled back: \(underlying)" }
        return "migration \(version) (\(name)) could not take its locks on the app's tables and was rolled back: "
            + "another transaction held them past lock_timeout (\(lockWait.timeout.microseconds / 1000) ms) in each of "
            + "\(lockWait.attempts) attempts. migrate waits no longer than that, so that the app's writes never "
            + "queue behind it; find the long transaction in pg_stat_activity, or run migrate again "
            + "(with a longer --lock-wait) when the app is quieter"
    }
}
