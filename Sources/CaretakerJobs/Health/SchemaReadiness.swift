import CaretakerDatabase
import Postgres

/// Whether caretaker's schema is complete enough for a job to run: every migration
/// applied, and what they built on the app's tables (the indexes on `posts`, on a
/// partitioned `posts` valid for every partition) still there. `check` prints what
/// is missing; `once` stops with it before any job statement; `run` waits until
/// it is complete (a job on a half-migrated schema fails at its first
/// statement on what is missing, or sweeps without the indexes it relies on).
public enum SchemaReadiness {
    public struct Report: Sendable, Equatable {
        /// The migrations not applied yet, in order, as `VERSION (NAME)`.
        public var pending: [String] = []
        /// What an applied migration built and is gone or invalid now, one line each.
        public var missing: [String] = []

        public init(pending: [String] = [], missing: [String] = []) {
            self.pending = pending
            self.missing = missing
        }

        public var isReady: Bool { pending.isEmpty && missing.isEmpty }

        /// One line for an operator: what is missing and what to do.
        public var message: String {
            var parts: [String] = []
            if !pending.isEmpty {
                parts.append(
                    "caretaker's schema is not up to date: \(pending.count) migration(s) pending "
                        + "(\(pending.joined(separator: ", "))): run `caretaker migrate`")
            }
            parts += missing
            return parts.isEmpty ? "caretaker's schema is up to date" : parts.joined(separator: "; ")
        }
    }

    /// The index names of the app schema that applied migrations built and have not dropped, with their migration.
    static func expectedIndexes(applied: Set<Int>) -> [(name: String, migration: Migration)] {
        let dropped = Migrator.droppedIndexes(applied: applied)
        return Migration.all.filter { applied.contains($0.version) }.flatMap { migration in
            migration.concurrentIndexes.filter { !dropped.contains($0.name) }.map { ($0.name, migration) }
        }
    }

    /// The triggers migrations create on the app's tables, by migration version:
    /// `(table, trigger)`. On a partitioned `posts` they are the parent's (PostgreSQL
    /// clones a row trigger to every partition, later ones too).
    static let triggers: [Int: [(table: String, name: String)]] = [
        Migration.notifyTriggers.version: [
            ("password_reset_requests", "caretaker_notify_reset_request"),
            ("community_members", "caretaker_notify_member_left"),
            ("communities", "caretaker_notify_leader_changed"),
            ("users", "caretaker_notify_user_deleted"),
        ],
        Migration.packLooks.version: [
            ("packs", "caretaker_mark_new_pack"), ("packs", "caretaker_mark_changed_pack"),
            ("posts", "caretaker_mark_post_changed"), ("posts", "caretaker_mark_post_deleted"),
            ("posts", "caretaker_mark_posts_truncated"), ("pack_members", "caretaker_mark_member_left"),
            ("pack_members", "caretaker_mark_member_moved"), ("pack_members", "caretaker_mark_members_truncated"),
        ],
    ]

    public static func check(_ connection: Connection, appSchema: String) throws(PostgresError) -> Report {
        let applied = try Migrator(appSchema: appSchema).appliedVersions(on: connection)
        var report = Report()
        report.pending = Migration.all.filter { !applied.contains($0.version) }.map { "\($0.version) (\($0.name))" }
        for (name, migration) in expectedIndexes(applied: applied) {
            let qualified = quoteIdentifier(appSchema) + "." + quoteIdentifier(name)
            // A partitioned index is valid only once every partition's is attached.
            let row = try connection.query(
                """
                SELECT i.indisvalid AS valid,
                       (SELECT string_agg(c.relname, ', ' ORDER BY c.relname) FROM pg_inherits h
                        JOIN pg_class c ON c.oid = h.inhrelid
                        WHERE h.inhparent = i.indrelid AND NOT EXISTS (
                            SELECT FROM pg_inherits hi JOIN pg_index ci ON ci.indexrelid = hi.inhrelid
                            WHERE hi.inhparent = i.indexrelid AND ci.indrelid = c.oid AND ci.indisvalid)) AS lacking
                FROM pg_index i WHERE i.indexrelid = to_regclass($1)
                """, qualified
            ).first
            let redo =
                "migration \(migration.version) (\(migration.name)) builds it: DELETE FROM caretaker.schema_migrations "
                + "WHERE version = \(migration.version), then run `caretaker migrate`"
            guard let row else {
                report.missing.append("index \(appSchema).\(name) is missing; \(redo)")
                continue
            }
            if row.bool("valid") != true {
                let lacking = row.string("lacking").map { " (no valid index on partition(s) \($0))" } ?? ""
                report.missing.append("index \(appSchema).\(name) is not valid\(lacking); \(redo)")
            }
        }
        for migration in Migration.all where applied.contains(migration.version) {
            for (table, name) in triggers[migration.version] ?? [] {
                let present = try connection.query(
                    "SELECT count(*) AS n FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = $2",
                    quoteIdentifier(appSchema) + "." + quoteIdentifier(table), name
                ).first?.int("n")
                // A missing table is `check`'s column check's to name.
                if present == 0,
                    try connection.query(
                        "SELECT to_regclass($1) IS NOT NULL AS exists",
                        quoteIdentifier(appSchema) + "." + quoteIdentifier(table)
                    ).first?.bool("exists") == true
                {
                    report.missing.append(
                        "trigger \(name) on \(appSchema).\(table) is missing; migration \(migration.version) "
                            + "(\(migration.name)) creates it: DELETE FROM caretaker.schema_migrations WHERE version = "
                            + "\(migration.version), then run `caretaker migrate`")
                }
            }
        }
        return report
    }
}
