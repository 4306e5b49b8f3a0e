import CaretakerConfig
import Postgres

/// Verifies that the app columns the built-in jobs rely on (docs/schema.md) exist with a
/// compatible type. What each job relies on is in its catalogue entry
/// (`BuiltInJob.appColumns`); a problem that only disabled jobs would meet is a warning.
public enum SchemaCheck {
    /// The column types `check` accepts for a column (as `format_type` names them; a domain counts as its base type).
    struct ColumnType: Sendable, Equatable {
        let accepted: Set<String>

        static let text = ColumnType(accepted: ["text", "character varying", "citext", "character"])
        static let bigintID = ColumnType(accepted: ["bigint"])
        static let integer = ColumnType(accepted: ["integer", "bigint", "smallint"])
        static let timestamptz = ColumnType(accepted: ["timestamp with time zone"])
        static let boolean = ColumnType(accepted: ["boolean"])
        static let uuid = ColumnType(accepted: ["uuid"])
    }

    /// An app table and the columns of it a job relies on, in the reference schema's order.
    struct AppTable: Sendable {
        let name: String
        let columns: [(name: String, type: ColumnType)]

        init(_ name: String, _ columns: KeyValuePairs<String, ColumnType>) {
            self.name = name
            self.columns = columns.map { ($0.key, $0.value) }
        }
    }

    /// What `check` found: `problems` concern an enabled job and make it fail;
    /// `warnings` concern only disabled jobs (they would fail once enabled).
    public struct Findings: Sendable {
        public var problems: [String] = []
        public var warnings: [String] = []
    }

    /// One line per missing table or column, or column of the wrong type, e.g.
    /// `column public.posts.likes is missing (expected integer)`. `enabled` are the
    /// built-in jobs that run; the columns only other jobs rely on give warnings.
    public static func check(
        _ connection: Connection, appSchema: String,
        enabled: Set<BuiltInJob> = Set(BuiltInJob.allCases)
    ) throws -> Findings {
        // The catalog, not information_schema: that shows only the columns the role
        // has rights on, and a restricted worker role has few.
        let rows = try connection.query(
            """
            SELECT c.relname AS table_name, a.attname AS column_name,
                   format_type(CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END, NULL) AS data_type
            FROM pg_attribute a
            JOIN pg_class c ON c.oid = a.attrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_type t ON t.oid = a.atttypid
            WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'f') AND a.attnum > 0 AND NOT a.attisdropped
            """, appSchema
        ).rows
        var actual: [String: String] = [:]
        for row in rows {
            actual["\(row["table_name"] ?? "").\(row["column_name"] ?? "")"] = row["data_type"] ?? ""
        }
        let tables = Set(rows.compactMap { $0["table_name"] })
        let expected = Expectations(BuiltInJob.allCases)
        var findings = Findings()
        func report(_ problem: String, users: [BuiltInJob]) {
            if users.contains(where: enabled.contains) {
                findings.problems.append(problem)
            } else {
                let names = users.map(\.rawValue).joined(separator: ", ")
                findings.warnings.append(
                    "\(problem); used only by \(names), \(users.count == 1 ? "which is" : "which are") disabled")
            }
        }
        for table in expected.tables.sorted() where !tables.contains(table) {
            report("table \(appSchema).\(table) is missing", users: expected.jobs(usingTable: table))
        }
        for column in expected.columns where tables.contains(column.table) {
            let name = "\(column.table).\(column.name)"
            let accepted = column.type.accepted.sorted()
            guard let type = actual[name] else {
                report("column \(appSchema).\(name) is missing (expected \(accepted.first!))", users: column.jobs)
                continue
            }
            if !column.type.accepted.contains(type) {
                report(
                    "column \(appSchema).\(name) has type \(type), expected \(accepted.joined(separator: " or "))",
                    users: column.jobs)
            }
        }
        return findings
    }

    /// The columns `jobs` rely on, each once (in catalogue order) with the jobs that rely on it.
    struct Expectations {
        struct Column {
            let table: String
            let name: String
            let type: ColumnType
            var jobs: [BuiltInJob]
        }

        private(set) var columns: [Column] = []

        init(_ jobs: [BuiltInJob]) {
            var index: [String: Int] = [:]
            for job in jobs {
                for table in job.appColumns {
                    for (name, type) in table.columns {
                        let key = "\(table.name).\(name)"
                        if let existing = index[key] {
                            columns[existing].jobs.append(job)
                        } else {
                            index[key] = columns.count
                            columns.append(Column(table: table.name, name: name, type: type, jobs: [job]))
                        }
                    }
                }
            }
        }

        var tables: Set<String> { Set(columns.map(\.table)) }

        func jobs(usingTable table: String) -> [BuiltInJob] {
            var found: [BuiltInJob] = []
            for column in columns where column.table == table {
                for job in column.jobs where !found.contains(job) { found.append(job) }
            }
            return found
        }
    }
}
