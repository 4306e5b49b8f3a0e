/// Byte rates as written in `jobs.toml`: `"512kB/s"`, `"64MB/s"`, `"1GB/s"`.
///
/// Grammar: digits, a unit (`B`, `kB`, `MB`, `GB`, 1024-based and spelled as in
/// `postgresql.conf`) and `/s`. No spaces, fractions or signs: a typo must fail loudly.
public enum ByteRateText {
    private static let units: [(symbol: String, bytes: Int64)] = [
        ("B", 1), ("kB", 1 << 10), ("MB", 1 << 20), ("GB", 1 << 30),
    ]

    /// Bytes per second, or nil when `text` is not a rate or is too large.
    public static func parse(_ text: String) -> Int64? {
        guard text.hasSuffix("/s") else { return nil }
        let amount = text.dropLast(2)
        let digits = amount.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let number = Int64(digits),
            let unit = units.first(where: { $0.symbol == amount.dropFirst(digits.count) })
        else { return nil }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: unit.bytes)
        return overflow ? nil : bytes
    }

    /// `67108864` → `"64MB/s"`: the largest unit that represents the rate exactly.
    public static func format(_ bytesPerSecond: Int64) -> String {
        let unit = units.last { bytesPerSecond % $0.bytes == 0 && bytesPerSecond >= $0.bytes } ?? units[0]
        return "\(bytesPerSecond / unit.bytes)\(unit.symbol)/s"
    }
}
