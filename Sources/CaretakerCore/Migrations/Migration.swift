/// One versioned step of the schema, embedded in the binary.
///
/// `sql` may contain `{{app}}`, replaced by the quoted `database.app_schema`
/// identifier, so the reference app schema can live in any schema.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    public let sql: String

    /// Every migration, in the order they apply.
    public static let all: [Migration] = [
        .bookkeeping,
        .referenceAppSchema,
        .notifyTriggers,
        .expiryIndexes,
        .jobAlerts,
    ]

    /// The SQL with the app schema substituted.
    public func sql(appSchema: String) -> String {
        sql.replacing("{{app}}", with: quoteIdentifier(appSchema))
    }
}

/// Quotes an identifier that comes from configuration (`"my schema"` → `"my schema"`, `a"b` → `"a""b"`).
public func quoteIdentifier(_ name: String) -> String {
    "\"" + name.replacing("\"", with: "\"\"") + "\""
}
