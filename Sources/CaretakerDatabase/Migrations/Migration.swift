import Postgres

/// One versioned step of the schema, embedded in the binary.
///
/// `sql` may contain `{{app}}`, replaced by the quoted `database.app_schema`
/// identifier, so the reference app schema can live in any schema.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    /// Applied in one transaction together with the version's row, unless the
    /// migration has `concurrentIndexes`, `redundantIndexes` or `concurrentReindexes`
    /// (then it must be safe to run again).
    public let sql: String
    /// Built after `sql` with `CREATE INDEX CONCURRENTLY`, outside any transaction,
    /// so an existing app keeps writing to the table meanwhile.
    public let concurrentIndexes: [ConcurrentIndex]
    /// Dropped after the builds with `DROP INDEX CONCURRENTLY`, for the same reason,
    /// and only while another index still does their work (`RedundantIndex`).
    public let redundantIndexes: [RedundantIndex]
    /// Indexes of the app schema rebuilt last with `REINDEX INDEX CONCURRENTLY`, where
    /// they exist: an index takes storage parameters that `sql` set only when rebuilt.
    public let concurrentReindexes: [String]

    init(
        version: Int, name: String, sql: String, concurrentIndexes: [ConcurrentIndex] = [],
        redundantIndexes: [RedundantIndex] = [], concurrentReindexes: [String] = []
    ) {
        self.version = version
        self.name = name
        self.sql = sql
        self.concurrentIndexes = concurrentIndexes
        self.redundantIndexes = redundantIndexes
        self.concurrentReindexes = concurrentReindexes
    }

    /// True when the migration runs statements that cannot run in a transaction.
    var isConcurrent: Bool { !concurrentIndexes.isEmpty || !redundantIndexes.isEmpty || !concurrentReindexes.isEmpty }

    /// Every migration, in the order they apply.
    public static let all: [Migration] = [
        .bookkeeping,
        .referenceAppSchema,
        .notifyTriggers,
        .expiryIndexes,
        .deadlineTrigger,
        .jobAlerts,
        .packLikesIndex,
        .dropRedundantPackIndex,
        .packLooks,
        .packLikesIndexWithoutDeduplication,
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
    /// Storage parameters (`WITH (…)`) of the index when its table is partitioned:
    /// PostgreSQL cannot change a partitioned index's parameters afterwards, as a later
    /// migration's `ALTER INDEX … SET` would, and the partitions created later take theirs from it.
    public var storageOnPartitionedTable: String? = nil
}

/// An index a migration drops because another one does its work, every write to
/// the table paying for both otherwise.
///
/// Dropped only when `coveredBy` is valid and `name` is a plain B-tree index (not
/// unique, not behind a constraint, no predicate or expression) whose key columns
/// lead `coveredBy`'s with the same operator classes and orders: then every look-up
/// it served, `coveredBy` serves too. Anything else is left as it is, since it
/// may be an index the app made for a purpose of its own.
public struct RedundantIndex: Sendable {
    /// The index to drop, in the app schema.
    public let name: String
    /// The index that makes it redundant, in the app schema.
    public let coveredBy: String
}
