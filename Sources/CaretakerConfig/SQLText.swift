import CaretakerText

/// Light checks of an operator's SQL before it ever reaches the server.
enum SQLText {
    struct Problem: Error {
        let key: String
        let message: String
    }

    /// One statement (a trailing `;` is fine); with `mustChangeRows`, a statement
    /// that reports affected rows (DELETE, UPDATE, INSERT, MERGE, or WITH … one of them).
    static func check(_ sql: String, mustChangeRows: Bool) -> Result<Void, Problem> {
        let code = stripped(sql)
        let trimmed = code.trimmed()
        guard !trimmed.isEmpty else { return .failure(Problem(key: "sql", message: "is empty")) }
        let body = trimmed.hasSuffix(";") ? String(trimmed.dropLast()) : trimmed
        if body.contains(";") {
            return .failure(Problem(key: "sql", message: "must be a single statement (found more than one ';')"))
        }
        let firstWord = body.prefix { $0.isLetter }.uppercased()
        if mustChangeRows, !["DELETE", "UPDATE", "INSERT", "MERGE", "WITH"].contains(firstWord) {
            return .failure(
                Problem(
                    key: "repeat_until_zero",
                    message:
                        "needs a statement that changes rows (DELETE, UPDATE, INSERT or MERGE), not \(firstWord.isEmpty ? "this" : firstWord)"
                ))
        }
        if mustChangeRows, firstWord == "WITH", !containsWord(["DELETE", "UPDATE", "INSERT", "MERGE"], in: body) {
            return .failure(Problem(key: "repeat_until_zero", message: "needs a statement that changes rows"))
        }
        return .success(())
    }

    /// True when one of `words` stands as a whole word (not inside `updated_at`).
    static func containsWord(_ words: Set<String>, in sql: String) -> Bool {
        sql.uppercased()
            .split { !($0.isLetter || $0.isNumber || $0 == "_") }
            .contains { words.contains(String($0)) }
    }

    /// The SQL with string literals, quoted identifiers, dollar-quoted bodies and
    /// comments blanked out, so `;` inside them does not count.
    static func stripped(_ sql: String) -> String {
        var output = ""
        var characters = sql[...]
        while let next = characters.first {
            if characters.hasPrefix("--") {
                characters = characters.drop { $0 != "\n" }
            } else if characters.hasPrefix("/*") {
                characters = dropPast(characters.dropFirst(2), terminator: "*/")
            } else if next == "'" || next == "\"" {
                characters = dropPast(characters.dropFirst(), terminator: String(next))
                output += " "
            } else if next == "$", let tag = dollarTag(characters) {
                characters = dropPast(characters.dropFirst(tag.count), terminator: tag)
                output += " "
            } else {
                output.append(next)
                characters = characters.dropFirst()
            }
        }
        return output
    }

    private static func dropPast(_ text: Substring, terminator: String) -> Substring {
        guard let range = text.firstRange(of: terminator) else { return "" }
        return text[range.upperBound...]
    }

    /// `$$` or `$tag$` at the start of `text`.
    private static func dollarTag(_ text: Substring) -> String? {
        let inner = text.dropFirst().prefix { $0.isLetter || $0.isNumber || $0 == "_" }
        let afterTag = text.dropFirst(1 + inner.count)
        guard afterTag.first == "$", inner.first?.isNumber != true else { return nil }
        return "$" + inner + "$"
    }
}
