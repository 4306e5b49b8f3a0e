/// The rows a statement returned, in text format, plus how many rows it affected.
public struct QueryResult: Sendable {
    public let columns: [String]
    public let rows: [Row]
    /// Rows inserted, updated, deleted or selected, from the command tag.
    public let affectedRows: Int

    public init(columns: [String], rows: [Row], affectedRows: Int) {
        self.columns = columns
        self.rows = rows
        self.affectedRows = affectedRows
    }

    /// The first row, if any.
    public var first: Row? { rows.first }
}

/// One result row; values are PostgreSQL's text output, `nil` for NULL.
public struct Row: Sendable {
    public let columns: [String]
    public let values: [String?]

    public init(columns: [String], values: [String?]) {
        self.columns = columns
        self.values = values
    }

    public subscript(_ index: Int) -> String? { values[index] }

    public subscript(_ name: String) -> String? {
        guard let index = columns.firstIndex(of: name) else {
            preconditionFailure("no column \(name) in result (have \(columns))")
        }
        return values[index]
    }

    public func int(_ name: String) -> Int? { self[name].flatMap { Int($0) } }
    public func int64(_ name: String) -> Int64? { self[name].flatMap { Int64($0) } }
    public func double(_ name: String) -> Double? { self[name].flatMap { Double($0) } }
    public func bool(_ name: String) -> Bool? { self[name].map { $0 == "t" || $0 == "true" } }
    public func string(_ name: String) -> String? { self[name] }
}
