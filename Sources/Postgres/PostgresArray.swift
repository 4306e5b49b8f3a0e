/// An array parameter in PostgreSQL's array text form (`{1,2}`, `{"a b","c"}`).
public struct PostgresArray: PostgresBindable {
    let elements: [String]
    public init(_ values: [Int64]) { elements = values.map(String.init) }
    public init(_ values: [String]) {
        elements = values.map { "\"" + $0.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\"" }
    }
    public var postgresText: String? { "{" + elements.joined(separator: ",") + "}" }
}
