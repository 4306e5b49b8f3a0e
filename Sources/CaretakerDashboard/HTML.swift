#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Escaping and formatting for the pages. Every text that reaches a page goes
/// through `escape`: job names, errors and hosts come from the database and the configuration.
public enum HTML {
    /// `text` safe inside an element or a quoted attribute value.
    public static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    /// `text` as one path segment or query value of a URL (RFC 3986 unreserved characters kept).
    public static func urlComponent(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            let scalar = Unicode.Scalar(byte)
            let unreserved =
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || "-._~".unicodeScalars.contains(scalar)
            if unreserved {
                result.unicodeScalars.append(scalar)
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                result += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return result
    }

    /// `2026-11-25 14:03:12Z` (UTC, to the second).
    public static func time(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(year)-\(two(month))-\(two(day)) \(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))Z"
    }

    /// `HH:MM` of a UTC time (axis labels).
    static func clock(_ date: Date) -> String { String(time(date).dropFirst(11).prefix(5)) }

    /// `MM-DD` of a UTC date (axis labels over a week).
    static func day(_ date: Date) -> String { String(time(date).dropFirst(5).prefix(5)) }

    /// `87 ms`, `4.2 s`, `3 min 5 s`, `2 h 10 min`.
    public static func duration(_ seconds: Double) -> String {
        if seconds < 1 { return "\(Int((seconds * 1000).rounded())) ms" }
        if seconds < 60 { return "\((seconds * 10).rounded() / 10) s" }
        let whole = Int(seconds.rounded())
        if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
        if whole < 86_400 { return "\(whole / 3600) h \(whole / 60 % 60) min" }
        return "\(whole / 86_400) d \(whole / 3600 % 24) h"
    }

    /// `5 min ago`, `in 40 s` relative to the database clock `now`.
    public static func relative(_ date: Date, now: Date) -> String {
        let delta = date.timeIntervalSince(now)
        let text = duration(abs(delta) < 1 ? abs(delta) : abs(delta).rounded())
        return delta <= 0 ? "\(text) ago" : "in \(text)"
    }

    /// The page around `body`: inline CSS, no scripts, no outside assets.
    public static func page(title: String, now: Date, body: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title)) · caretaker</title>
        <style>\(stylesheet)</style>
        </head>
        <body>
        <header><a class="home" href="/">caretaker</a> <span class="muted">read-only dashboard · database clock \(escape(time(now)))</span></header>
        <main>
        \(body)
        </main>
        </body>
        </html>

        """
    }

    static let stylesheet = """
        body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
        header{background:#1d2330;color:#fff;padding:10px 20px}header a{color:#fff;font-weight:600;text-decoration:none}
        main{padding:12px 20px;max-width:1280px}h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:18px 0 6px}
        table{border-collapse:collapse;background:#fff;width:100%}th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #e3e6eb;vertical-align:top}
        th{background:#eef0f4;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
        .muted{color:#6b7280}header .muted{color:#b6bcc8;margin-left:10px}code,pre{font:12px ui-monospace,monospace}
        pre{white-space:pre-wrap;background:#fff;border:1px solid #e3e6eb;padding:8px;margin:0}
        .badge{display:inline-block;padding:1px 7px;border-radius:9px;color:#fff;font-size:12px;font-weight:600}
        .s-succeeded{background:#2e9d4f;fill:#2e9d4f}.s-failed{background:#d1362f;fill:#d1362f}.s-interrupted{background:#e08a00;fill:#e08a00}
        .s-skipped{background:#8a8f98;fill:#8a8f98}.s-running{background:#2f6fd6;fill:#2f6fd6}
        .healthy{background:#2e9d4f}.unhealthy{background:#d1362f}.disabled{background:#8a8f98}
        .panel{background:#fff;border:1px solid #e3e6eb;padding:8px;margin-bottom:10px;overflow-x:auto}
        .charts{display:flex;flex-wrap:wrap;gap:10px}.chart{background:#fff;border:1px solid #e3e6eb;padding:6px 8px}
        .chart h3{font-size:13px;margin:0 0 4px}nav.window a,nav.pages a{margin-right:10px}
        nav.window .current{font-weight:700;margin-right:10px}.legend span{margin-right:12px}
        form.filters{margin:8px 0}form.filters label{margin-right:12px}dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;background:#fff;padding:10px;border:1px solid #e3e6eb}
        dt{font-weight:600}dd{margin:0}
        """
}
