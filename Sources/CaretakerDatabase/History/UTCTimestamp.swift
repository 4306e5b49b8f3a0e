#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A date of the database clock as people read it in caretaker's output, always in UTC.
public enum UTCTimestamp {
    /// `2026-01-02T03:04:05Z`, or with `milliseconds` `2026-01-02T03:04:05.123Z` (cut, not rounded).
    public static func iso(_ date: Date, milliseconds: Bool = false) -> String {
        let (fields, millis) = parts(date)
        let base = "\(fields.date)T\(fields.time)"
        return milliseconds ? base + "." + pad(millis, 3) + "Z" : base + "Z"
    }

    /// `2026-01-02 03:04:05 UTC`, as alert mails write it.
    public static func readable(_ date: Date) -> String {
        let (fields, _) = parts(date)
        return "\(fields.date) \(fields.time) UTC"
    }

    private static func parts(_ date: Date) -> ((date: String, time: String), Int) {
        let totalMillis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(totalMillis >= 0 ? totalMillis / 1000 : (totalMillis - 999) / 1000)
        let millis = Int(totalMillis - Int64(seconds) * 1000)
        var broken = tm()
        gmtime_r(&seconds, &broken)
        let day =
            "\(pad(Int(broken.tm_year) + 1900, 4))-\(pad(Int(broken.tm_mon) + 1, 2))-\(pad(Int(broken.tm_mday), 2))"
        let time = "\(pad(Int(broken.tm_hour), 2)):\(pad(Int(broken.tm_min), 2)):\(pad(Int(broken.tm_sec), 2))"
        return ((day, time), millis)
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
