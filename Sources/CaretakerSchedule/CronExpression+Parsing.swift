extension CronExpression {
    /// Parses the five whitespace-separated fields of a crontab line.
    init(parsing text: String) throws(ScheduleError) {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count == 5 else {
            throw ScheduleError(
                message: "it has \(fields.count) field\(fields.count == 1 ? "" : "s"); expected 5 cron fields "
                    + "(minute hour day-of-month month day-of-week, e.g. \"0 3 * * *\") or "
                    + Schedule.macroForms)
        }
        minutes = try CronField.minute.parse(fields[0])
        hours = try CronField.hour.parse(fields[1])
        daysOfMonth = try CronField.dayOfMonth.parse(fields[2])
        months = try CronField.month.parse(fields[3])
        daysOfWeek = try CronField.dayOfWeek.parse(fields[4])
        daysMatchEither = !fields[2].hasPrefix("*") && !fields[4].hasPrefix("*")
        isFixedTime = !fields[0].hasPrefix("*") && !fields[1].hasPrefix("*")
    }
}

/// One of the five crontab fields: its name, allowed values and value names.
enum CronField: CaseIterable, Sendable {
    case minute, hour, dayOfMonth, month, dayOfWeek

    var name: String {
        switch self {
        case .minute: "minute"
        case .hour: "hour"
        case .dayOfMonth: "day-of-month"
        case .month: "month"
        case .dayOfWeek: "day-of-week"
        }
    }

    var bounds: ClosedRange<Int> {
        switch self {
        case .minute: 0...59
        case .hour: 0...23
        case .dayOfMonth: 1...31
        case .month: 1...12
        case .dayOfWeek: 0...7
        }
    }

    /// Where `*` and `N/STEP` end. Day-of-week stops at 6 so Sunday is not counted twice.
    private var openRange: ClosedRange<Int> {
        self == .dayOfWeek ? 0...6 : bounds
    }

    private var valueNames: [String] {
        switch self {
        case .month: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        case .dayOfWeek: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
        default: []
        }
    }

    private var expected: String {
        switch self {
        case .month: "\(bounds.lowerBound)-\(bounds.upperBound) or jan-dec"
        case .dayOfWeek: "0-7 (0 and 7 are Sunday) or sun-sat"
        default: "\(bounds.lowerBound)-\(bounds.upperBound)"
        }
    }

    /// Parses a comma-separated list of `*`, `N`, `A-B`, each optionally followed by `/STEP`.
    func parse(_ text: String) throws(ScheduleError) -> CronValueSet {
        var set = CronValueSet()
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            for value in try parseItem(String(item), in: text) {
                // Sunday may be written 0 or 7; store one bit for it.
                set.insert(self == .dayOfWeek && value == 7 ? 0 : value)
            }
        }
        return set
    }

    private func parseItem(_ item: String, in field: String) throws(ScheduleError) -> StrideThrough<Int> {
        guard !item.isEmpty else {
            throw error("\"\(field)\" has an empty list item")
        }
        let parts = item.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2 else {
            throw error("\"\(item)\" has more than one \"/\"")
        }
        var range = try parseRange(String(parts[0]))
        var step = 1
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), parts[1].allSatisfy(\.isASCIIDigit), parsed >= 1 else {
                throw error("step \"\(parts[1])\" in \"\(item)\" is not a whole number of at least 1")
            }
            step = parsed
            // "5/15" means "from 5, every 15": 5-59/15.
            if !parts[0].contains("-") && parts[0] != "*" {
                range = range.lowerBound...max(range.lowerBound, openRange.upperBound)
            }
        }
        return stride(from: range.lowerBound, through: range.upperBound, by: step)
    }

    private func parseRange(_ text: String) throws(ScheduleError) -> ClosedRange<Int> {
        if text == "*" { return openRange }
        let ends = text.split(separator: "-", omittingEmptySubsequences: false)
        guard ends.count <= 2 else {
            throw error("\"\(text)\" is not a value or a range")
        }
        let low = try parseValue(String(ends[0]))
        guard ends.count == 2 else { return low...low }
        var high = try parseValue(String(ends[1]))
        // "sat-sun" and "fri-sun" read naturally; Sunday at the end of a range is 7.
        if self == .dayOfWeek && high == 0 && ends[1].lowercased() == "sun" && low > 0 {
            high = 7
        }
        guard low <= high else {
            throw error("range \"\(text)\" runs backwards; write the smaller value first")
        }
        return low...high
    }

    private func parseValue(_ text: String) throws(ScheduleError) -> Int {
        if let index = valueNames.firstIndex(of: text.lowercased()) {
            return self == .month ? index + 1 : index
        }
        guard !text.isEmpty, text.count <= 4, text.allSatisfy(\.isASCIIDigit), let value = Int(text) else {
            throw error("\"\(text)\" is not a valid value; expected \(expected)")
        }
        guard bounds.contains(value) else {
            throw error("\(value) is out of range; expected \(expected)")
        }
        return value
    }

    private func error(_ detail: String) -> ScheduleError {
        ScheduleError(message: "\(name) field: \(detail)")
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
