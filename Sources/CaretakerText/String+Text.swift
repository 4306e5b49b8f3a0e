// Text helpers that full Foundation provides but FoundationEssentials does not
// (`trimmingCharacters(in:)`, `String(format: "%04x")`), built on the standard library.
// For `replacingOccurrences(of:with:)` and `range(of:)` use the standard library's
// `replacing(_:with:)` and `firstRange(of:)`.

extension StringProtocol {
    /// The text without leading and trailing characters for which `isTrimmed` is true,
    /// by default whitespace and newlines (as `trimmingCharacters(in: .whitespacesAndNewlines)`).
    public func trimmed(where isTrimmed: (Character) -> Bool = { $0.isWhitespace }) -> String {
        guard let first = firstIndex(where: { !isTrimmed($0) }),
            let last = lastIndex(where: { !isTrimmed($0) })
        else { return "" }
        return String(self[first...last])
    }

    /// The text preceded by enough `pad` characters to be `length` characters long
    /// (unchanged when it already is): `"7".leftPadded(to: 3, with: "0")` is `"007"`.
    public func leftPadded(to length: Int, with pad: Character) -> String {
        String(repeating: pad, count: Swift.max(0, length - count)) + self
    }

    /// The text followed by enough spaces to be `length` characters long
    /// (unchanged when it already is), for aligned columns.
    public func rightPadded(to length: Int) -> String {
        self + String(repeating: " ", count: Swift.max(0, length - count))
    }
}

extension BinaryInteger {
    /// Lowercase hexadecimal digits, zero-padded to `width`: `0x1f` → `"001f"` for width 4.
    public func hexDigits(width: Int) -> String {
        String(self, radix: 16).leftPadded(to: width, with: "0")
    }
}
