// The public face of caretaker's small TOML parser.
//
// It reads the subset of TOML 1.0 that `jobs.toml` needs and, unlike the
// general-purpose libraries, remembers the source line of every key, so
// configuration errors can name the file, line and key (exit 78).
//
// Supported: comments, bare / quoted / dotted keys, `[tables]`, all four
// string forms, integers (decimal, hex, octal, binary), floats, booleans,
// arrays and inline tables. Not supported (rejected with a syntax error):
// arrays of tables (`[[x]]`) and dates / times.

/// A parsed TOML document: the root table, with the source line of every key.
public struct TOMLDocument: Sendable {
    /// The root table.
    public let root: TOMLTable

    /// Parses `text` as TOML.
    ///
    /// - Throws: `TOMLSyntaxError` naming the line and column of the first problem.
    public init(parsing text: String) throws(TOMLSyntaxError) {
        var parser = TOMLParser(text)
        root = try parser.parseDocument()
    }
}

/// A TOML table: keys in source order, each with its value and the line it was written on.
public struct TOMLTable: Sendable, Equatable {
    struct Entry: Sendable, Equatable {
        let key: String
        let value: TOMLValue
        let line: Int
    }

    private let storage: [Entry]
    private let index: [String: Int]

    /// Line of the `[header]` that opened this table (0 for the root or implicit tables).
    ///
    /// Tables created only by dotted keys, inline tables, and tables that exist only
    /// because a deeper header named them (`jobs` in `[jobs.clean]`) have 0 here.
    public let headerLine: Int

    /// An empty table (for defaults, when a configuration file leaves a table out).
    public init() {
        self.init(entries: [], headerLine: 0)
    }

    init(entries: [Entry], headerLine: Int) {
        var index: [String: Int] = [:]
        for (position, entry) in entries.enumerated() where index[entry.key] == nil {
            index[entry.key] = position
        }
        self.storage = entries
        self.index = index
        self.headerLine = headerLine
    }

    /// Keys in source order, with their values and the 1-based line where each key was written.
    ///
    /// For a sub-table the line is where its name first appeared: its `[header]`, the
    /// dotted key that created it, or the first deeper header that mentioned it.
    public var entries: [(key: String, value: TOMLValue, line: Int)] {
        storage.map { (key: $0.key, value: $0.value, line: $0.line) }
    }

    /// The keys in source order.
    public var keys: [String] { storage.map(\.key) }

    /// The number of keys in this table.
    public var count: Int { storage.count }

    /// True when the table has no keys.
    public var isEmpty: Bool { storage.isEmpty }

    /// The value of `key`, or nil when the table does not define it.
    public subscript(key: String) -> TOMLValue? {
        guard let position = index[key] else { return nil }
        return storage[position].value
    }

    /// The 1-based line where `key` was written, or nil when the table does not define it.
    public func line(of key: String) -> Int? {
        guard let position = index[key] else { return nil }
        return storage[position].line
    }
}

/// A TOML value.
public indirect enum TOMLValue: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case float(Double)
    case boolean(Bool)
    case array([TOMLValue])
    case table(TOMLTable)

    /// The TOML type of this value, for messages such as "expected a string, found integer":
    /// "string", "integer", "float", "boolean", "array" or "table".
    public var typeName: String {
        switch self {
        case .string: "string"
        case .integer: "integer"
        case .float: "float"
        case .boolean: "boolean"
        case .array: "array"
        case .table: "table"
        }
    }

    /// The string, when this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { value } else { nil }
    }

    /// The integer, when this is an integer.
    public var integerValue: Int64? {
        if case .integer(let value) = self { value } else { nil }
    }

    /// The float, when this is a float (integers are not converted).
    public var floatValue: Double? {
        if case .float(let value) = self { value } else { nil }
    }

    /// The boolean, when this is a boolean.
    public var booleanValue: Bool? {
        if case .boolean(let value) = self { value } else { nil }
    }

    /// The elements, when this is an array.
    public var arrayValue: [TOMLValue]? {
        if case .array(let value) = self { value } else { nil }
    }

    /// The table, when this is a table.
    public var tableValue: TOMLTable? {
        if case .table(let value) = self { value } else { nil }
    }
}

/// A TOML syntax error: where it is (1-based line and column) and what is wrong.
public struct TOMLSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 1-based line of the problem.
    public let line: Int
    /// 1-based column of the problem, counted in Unicode scalars.
    public let column: Int
    /// What is wrong and what was expected, e.g. "unterminated string: missing closing '\"'".
    public let message: String

    public init(line: Int, column: Int, message: String) {
        self.line = line
        self.column = column
        self.message = message
    }

    /// "line 12, column 5: <message>"
    public var description: String { "line \(line), column \(column): \(message)" }
}
