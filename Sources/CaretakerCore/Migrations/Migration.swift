import Postgres

/// One versioned step of the schema, embedded in the binary.
///
/// `sql` may contain `{{app}}`, replaced by the quoted `database.app_schema`
/// identifier, so the reference app schema can live in any schema.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    /// Applied in one transaction together with the version's row, unless the
    /// migration has `concurrentIndexes` (then it must be safe to run again).
    public let sql: String
    /// Built after `sql` with `CREATE INDEX CONCURRENTLY`, outside any transaction,
    /// so an existing app keeps writing to the table meanwhile.
    public let concurrentIndexes: [ConcurrentIndex]

    init(version: Int, name: String, sql: String, concurrentIndexes: [ConcurrentIndex] = []) {
        self.version = version
        self.name = name
        self.sql = sql
        self.concurrentIndexes = concurrentIndexes
    }

    /// Every migration, in the order they apply.
    public static let all: [Migration] = [
        .bookkeeping,
        .referenceAppSchema,
        .notifyTriggers,
        .expiryIndexes,
        .deadlineTrigger,
        .jobAlerts,
        .packLikesIndex,
    ]

    /// The SQL with the app schema substituted.
    public func sql(appSchema: String) -> String {
        sql.replacing("{{app}}", with: quoteIdentifier(appSchema))
    }
}

/// An index a migration builds without blocking writes to its table.
public struct ConcurrentIndex: Sendable {
    /// The index's name, in the app schema.
    public let name: String
    /// What follows the name, e.g. `ON {{app}}.posts (created_at, id)`.
    public let definition: String
}
