import CaretakerCore

/// A schedule in words for the overview ("every 5 minutes", "daily at 03:30").
///
/// Covers the forms operators write most; anything else reads "cron …" with the
/// expression, which the page also shows as written.
public enum ScheduleWords {
    public static func describe(_ schedule: Schedule) -> String {
        if let interval = schedule.fixedInterval {
            let text = DurationText.format(interval)
            return text == "1m" ? "every minute" : text == "1h" ? "every hour" : "every \(spelled(text))"
        }
        let macros = [
            "@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
            "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
        ]
        let expression = macros[schedule.text.lowercased()] ?? schedule.text
        let fields = expression.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count == 5 else { return "cron \(schedule.text)" }
        let (minute, hour, day, month, weekday) = (fields[0], fields[1], fields[2], fields[3], fields[4])
        let everyDay = day == "*" && month == "*" && weekday == "*"
        if everyDay, hour == "*" {
            if minute == "*" { return "every minute" }
            if minute.hasPrefix("*/"), let step = Int(minute.dropFirst(2)) {
                return step == 1 ? "every minute" : "every \(step) minutes"
            }
            if let at = Int(minute) { return "every hour at :\(twoDigits(at))" }
        }
        if let at = Int(minute), hour.hasPrefix("*/"), let step = Int(hour.dropFirst(2)), everyDay {
            return "every \(step) hours at :\(twoDigits(at))"
        }
        guard let atMinute = Int(minute), let atHour = Int(hour) else { return "cron \(schedule.text)" }
        let time = "\(twoDigits(atHour)):\(twoDigits(atMinute))"
        if everyDay { return "daily at \(time)" }
        if day == "*", month == "*", let named = weekdays(weekday) { return "\(named) at \(time)" }
        if let date = Int(day), month == "*", weekday == "*" { return "monthly on day \(date) at \(time)" }
        return "cron \(schedule.text)"
    }

    private static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// `"90s"` → `"90 seconds"`, `"10m"` → `"10 minutes"`; other forms as written.
    private static func spelled(_ duration: String) -> String {
        let units = [("ms", "milliseconds"), ("s", "seconds"), ("m", "minutes"), ("h", "hours"), ("d", "days")]
        for (suffix, word) in units where duration.hasSuffix(suffix) {
            let number = duration.dropLast(suffix.count)
            if Int(number) != nil { return "\(number) \(word)" }
        }
        return duration
    }

    /// `0` → "Sundays", `1-5` → "Mondays to Fridays", `1,3` → "Mondays, Wednesdays".
    private static func weekdays(_ field: String) -> String? {
        let names = ["Sundays", "Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays", "Sundays"]
        func name(_ text: Substring) -> String? { Int(text).flatMap { (0...7).contains($0) ? names[$0] : nil } }
        let parts = field.split(separator: ",")
        var words: [String] = []
        for part in parts {
            let ends = part.split(separator: "-")
            if ends.count == 2, let from = name(ends[0]), let to = name(ends[1]) {
                words.append("\(from) to \(to)")
            } else if let single = name(part) {
                words.append(single)
            } else {
                return nil
            }
        }
        return words.joined(separator: ", ")
    }
}
