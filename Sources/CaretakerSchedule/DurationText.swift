/// Durations as written in `jobs.toml`: `"500ms"`, `"90s"`, `"10m"`, `"24h"`, `"30d"`.
///
/// Grammar: `"0"`, or one or more `NUMBER UNIT` parts with units in decreasing order
/// (`"1h30m"`), where NUMBER is digits with an optional decimal fraction (`"1.5h"`)
/// and UNIT is `d`, `h`, `m`, `s` or `ms` (lower case; `m` is minutes).
/// No signs, spaces or bare numbers other than `"0"`: a typo must fail loudly.
/// Values are exact to the nanosecond and at most about 292 years.
public enum DurationText {
    private struct Unit {
        let symbol: String
        let nanoseconds: Int128
    }

    // Largest first: `parse` relies on the order to reject "30m1h", `format` to find the largest exact unit.
    private static let units = [
        Unit(symbol: "d", nanoseconds: 86_400_000_000_000),
        Unit(symbol: "h", nanoseconds: 3_600_000_000_000),
        Unit(symbol: "m", nanoseconds: 60_000_000_000),
        Unit(symbol: "s", nanoseconds: 1_000_000_000),
        Unit(symbol: "ms", nanoseconds: 1_000_000),
    ]

    /// Parses a configuration duration such as `"90s"` or `"1h30m"`.
    ///
    /// Returns nil when the text is not a valid duration, is negative, or is too large.
    public static func parse(_ text: String) -> Duration? {
        if text == "0" { return .zero }
        var scanner = Scanner(text)
        var total: Int128 = 0
        var previousUnit = -1
        repeat {
            guard let (whole, fraction) = scanner.number(),
                let unitIndex = scanner.unit(),
                unitIndex > previousUnit,
                let part = nanoseconds(whole: whole, fraction: fraction, unit: units[unitIndex])
            else { return nil }
            previousUnit = unitIndex
            total += part
            guard total <= Int128(Int64.max) else { return nil }
        } while !scanner.isAtEnd
        return .nanoseconds(Int64(total))
    }

    /// Formats a duration in the largest unit that represents it exactly.
    ///
    /// `.seconds(90)` → `"90s"`, `.seconds(600)` → `"10m"`, `.milliseconds(1500)` → `"1500ms"`,
    /// `.zero` → `"0s"`. Sub-millisecond values use a decimal fraction of `ms`
    /// (`"0.25ms"`); anything below a nanosecond is dropped. The result parses
    /// back to the same value (except for negative durations, which `parse` rejects).
    public static func format(_ duration: Duration) -> String {
        let nanoseconds = duration.totalNanoseconds
        if nanoseconds == 0 { return "0s" }
        let sign = nanoseconds < 0 ? "-" : ""
        let magnitude = nanoseconds.magnitude
        for unit in units where magnitude % UInt128(unit.nanoseconds) == 0 {
            return "\(sign)\(magnitude / UInt128(unit.nanoseconds))\(unit.symbol)"
        }
        var fraction = String(magnitude % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(sign)\(magnitude / 1_000_000).\(fraction)ms"
    }

    /// `whole.fraction × unit` in nanoseconds, or nil when not a whole number of nanoseconds.
    private static func nanoseconds(whole: Int128, fraction: Substring, unit: Unit) -> Int128? {
        var digits = fraction
        while digits.hasSuffix("0") { digits.removeLast() }
        // 10^38 would overflow Int128; a fraction that long is never exact anyway.
        guard digits.count <= 18, let numerator = Int128(digits.isEmpty ? "0" : String(digits)) else { return nil }
        let denominator = (0..<digits.count).reduce(Int128(1)) { product, _ in product * 10 }
        let scaled = numerator * unit.nanoseconds
        guard scaled % denominator == 0 else { return nil }
        return whole * unit.nanoseconds + scaled / denominator
    }

    /// Reads `NUMBER UNIT` parts left to right.
    private struct Scanner {
        private let text: Substring
        private var position: Substring.Index

        init(_ text: String) {
            self.text = Substring(text)
            position = self.text.startIndex
        }

        var isAtEnd: Bool { position == text.endIndex }

        /// Digits, optionally followed by `.` and more digits. The whole part is capped
        /// so that it cannot overflow; the caller's range check rejects it anyway.
        mutating func number() -> (whole: Int128, fraction: Substring)? {
            let wholeDigits = digits()
            guard !wholeDigits.isEmpty, wholeDigits.count <= 20, let whole = Int128(String(wholeDigits)) else {
                return nil
            }
            guard position < text.endIndex, text[position] == "." else { return (whole, "") }
            position = text.index(after: position)
            let fraction = digits()
            return fraction.isEmpty ? nil : (whole, fraction)
        }

        /// The index into `units` of the unit at the current position.
        mutating func unit() -> Int? {
            let start = position
            while position < text.endIndex, text[position].isLetter { position = text.index(after: position) }
            let symbol = text[start..<position]
            return units.firstIndex { $0.symbol == symbol }
        }

        private mutating func digits() -> Substring {
            let start = position
            while position < text.endIndex, text[position].isASCII, text[position].isNumber {
                position = text.index(after: position)
            }
            return text[start..<position]
        }
    }
}

extension Duration {
    /// Whole microseconds, truncated towards zero and clamped to `Int64`'s range.
    ///
    /// For passing to SQL as `$1::bigint * interval '1 microsecond'`.
    public var microseconds: Int64 {
        let value = totalNanoseconds / 1000
        return Int64(clamping: value)
    }

    /// The duration in seconds, fraction included (for logs, metrics and sleeps).
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Whole nanoseconds, truncated towards zero.
    fileprivate var totalNanoseconds: Int128 {
        let (seconds, attoseconds) = components
        return Int128(seconds) * 1_000_000_000 + Int128(attoseconds / 1_000_000_000)
    }
}
