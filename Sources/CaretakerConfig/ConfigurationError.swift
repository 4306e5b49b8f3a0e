/// A problem in `jobs.toml`: names the file, the line and the key (exit 78).
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let file: String
    /// 1-based; 0 when the problem is not on one line (a missing file, a missing key).
    public let line: Int
    /// Dotted path of the key, e.g. `jobs.NAME.schedule`; empty for the whole file.
    public let key: String
    public let message: String

    public init(file: String, line: Int, key: String, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    /// `file:line: key: message` on one line: control characters that a quoted key or
    /// value brought in (a `"\n"` escape, U+2028, …) are shown as escapes, so the
    /// message stays one line in a terminal and one entry in the journal.
    public var description: String {
        let place = line > 0 ? "\(file):\(line)" : file
        let text = key.isEmpty ? "\(place): \(message)" : "\(place): \(key): \(message)"
        return Self.escapingControlCharacters(text)
    }

    /// `\n`, `\r`, `\t`, and `\uXXXX` for other C0/C1 controls, DEL and the Unicode line separators.
    static func escapingControlCharacters(_ text: String) -> String {
        let isControl: (Unicode.Scalar) -> Bool = {
            $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{2028}" || $0 == "\u{2029}"
        }
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var escaped = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": escaped.append(contentsOf: "\\n".unicodeScalars)
            case "\r": escaped.append(contentsOf: "\\r".unicodeScalars)
            case "\t": escaped.append(contentsOf: "\\t".unicodeScalars)
            case _ where isControl(scalar):
                let hex = String(scalar.value, radix: 16, uppercase: true)
                escaped.append(
                    contentsOf: ("\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex).unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }
}
