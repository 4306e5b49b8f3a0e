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
        let dropped = Set(
            Migration.all.filter { applied.contains($0.version) }.flatMap { $0.redundantIndexes.map(\.name) })
        return Migration.all.filter { applied.contains($0.version) }.flatMap { migration in
            migration.concurrentIndexes.filter { !dropped.contains($0.name) }.map { ($0.name, migration) }
        }
    }

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
        return report
    }
}
