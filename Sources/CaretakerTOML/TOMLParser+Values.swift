// Values: strings (four forms), numbers, booleans, arrays and inline tables.

extension TOMLParser {
    /// A value starting at the cursor. `depth` is its nesting level; arrays and inline
    /// tables deeper than `maxDepth` are rejected, which bounds the recursion.
    mutating func parseValue(depth: Int) throws(TOMLSyntaxError) -> TOMLValue {
        guard let byte = peek(), !atNewline else {
            throw error("expected a value after '=', found \(describeHere())")
        }
        switch byte {
        case ASCII.doubleQuote:
            if peek(1) == ASCII.doubleQuote && peek(2) == ASCII.doubleQuote {
                return .string(try parseMultilineBasicString())
            }
            return .string(try parseBasicString())
        case ASCII.singleQuote:
            if peek(1) == ASCII.singleQuote && peek(2) == ASCII.singleQuote {
                return .string(try parseMultilineLiteralString())
            }
            return .string(try parseLiteralString())
        case ASCII.openBracket:
            try checkDepth(depth)
            return try parseArray(depth: depth)
        case ASCII.openBrace:
            try checkDepth(depth)
            return try parseInlineTable(depth: depth)
        case _ where ASCII.isDigit(byte) || ASCII.isLetter(byte) || byte == ASCII.plus || byte == ASCII.minus:
            return try parseBareValue()
        default:
            throw error(
                "expected a value (a quoted string, number, true/false, [array] or {inline table}), "
                    + "found \(describeHere())")
        }
    }

    private func checkDepth(_ depth: Int) throws(TOMLSyntaxError) {
        if depth > Self.maxDepth {
            throw error("tables and arrays are nested more than \(Self.maxDepth) levels deep")
        }
    }

    // MARK: - Arrays and inline tables

    /// `[ v, v, ... ]`, over any number of lines, with comments and an optional trailing comma.
    private mutating func parseArray(depth: Int) throws(TOMLSyntaxError) -> TOMLValue {
        let open = mark
        pos += 1
        var elements: [TOMLValue] = []
        while true {
            try skipWhitespaceCommentsAndNewlines()
            switch peek() {
            case nil:
                throw error("unterminated array: no ']' closes the '[' opened here", at: open)
            case ASCII.closeBracket?:
                pos += 1
                return .array(elements)
            default:
                break
            }
            elements.append(try parseValue(depth: depth + 1))
            try skipWhitespaceCommentsAndNewlines()
            switch peek() {
            case ASCII.comma?:
                pos += 1
            case ASCII.closeBracket?:
                pos += 1
                return .array(elements)
            case nil:
                throw error("unterminated array: no ']' closes the '[' opened here", at: open)
            default:
                throw error("expected ',' or ']' after an array element, found \(describeHere())")
            }
        }
    }

    /// `{ k = v, a.b = v }` on one line (TOML 1.0: no line breaks, no trailing comma).
    private mutating func parseInlineTable(depth: Int) throws(TOMLSyntaxError) -> TOMLValue {
        let open = mark
        pos += 1
        let table = TOMLTableBuilder(origin: .root, depth: depth, headerLine: 0)
        skipWhitespace()
        if peek() == ASCII.closeBrace {
            pos += 1
            return .table(table.freeze())
        }
        while true {
            try checkInlineTableContinues(open: open)
            try parseKeyValue(into: table)
            skipWhitespace()
            try checkInlineTableContinues(open: open)
            guard let byte = peek(), byte == ASCII.comma || byte == ASCII.closeBrace else {
                throw error("expected ',' or '}' after an inline table entry, found \(describeHere())")
            }
            pos += 1
            if byte == ASCII.closeBrace {
                return .table(table.freeze())
            }
            skipWhitespace()
            if peek() == ASCII.closeBrace {
                throw error("trailing comma before '}': inline tables do not allow one")
            }
        }
    }

    /// Inline tables must end on the line they start.
    private func checkInlineTableContinues(open: Mark) throws(TOMLSyntaxError) {
        if peek() == nil {
            throw error("unterminated inline table: no '}' closes the '{' opened here", at: open)
        }
        if atNewline {
            throw error(
                "unterminated inline table: it must end with '}' on the line where it starts "
                    + "(use a [table] for longer ones)")
        }
    }

    // MARK: - Strings

    /// `"basic string"` with escapes, on one line.
    mutating func parseBasicString() throws(TOMLSyntaxError) -> String {
        let open = mark
        pos += 1
        var text: [UInt8] = []
        while true {
            guard let byte = peek() else {
                throw error("unterminated string: missing closing '\"'", at: open)
            }
            if atNewline {
                throw error(
                    "unterminated string: missing closing '\"' before the end of the line "
                        + "(use \"\"\"...\"\"\" for text over several lines)", at: open)
            }
            switch byte {
            case ASCII.doubleQuote:
                pos += 1
                return String(decoding: text, as: UTF8.self)
            case ASCII.backslash:
                try parseEscape(into: &text)
            default:
                try appendStringByte(byte, to: &text)
            }
        }
    }

    /// `'literal string'`: no escapes, on one line.
    mutating func parseLiteralString() throws(TOMLSyntaxError) -> String {
        let open = mark
        pos += 1
        var text: [UInt8] = []
        while true {
            guard let byte = peek() else {
                throw error("unterminated string: missing closing \"'\"", at: open)
            }
            if atNewline {
                throw error(
                    "unterminated string: missing closing \"'\" before the end of the line "
                        + "(use '''...''' for text over several lines)", at: open)
            }
            if byte == ASCII.singleQuote {
                pos += 1
                return String(decoding: text, as: UTF8.self)
            }
            try appendStringByte(byte, to: &text)
        }
    }

    /// `"""multi-line basic string"""`: escapes, line breaks, and line-ending backslashes.
    private mutating func parseMultilineBasicString() throws(TOMLSyntaxError) -> String {
        try parseMultilineString(quote: ASCII.doubleQuote, escapes: true)
    }

    /// `'''multi-line literal string'''`: line breaks, no escapes.
    private mutating func parseMultilineLiteralString() throws(TOMLSyntaxError) -> String {
        try parseMultilineString(quote: ASCII.singleQuote, escapes: false)
    }

    /// The body of both multi-line forms. A line break right after the opening
    /// delimiter is dropped; `\r\n` becomes `\n`; up to two quotes may directly
    /// precede the closing delimiter.
    private mutating func parseMultilineString(quote: UInt8, escapes: Bool) throws(TOMLSyntaxError) -> String {
        let open = mark
        let delimiter = quote == ASCII.doubleQuote ? "\"\"\"" : "'''"
        pos += 3
        if atNewline { consumeNewline() }
        var text: [UInt8] = []
        while true {
            guard let byte = peek() else {
                throw error("unterminated multi-line string: no \(delimiter) closes the one opened here", at: open)
            }
            if atNewline {
                consumeNewline()
                text.append(ASCII.lineFeed)
            } else if byte == quote && peek(1) == quote && peek(2) == quote {
                var run = 3
                while peek(run) == quote { run += 1 }
                guard run <= 5 else {
                    throw error(
                        "too many quotes: three in a row would end the string; "
                            + "escape one or use the other quote style")
                }
                text.append(contentsOf: repeatElement(quote, count: run - 3))
                pos += run
                return String(decoding: text, as: UTF8.self)
            } else if byte == ASCII.backslash && escapes {
                if try !skipLineEndingBackslash() {
                    try parseEscape(into: &text)
                }
            } else {
                try appendStringByte(byte, to: &text)
            }
        }
    }

    /// In a multi-line basic string, `\` followed by optional spaces and a line break
    /// removes itself and all whitespace and line breaks after it. Returns false when
    /// the backslash starts an ordinary escape instead.
    private mutating func skipLineEndingBackslash() throws(TOMLSyntaxError) -> Bool {
        var ahead = 1
        while peek(ahead) == ASCII.space || peek(ahead) == ASCII.tab { ahead += 1 }
        let lineEnds =
            peek(ahead) == ASCII.lineFeed
            || (peek(ahead) == ASCII.carriageReturn && peek(ahead + 1) == ASCII.lineFeed)
        guard lineEnds else {
            if ahead > 1 {
                throw error("invalid escape: a backslash followed by spaces must end the line")
            }
            return false
        }
        pos += ahead
        while true {
            if atNewline {
                consumeNewline()
            } else if peek() == ASCII.space || peek() == ASCII.tab {
                pos += 1
            } else {
                return true
            }
        }
    }

    /// Appends one raw byte of string content, refusing control characters.
    private mutating func appendStringByte(_ byte: UInt8, to text: inout [UInt8]) throws(TOMLSyntaxError) {
        if ASCII.isControl(byte) {
            throw error("\(describeHere()) is not allowed in a string; write it as an escape such as \\n or \\u0007")
        }
        text.append(byte)
        pos += 1
    }

    /// An escape sequence at the cursor (which is on the backslash).
    private mutating func parseEscape(into text: inout [UInt8]) throws(TOMLSyntaxError) {
        let start = mark
        pos += 1
        guard let letter = peek() else {
            throw error("unterminated string: the file ends after '\\'", at: start)
        }
        if atNewline {
            throw error(
                "invalid escape: '\\' at the end of a line (only multi-line \"\"\" strings may continue)",
                at: start)
        }
        if let replacement = Self.simpleEscape(letter) {
            text.append(replacement)
            pos += 1
        } else if letter == 0x75 || letter == 0x55 {  // u U
            pos += 1
            try parseUnicodeEscape(digits: letter == 0x75 ? 4 : 8, start: start, into: &text)
        } else {
            let found = letter > 0x20 && letter < 0x7F ? "'\\\(Character(Unicode.Scalar(letter)))'" : describeHere()
            throw error(
                "invalid escape \(found); valid escapes are "
                    + "\\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX \\UXXXXXXXX", at: start)
        }
    }

    /// What `\b \t \n \f \r \" \\` stand for, given the byte after the backslash.
    private static func simpleEscape(_ letter: UInt8) -> UInt8? {
        switch letter {
        case 0x62: 0x08  // b
        case 0x74: 0x09  // t
        case 0x6E: 0x0A  // n
        case 0x66: 0x0C  // f
        case 0x72: 0x0D  // r
        case ASCII.doubleQuote, ASCII.backslash: letter
        default: nil
        }
    }

    /// The hex digits of `\uXXXX` / `\UXXXXXXXX`, appended as UTF-8.
    private mutating func parseUnicodeEscape(
        digits: Int, start: Mark, into text: inout [UInt8]
    ) throws(TOMLSyntaxError) {
        let form = digits == 4 ? "\\uXXXX" : "\\UXXXXXXXX"
        var value: UInt32 = 0
        for _ in 0..<digits {
            guard let byte = peek(), ASCII.isHexDigit(byte) else {
                throw error("invalid escape: \(form) needs exactly \(digits) hexadecimal digits", at: start)
            }
            value = value &* 16 &+ UInt32(Self.hexValue(byte))
            pos += 1
        }
        guard let scalar = Unicode.Scalar(value) else {
            throw error("invalid escape: \(ASCII.codePoint(value)) is not a Unicode scalar value", at: start)
        }
        UTF8.encode(scalar) { text.append($0) }
    }

    static func hexValue(_ byte: UInt8) -> UInt8 {
        ASCII.isDigit(byte) ? byte - ASCII.zero : (byte | 0x20) - 0x61 + 10
    }

    // MARK: - Numbers, booleans and bare words

    /// Everything unquoted that is not an array or table: booleans, integers, floats,
    /// and (to reject them clearly) dates, times and unquoted words.
    private mutating func parseBareValue() throws(TOMLSyntaxError) -> TOMLValue {
        let start = mark
        while let byte = peek(), Self.isBareValueByte(byte) { pos += 1 }
        let token = Array(bytes[start.offset..<pos])
        let text = String(decoding: token, as: UTF8.self)
        switch text {
        case "true": return .boolean(true)
        case "false": return .boolean(false)
        case "inf", "+inf": return .float(.infinity)
        case "-inf": return .float(-.infinity)
        case "nan", "+nan", "-nan": return .float(.nan)
        default: break
        }
        let shown = text.count > 40 ? text.prefix(40) + "…" : text
        if Self.looksLikeDateOrTime(token) {
            throw error("dates and times are not supported (found \(shown)); quote the value as a string", at: start)
        }
        if let first = token.first, ASCII.isLetter(first) {
            if text.lowercased() == "true" || text.lowercased() == "false" {
                throw error("booleans are written in lowercase: \(text.lowercased())", at: start)
            }
            throw error("unquoted text \(shown) is not a value; strings must be quoted, e.g. \"\(shown)\"", at: start)
        }
        do throws(TOMLNumberParser.Failure) {
            return try TOMLNumberParser(token: token, text: shown).parse()
        } catch {
            throw self.error(error.message, at: start)
        }
    }

    /// Bytes of an unquoted value: letters, digits, `_ - + . :` (the last for times).
    private static func isBareValueByte(_ byte: UInt8) -> Bool {
        ASCII.isBareKey(byte) || byte == ASCII.plus || byte == ASCII.dot || byte == ASCII.colon
    }

    /// `1979-05-27…` or anything with a colon (`07:32:00`).
    private static func looksLikeDateOrTime(_ token: [UInt8]) -> Bool {
        if token.contains(ASCII.colon) { return true }
        return token.count >= 5 && token.prefix(4).allSatisfy(ASCII.isDigit) && token[4] == ASCII.minus
    }
}

/// Parses the text of an integer or float token; errors are plain messages that
/// the caller places at the token.
struct TOMLNumberParser {
    let token: [UInt8]
    /// The token as shown in messages (possibly shortened).
    let text: String

    struct Failure: Error {
        let message: String
    }

    func parse() throws(Failure) -> TOMLValue {
        let hasSign = token.first == ASCII.plus || token.first == ASCII.minus
        let digitsStart = hasSign ? 1 : 0
        if let radix = radixPrefix(at: digitsStart) {
            if hasSign {
                throw Failure(
                    message: "invalid number \(text): hexadecimal, octal and binary integers cannot have a sign")
            }
            return .integer(try parseRadixInteger(radix))
        }
        let isFloat = token.contains { $0 == ASCII.dot || $0 == 0x65 || $0 == 0x45 }  // . e E
        return isFloat ? .float(try parseFloat(from: digitsStart)) : .integer(try parseDecimal(from: digitsStart))
    }

    /// 16, 8 or 2 for `0x`, `0o`, `0b` at `index`.
    private func radixPrefix(at index: Int) -> Int? {
        guard index + 1 < token.count, token[index] == ASCII.zero else { return nil }
        switch token[index + 1] {
        case 0x78: return 16  // x
        case 0x6F: return 8  // o
        case 0x62: return 2  // b
        default: return nil
        }
    }

    private func parseRadixInteger(_ radix: Int) throws(Failure) -> Int64 {
        let isDigit: (UInt8) -> Bool
        let name: String
        switch radix {
        case 16: (isDigit, name) = (ASCII.isHexDigit, "hexadecimal")
        case 8: (isDigit, name) = (ASCII.isOctalDigit, "octal")
        default: (isDigit, name) = (ASCII.isBinaryDigit, "binary")
        }
        let (digits, end) = try digitGroup(
            from: 2, isDigit: isDigit, missing: "expected \(name) digits", kind: "\(name) integer")
        guard end == token.count else { throw invalid("\(name) integer") }
        var value: Int64 = 0
        for digit in digits {
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: Int64(radix))
            let (sum, overflow2) = shifted.addingReportingOverflow(Int64(TOMLParser.hexValue(digit)))
            guard !overflow1 && !overflow2 else { throw outOfRange() }
            value = sum
        }
        return value
    }

    private func parseDecimal(from start: Int) throws(Failure) -> Int64 {
        let (digits, end) = try digitGroup(from: start, isDigit: ASCII.isDigit, missing: "expected digits")
        guard end == token.count else { throw invalid() }
        try checkLeadingZero(digits)
        let negative = token.first == ASCII.minus
        var value: Int64 = 0
        for digit in digits {
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let amount = Int64(digit - ASCII.zero)
            let (sum, overflow2) =
                negative
                ? shifted.subtractingReportingOverflow(amount) : shifted.addingReportingOverflow(amount)
            guard !overflow1 && !overflow2 else { throw outOfRange() }
            value = sum
        }
        return value
    }

    /// `[+-] int [. digits] [e [+-] digits]`, underscores between digits.
    private func parseFloat(from start: Int) throws(Failure) -> Double {
        var normalized = token.first == ASCII.minus ? "-" : ""
        let (integerDigits, afterInteger) = try digitGroup(
            from: start, isDigit: ASCII.isDigit, missing: "expected digits")
        try checkLeadingZero(integerDigits)
        normalized += String(decoding: integerDigits, as: UTF8.self)
        var index = afterInteger
        if index < token.count && token[index] == ASCII.dot {
            let (fraction, end) = try digitGroup(
                from: index + 1, isDigit: ASCII.isDigit, missing: "a digit must follow the decimal point")
            normalized += "." + String(decoding: fraction, as: UTF8.self)
            index = end
        }
        if index < token.count && (token[index] | 0x20) == 0x65 {  // e E
            index += 1
            normalized += "e"
            if index < token.count && (token[index] == ASCII.plus || token[index] == ASCII.minus) {
                normalized += token[index] == ASCII.minus ? "-" : "+"
                index += 1
            }
            let (exponent, end) = try digitGroup(
                from: index, isDigit: ASCII.isDigit, missing: "the exponent needs digits")
            normalized += String(decoding: exponent, as: UTF8.self)
            index = end
        }
        guard index == token.count else { throw invalid() }
        guard let value = Double(normalized), value.isFinite else {
            throw Failure(message: "float \(text) is out of range (use inf for infinity)")
        }
        return value
    }

    /// `digit ( '_'? digit )*` from `start`: the digits without underscores, and the index after them.
    /// `missing` says what is wrong when there is no digit at `start`.
    private func digitGroup(
        from start: Int, isDigit: (UInt8) -> Bool, missing: String, kind: String = "number"
    ) throws(Failure) -> (digits: [UInt8], end: Int) {
        guard start < token.count, isDigit(token[start]) else {
            throw Failure(message: "invalid \(kind) \(text): \(missing)")
        }
        var digits: [UInt8] = []
        var index = start
        while index < token.count {
            let byte = token[index]
            if isDigit(byte) {
                digits.append(byte)
            } else if byte == ASCII.underscore {
                guard index + 1 < token.count, isDigit(token[index + 1]) else {
                    throw Failure(message: "invalid \(kind) \(text): an underscore must sit between two digits")
                }
            } else {
                break
            }
            index += 1
        }
        return (digits, index)
    }

    private func checkLeadingZero(_ digits: [UInt8]) throws(Failure) {
        if digits.count > 1 && digits.first == ASCII.zero {
            throw Failure(message: "invalid number \(text): leading zeros are not allowed")
        }
    }

    private func invalid(_ kind: String = "number") -> Failure {
        Failure(message: "invalid \(kind) \(text)")
    }

    private func outOfRange() -> Failure {
        Failure(message: "integer \(text) is out of range (-9223372036854775808 to 9223372036854775807)")
    }
}
