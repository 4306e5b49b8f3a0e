import Postgres

/// Verifies that every column the jobs rely on (SPEC §1) exists with a compatible type.
public enum SchemaCheck {
    /// A column the worker reads or writes, and the types it accepts for it.
    struct Expected {
        let table: String
        let column: String
        let types: Set<String>
    }

    static let text: Set<String> = ["text", "character varying", "citext", "character"]
    static let bigintID: Set<String> = ["bigint"]
    static let integer: Set<String> = ["integer", "bigint", "smallint"]
    static let timestamptz: Set<String> = ["timestamp with time zone"]
    static let boolean: Set<String> = ["boolean"]

    static let expected: [Expected] = [
        ("users", [("id", bigintID), ("email", text), ("display_name", text), ("password_hash", text),
                   ("temp_password_hash", text), ("temp_password_expires_at", timestamptz),
                   ("must_change_password", boolean), ("created_at", timestamptz), ("deleted_at", timestamptz)]),
        ("sessions", [("id", ["uuid"]), ("user_id", bigintID), ("created_at", timestamptz), ("last_seen_at", timestamptz),
                      ("revoked_at", timestamptz), ("revoked_reason", text)]),
        ("packs", [("id", bigintID), ("name", text), ("creator_id", bigintID), ("is_admin", boolean), ("created_at", timestamptz)]),
        ("pack_members", [("pack_id", bigintID), ("user_id", bigintID), ("joined_at", timestamptz)]),
        ("posts", [("id", bigintID), ("pack_id", bigintID), ("author_id", bigintID), ("title", text), ("body", text),
                   ("likes", integer), ("created_at", timestamptz)]),
        ("password_reset_requests", [("id", bigintID), ("email", text), ("requested_at", timestamptz), ("status", text),
                                     ("attempts", integer), ("next_attempt_at", timestamptz), ("sent_at", timestamptz),
                                     ("last_error", text)]),
        ("communities", [("id", bigintID), ("name", text), ("leader_id", bigintID), ("successor_id", bigintID),
                         ("is_private", boolean), ("created_at", timestamptz), ("archived_at", timestamptz)]),
        ("community_members", [("community_id", bigintID), ("user_id", bigintID), ("joined_at", timestamptz)]),
        ("community_leader_changes", [("id", bigintID), ("community_id", bigintID), ("previous_leader_id", bigintID),
                                      ("new_leader_id", bigintID), ("reason", text), ("chosen_by", text),
                                      ("changed_at", timestamptz), ("run_id", bigintID)]),
    ].flatMap { table, columns in columns.map { Expected(table: table, column: $0.0, types: $0.1) } }

    /// One line per problem, e.g. `posts.likes is missing` or `posts.likes has type text, expected integer`.
    public static func problems(_ connection: Connection, appSchema: String) throws -> [String] {
        // The catalog, not information_schema: that shows only the columns the role
        // has rights on, and a restricted worker role has few.
        let rows = try connection.query("""
            SELECT c.relname AS table_name, a.attname AS column_name,
                   format_type(CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END, NULL) AS data_type
            FROM pg_attribute a
            JOIN pg_class c ON c.oid = a.attrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_type t ON t.oid = a.atttypid
            WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'f') AND a.attnum > 0 AND NOT a.attisdropped
            """, appSchema).rows
        var actual: [String: String] = [:]
        for row in rows {
            actual["\(row["table_name"] ?? "").\(row["column_name"] ?? "")"] = row["data_type"] ?? ""
        }
        let tables = Set(rows.compactMap { $0["table_name"] })
        var problems: [String] = []
        for table in Set(expected.map(\.table)).sorted() where !tables.contains(table) {
            problems.append("table \(appSchema).\(table) is missing")
        }
        for column in expected where tables.contains(column.table) {
            let name = "\(column.table).\(column.column)"
            guard let type = actual[name] else {
                problems.append("column \(appSchema).\(name) is missing (expected \(column.types.sorted().first!))")
                continue
            }
            if !column.types.contains(type) {
                problems.append("column \(appSchema).\(name) has type \(type), expected \(column.types.sorted().joined(separator: " or "))")
            }
        }
        return problems
    }
}
