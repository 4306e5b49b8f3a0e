/// Keeps values out of what the server says about an error.
enum ServerText {
    /// The longest statement label, in characters.
    static let labelLength = 80

    /// A DETAIL with the row values dropped and the column names kept:
    /// `Failing row contains (…).`, `Key (email)=(…) already exists.`,
    /// `Key (post_id)=(…) is not present in table "posts".`. Any other line keeps
    /// its words with its double-quoted parts hidden (`Token "…" is invalid.`).
    static func detailWithoutValues(_ detail: String) -> String {
        detail.split(separator: "\n", omittingEmptySubsequences: true).map { line in
            if line.hasPrefix("Failing row contains") { return "Failing row contains (…)." }
            if let key = keyWithoutValues(line) { return key }
            return hidingQuotedText(String(line))
        }.joined(separator: " ")
    }

    /// `Key (cols)=(values) …` with the values dropped; nil for any other line.
    private static func keyWithoutValues(_ line: Substring) -> String? {
        guard line.hasPrefix("Key ("), let equals = line.firstRange(of: ")=(") else { return nil }
        let columns = line[line.index(line.startIndex, offsetBy: 5)..<equals.lowerBound]
        let key = "Key (\(columns))=(…)"
        let rest = line[equals.upperBound...]
        // The server's own words come after the values, so look for them from the end.
        for ending in [") already exists.", ") is duplicated."] where rest.hasSuffix(ending) {
            return key + ending.dropFirst()
        }
        for marker in [") is not present in table ", ") is still referenced from table "] {
            if let found = rest.ranges(of: marker).last {
                return key + rest[found.lowerBound...].dropFirst()
            }
        }
        for marker in [") conflicts with existing key (", ") conflicts with key ("] where rest.contains(marker) {
            // An exclusion constraint: the other key has the same columns.
            return key + marker.dropFirst() + "\(columns))=(…)."
        }
        return key
    }

    /// `text` with each double-quoted part replaced by `"…"` (or `"\(replacement)"`);
    /// an unclosed quote hides the rest.
    static func hidingQuotedText(_ text: String, with replacement: String = "…") -> String {
        var result = ""
        var inQuote = false
        for character in text {
            if character == "\"" {
                result.append(inQuote ? replacement + "\"" : "\"")
                inQuote.toggle()
            } else if !inQuote {
                result.append(character)
            }
        }
        return inQuote ? result + replacement : result
    }

    /// The first line of `sql` with its whitespace collapsed, cut before the first
    /// string literal (`'…'`, `E'…'`, `$$…$$`) and after `labelLength` characters;
    /// nil for a statement without words.
    static func statementLabel(_ sql: String) -> String? {
        guard let line = sql.split(whereSeparator: \.isNewline).first(where: { !$0.allSatisfy(\.isWhitespace) }) else {
            return nil
        }
        var label = line.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        var cut = false
        if let quote = label.firstIndex(of: "'") {
            label = String(label[..<quote])
            cut = true
        }
        if let dollar = label.firstRange(of: /\$[A-Za-z_]*\$/) {
            label = String(label[..<dollar.lowerBound])
            cut = true
        }
        if label.count > labelLength {
            label = String(label.prefix(labelLength))
            cut = true
        }
        label = String(label.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        return cut ? label + " …" : label
    }
}
