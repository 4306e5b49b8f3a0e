/// Quotes an identifier that comes from configuration (`my schema` → `"my schema"`, `a"b` → `"a""b"`),
/// so it can be spliced into SQL where a parameter cannot go (schema, table and role names).
public func quoteIdentifier(_ name: String) -> String {
    "\"" + name.replacing("\"", with: "\"\"") + "\""
}
