import CaretakerSchedule
import CaretakerTOML

/// Reads typed values out of one TOML table, remembering which keys were read
/// so that `finish()` can reject the ones nobody asked for (typos).
package struct TableReader {
    let table: TOMLTable
    /// Dotted path of this table, e.g. `jobs.NAME`.
    let path: String
    let file: String
    private var consumed: Set<String> = []

    init(_ table: TOMLTable, path: String, file: String) {
        self.table = table
        self.path = path
        self.file = file
    }

    package func error(_ key: String, _ message: String) -> ConfigurationError {
        ConfigurationError(
            file: file, line: table.line(of: key) ?? table.headerLine,
            key: path.isEmpty ? key : "\(path).\(key)", message: message)
    }

    private mutating func value(_ key: String) -> TOMLValue? {
        consumed.insert(key)
        return table[key]
    }

    private func mismatch(_ key: String, _ expected: String, _ found: TOMLValue) -> ConfigurationError {
        error(key, "expected \(expected), found \(found.typeName)")
    }

    package mutating func string(_ key: String, default fallback: String) throws(ConfigurationError) -> String {
        try optionalString(key) ?? fallback
    }

    /// A string; one holding a NUL byte is refused: C libraries (libpq, libcurl)
    /// would cut it there and act on the part before.
    mutating func optionalString(_ key: String) throws(ConfigurationError) -> String? {
        guard let found = value(key) else { return nil }
        guard case .string(let text) = found else { throw mismatch(key, "a string", found) }
        try refuseNUL(text, key)
        return text
    }

    /// The text of a key that `""` turns off: `nil` for `""`; not a string, or one
    /// holding a NUL byte, is refused with what was `expected`.
    private func textUnlessOff(
        _ found: TOMLValue, _ key: String, expected: String
    ) throws(ConfigurationError) -> String? {
        guard case .string(let text) = found else { throw mismatch(key, expected, found) }
        try refuseNUL(text, key)
        return text.isEmpty ? nil : text
    }

    private func refuseNUL(_ text: String, _ key: String) throws(ConfigurationError) {
        if text.utf8.contains(0) {
            throw error(key, "contains a NUL byte (\\u0000), which cannot be passed on safely: remove it")
        }
    }

    /// A sub-table such as `[mail]`; `nil` when absent.
    mutating func optionalTable(_ key: String) throws(ConfigurationError) -> TOMLTable? {
        guard let found = value(key) else { return nil }
        guard case .table(let table) = found else { throw mismatch(key, "a table", found) }
        return table
    }

    /// Stands in for a section the file does not have.
    static let emptyTable: TOMLTable = {
        do { return try TOMLDocument(parsing: "").root } catch { fatalError("empty TOML failed to parse") }
    }()

    package mutating func bool(_ key: String, default fallback: Bool) throws(ConfigurationError) -> Bool {
        guard let found = value(key) else { return fallback }
        guard case .boolean(let flag) = found else { throw mismatch(key, "true or false", found) }
        return flag
    }

    mutating func optionalBool(_ key: String) throws(ConfigurationError) -> Bool? {
        guard let found = value(key) else { return nil }
        guard case .boolean(let flag) = found else { throw mismatch(key, "true or false", found) }
        return flag
    }

    package mutating func integer(
        _ key: String, default fallback: Int, in range: ClosedRange<Int>
    ) throws(ConfigurationError) -> Int {
        try optionalInteger(key, in: range) ?? fallback
    }

    mutating func optionalInteger(_ key: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
        guard let found = value(key) else { return nil }
        guard case .integer(let number) = found else { throw mismatch(key, "an integer", found) }
        guard let int = Int(exactly: number), range.contains(int) else {
            throw error(key, "\(number) is out of range (\(range.lowerBound)…\(range.upperBound))")
        }
        return int
    }

    package mutating func duration(
        _ key: String, default fallback: Duration, minimum: Duration = .zero,
        maximum: Duration? = nil
    ) throws(ConfigurationError) -> Duration {
        try optionalDuration(key, minimum: minimum, maximum: maximum) ?? fallback
    }

    /// A duration string; `""` counts as absent (used for switches such as `leader_inactive_after`).
    package mutating func optionalDuration(
        _ key: String, minimum: Duration = .zero,
        maximum: Duration? = nil
    ) throws(ConfigurationError) -> Duration? {
        guard let found = value(key),
            let text = try textUnlessOff(found, key, expected: "a duration string such as \"90s\"")
        else { return nil }
        guard let duration = DurationText.parse(text) else {
            throw error(
                key,
                "\"\(text)\" is not a duration: use a number and a unit, e.g. \"500ms\", \"90s\", \"10m\", \"24h\", \"30d\""
            )
        }
        guard duration >= minimum else {
            throw error(key, "must be at least \(DurationText.format(minimum))")
        }
        if let maximum, duration > maximum {
            throw error(key, "must be at most \(DurationText.format(maximum))")
        }
        return duration
    }

    /// True when the table does not have `key`; the key counts as read either way, so
    /// that it is among the valid keys an unknown key's message lists.
    mutating func isAbsent(_ key: String) -> Bool {
        consumed.insert(key)
        return table[key] == nil
    }

    /// True when `key` holds the string `word` (the key then counts as read).
    mutating func isWord(_ key: String, _ word: String) -> Bool {
        guard case .string(let text) = table[key], text == word else { return false }
        consumed.insert(key)
        return true
    }

    /// A switch that is on by default: absent gives `fallback`, `""` turns it off (`nil`).
    mutating func optionalDuration(
        _ key: String, default fallback: Duration,
        minimum: Duration = .zero
    ) throws(ConfigurationError) -> Duration? {
        guard table[key] != nil else {
            consumed.insert(key)
            return fallback
        }
        return try optionalDuration(key, minimum: minimum)
    }

    /// A rate of bytes per second such as `"64MB/s"` (units `B`, `kB`, `MB`, `GB`,
    /// 1024-based as in PostgreSQL); absent gives `fallback`, `""` turns it off (`nil`).
    mutating func optionalRate(_ key: String, default fallback: Int64) throws(ConfigurationError) -> Int64? {
        guard let found = value(key) else { return fallback }
        guard let text = try textUnlessOff(found, key, expected: "a rate string such as \"64MB/s\"") else { return nil }
        guard let rate = ByteRateText.parse(text) else {
            throw error(
                key,
                "\"\(text)\" is not a rate: use a whole number, a unit and \"/s\", e.g. \"512kB/s\", \"64MB/s\", \"1GB/s\"; \"\" turns it off"
            )
        }
        guard rate > 0 else { throw error(key, "must be more than 0B/s; \"\" turns it off") }
        return rate
    }

    /// A percentage such as `"50%"` (a whole number in `range`, by default 1 to 1000); absent gives
    /// `fallback`, `""` turns it off (`nil`).
    mutating func optionalPercent(
        _ key: String, default fallback: Int?, in range: ClosedRange<Int> = 1...1000
    ) throws(ConfigurationError) -> Int? {
        guard let found = value(key) else { return fallback }
        guard let text = try textUnlessOff(found, key, expected: "a percentage string such as \"50%\"") else {
            return nil
        }
        guard text.hasSuffix("%"), let percent = Int(text.dropLast()), range.contains(percent) else {
            throw error(
                key,
                """
                "\(text)" is not a percentage: use a whole number from \(range.lowerBound) to \(range.upperBound) \
                and "%", e.g. "50%"; "" turns it off
                """)
        }
        return percent
    }

    /// Rejects keys this table does not define.
    func finish() throws(ConfigurationError) {
        let validKeys = consumed.sorted()
        for entry in table.entries where !consumed.contains(entry.key) {
            let place = path.isEmpty ? "the top level" : "[\(path)]"
            throw ConfigurationError(
                file: file, line: entry.line, key: path.isEmpty ? entry.key : "\(path).\(entry.key)",
                message: "unknown key in \(place); valid keys: \(validKeys.joined(separator: ", "))")
        }
    }
}
