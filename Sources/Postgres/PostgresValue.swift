/// A value that can be sent as a query parameter, in PostgreSQL's text format.
public protocol PostgresBindable: Sendable {
    /// The text form of the value; `nil` sends SQL NULL.
    var postgresText: String? { get }
}

extension String: PostgresBindable { public var postgresText: String? { self } }
extension Substring: PostgresBindable { public var postgresText: String? { String(self) } }
extension Int: PostgresBindable { public var postgresText: String? { String(self) } }
extension Int64: PostgresBindable { public var postgresText: String? { String(self) } }
extension Int32: PostgresBindable { public var postgresText: String? { String(self) } }
extension Double: PostgresBindable { public var postgresText: String? { String(self) } }
extension Bool: PostgresBindable { public var postgresText: String? { self ? "true" : "false" } }
extension Optional: PostgresBindable where Wrapped: PostgresBindable {
    public var postgresText: String? { self?.postgresText }
}

/// Sends SQL NULL of any type.
public struct PostgresNull: PostgresBindable {
    public init() {}
    public var postgresText: String? { nil }
}
