// The TOML parser: a cursor over the UTF-8 bytes of the document, the
// top-level loop (key/value lines and `[table]` headers) and keys.
// Values are in TOMLParser+Values.swift, the table tree in TOMLTableBuilder.swift.
//
// Robustness rules (the parser is fuzzed): every byte access goes through
// `peek`, which returns nil past the end; nesting of tables and arrays is
// capped at `maxDepth`, so the recursion in values and in `freeze` is bounded.

/// Recursive-descent parser for `TOMLDocument`. Not for direct use.
struct TOMLParser {
    /// Deepest nesting of tables and arrays accepted.
    static let maxDepth = 64

    /// A remembered position, for error messages; the column is computed only when needed.
    struct Mark {
        let offset: Int
        let line: Int
        let lineStart: Int
    }

    /// One part of a (possibly dotted) key, with where it was written.
    struct KeyPart {
        let name: String
        let mark: Mark
    }

    let bytes: [UInt8]
    var pos = 0
    var line = 1
    var lineStart = 0

    init(_ text: String) {
        bytes = Array(text.utf8)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {  // a UTF-8 byte order mark
            pos = 3
            lineStart = 3
        }
    }

    // MARK: - Document

    /// Parses the whole document into its root table.
    mutating func parseDocument() throws(TOMLSyntaxError) -> TOMLTable {
        let root = TOMLTableBuilder(origin: .root, depth: 0, headerLine: 0)
        var current = root
        while true {
            skipWhitespace()
            guard let byte = peek() else { break }
            if atNewline {
                consumeNewline()
            } else if byte == ASCII.hash {
                try skipComment()
            } else if byte == ASCII.openBracket {
                current = try parseTableHeader(root: root)
                try expectEndOfLine(after: "the table header")
            } else {
                let key = try parseKeyValue(into: current)
                try expectEndOfLine(after: "the value of \(quoted(key))")
            }
        }
        return root.freeze()
    }

    /// `[a.b.c]`: opens (or creates) that table and returns it.
    mutating func parseTableHeader(root: TOMLTableBuilder) throws(TOMLSyntaxError) -> TOMLTableBuilder {
        let open = mark
        pos += 1
        if peek() == ASCII.openBracket {
            throw error("arrays of tables ([[...]]) are not supported; use one [table] per entry", at: open)
        }
        let parts = try parseKey()
        guard peek() == ASCII.closeBracket else {
            throw error("expected ']' to close the table header, found \(describeHere())")
        }
        pos += 1
        return try openTable(parts, in: root, header: open)
    }

    /// `key = value` (the key may be dotted), stored into `table`. Returns the key parts.
    @discardableResult
    mutating func parseKeyValue(into table: TOMLTableBuilder) throws(TOMLSyntaxError) -> [KeyPart] {
        let parts = try parseKey()
        guard peek() == ASCII.equals else {
            throw error("expected '=' after the key \(quoted(parts)), found \(describeHere())")
        }
        pos += 1
        skipWhitespace()
        let value = try parseValue(depth: table.depth + parts.count)
        try assign(value, to: parts, in: table)
        return parts
    }

    /// After a key/value pair or a header: only whitespace, a comment and a line break may follow.
    mutating func expectEndOfLine(after what: String) throws(TOMLSyntaxError) {
        skipWhitespace()
        if peek() == ASCII.hash {
            try skipComment()
        }
        if atNewline {
            consumeNewline()
        } else if peek() != nil {
            throw error("unexpected \(describeHere()) after \(what); expected a line break or a comment")
        }
    }

    // MARK: - Keys

    /// A key: simple keys separated by dots, with optional whitespace around the dots.
    mutating func parseKey() throws(TOMLSyntaxError) -> [KeyPart] {
        var parts: [KeyPart] = []
        while true {
            skipWhitespace()
            parts.append(try parseSimpleKey())
            if parts.count > Self.maxDepth {
                throw error("key has more than \(Self.maxDepth) dotted parts", at: parts[0].mark)
            }
            skipWhitespace()
            guard peek() == ASCII.dot else { return parts }
            pos += 1
        }
    }

    /// A bare key (`A-Za-z0-9_-`), a "basic string" key or a 'literal string' key.
    mutating func parseSimpleKey() throws(TOMLSyntaxError) -> KeyPart {
        let start = mark
        switch peek() {
        case ASCII.doubleQuote?, ASCII.singleQuote?:
            guard let quote = peek(), peek(1) != quote || peek(2) != quote else {
                throw error("multi-line strings cannot be used as keys")
            }
            let name = quote == ASCII.doubleQuote ? try parseBasicString() : try parseLiteralString()
            return KeyPart(name: name, mark: start)
        case let byte? where ASCII.isBareKey(byte):
            while let byte = peek(), ASCII.isBareKey(byte) { pos += 1 }
            return KeyPart(name: String(decoding: bytes[start.offset..<pos], as: UTF8.self), mark: start)
        default:
            throw error("expected a key, found \(describeHere())")
        }
    }

    // MARK: - Cursor

    /// The byte `ahead` positions after the cursor, or nil past the end.
    func peek(_ ahead: Int = 0) -> UInt8? {
        let index = pos + ahead
        return index >= 0 && index < bytes.count ? bytes[index] : nil
    }

    /// The current position, for error messages.
    var mark: Mark { Mark(offset: pos, line: line, lineStart: lineStart) }

    /// True at `\n` or `\r\n`.
    var atNewline: Bool {
        peek() == ASCII.lineFeed || (peek() == ASCII.carriageReturn && peek(1) == ASCII.lineFeed)
    }

    /// Consumes `\n` or `\r\n` and moves to the next line. Call only when `atNewline`.
    mutating func consumeNewline() {
        pos += peek() == ASCII.carriageReturn ? 2 : 1
        line += 1
        lineStart = pos
    }

    /// Skips spaces and tabs.
    mutating func skipWhitespace() {
        while let byte = peek(), byte == ASCII.space || byte == ASCII.tab { pos += 1 }
    }

    /// Skips a `#` comment up to (not including) the line break.
    mutating func skipComment() throws(TOMLSyntaxError) {
        pos += 1
        while let byte = peek(), !atNewline {
            if ASCII.isControl(byte) {
                throw error("\(describeHere()) is not allowed in a comment")
            }
            pos += 1
        }
    }

    /// Skips whitespace, line breaks and comments (inside arrays).
    mutating func skipWhitespaceCommentsAndNewlines() throws(TOMLSyntaxError) {
        while true {
            skipWhitespace()
            if atNewline {
                consumeNewline()
            } else if peek() == ASCII.hash {
                try skipComment()
            } else {
                return
            }
        }
    }

    // MARK: - Errors

    /// An error at `mark` (default: the cursor).
    func error(_ message: String, at mark: Mark? = nil) -> TOMLSyntaxError {
        let mark = mark ?? self.mark
        return TOMLSyntaxError(line: mark.line, column: column(of: mark), message: message)
    }

    /// 1-based column of `mark`, counting Unicode scalars (UTF-8 lead bytes).
    func column(of mark: Mark) -> Int {
        var column = 1
        var index = mark.lineStart
        let end = min(mark.offset, bytes.count)
        while index < end {
            if bytes[index] & 0xC0 != 0x80 { column += 1 }
            index += 1
        }
        return column
    }

    /// What is at the cursor, for messages: "'x'", "end of line", "end of file", "control character U+0007".
    func describeHere() -> String {
        guard let byte = peek() else { return "end of file" }
        if atNewline { return "end of line" }
        if ASCII.isControl(byte) { return "control character \(ASCII.codePoint(UInt32(byte)))" }
        if byte < 0x80 { return "'\(Character(Unicode.Scalar(byte)))'" }
        let end = min(pos + 4, bytes.count)
        guard let scalar = String(decoding: bytes[pos..<end], as: UTF8.self).unicodeScalars.first else {
            return "byte \(byte)"
        }
        return "'\(scalar)' (\(ASCII.codePoint(scalar.value)))"
    }

    /// A key for messages: `"a.b"`, quoting parts that are not bare keys.
    func quoted(_ parts: some Collection<KeyPart>) -> String {
        "\"\(Self.dotted(parts.map(\.name)))\""
    }

    /// Joins key names with dots in TOML syntax: bare names as they are, others as
    /// 'literal' keys (or "basic" ones when they contain a quote or control character).
    static func dotted(_ names: [String]) -> String {
        names.map { name in
            if !name.isEmpty && name.utf8.allSatisfy(ASCII.isBareKey) { return name }
            if !name.utf8.contains(where: { $0 == ASCII.singleQuote || ASCII.isControl($0) }) {
                return "'\(name)'"
            }
            return "\"" + name.unicodeScalars.map(escaped).joined() + "\""
        }.joined(separator: ".")
    }

    /// One scalar of a basic string, escaped where TOML requires it.
    private static func escaped(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\"": "\\\""
        case "\\": "\\\\"
        case _ where scalar.value < 0x20 || scalar.value == 0x7F:
            "\\u" + ASCII.codePoint(scalar.value).dropFirst(2)
        default: String(scalar)
        }
    }
}

/// Byte constants and classes used by the parser.
enum ASCII {
    static let tab: UInt8 = 0x09
    static let lineFeed: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D
    static let space: UInt8 = 0x20
    static let doubleQuote: UInt8 = 0x22
    static let hash: UInt8 = 0x23
    static let singleQuote: UInt8 = 0x27
    static let plus: UInt8 = 0x2B
    static let comma: UInt8 = 0x2C
    static let minus: UInt8 = 0x2D
    static let dot: UInt8 = 0x2E
    static let zero: UInt8 = 0x30
    static let colon: UInt8 = 0x3A
    static let equals: UInt8 = 0x3D
    static let openBracket: UInt8 = 0x5B
    static let backslash: UInt8 = 0x5C
    static let closeBracket: UInt8 = 0x5D
    static let underscore: UInt8 = 0x5F
    static let openBrace: UInt8 = 0x7B
    static let closeBrace: UInt8 = 0x7D

    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
    static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }
    static func isHexDigit(_ byte: UInt8) -> Bool { isDigit(byte) || ((byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x66) }
    static func isOctalDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x37 }
    static func isBinaryDigit(_ byte: UInt8) -> Bool { byte == 0x30 || byte == 0x31 }

    /// A-Za-z0-9_-
    static func isBareKey(_ byte: UInt8) -> Bool {
        isLetter(byte) || isDigit(byte) || byte == underscore || byte == minus
    }

    /// Control characters other than tab; TOML forbids them raw in strings and comments.
    static func isControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != tab) || byte == 0x7F
    }

    /// "U+0007"
    static func codePoint(_ value: UInt32) -> String {
        let hex = String(value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
