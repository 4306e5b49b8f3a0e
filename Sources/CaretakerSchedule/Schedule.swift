import CaretakerText

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// When a job is due: a 5-field cron expression, a macro such as `@daily`, or `@every 90s`.
///
/// A schedule is a set of *slots* (instants). Cron slots are whole minutes of the
/// wall clock in `timeZone`, with cronie's DST rule: a *fixed-time* job
/// (neither minute nor hour field starts with `*`) runs once per matching wall-clock
/// time — at the first instant after a spring-forward gap that swallowed it, at the
/// first occurrence of a repeated one; any other job has no slot in a gap and runs
/// at both occurrences of a repeated time. `@every D` slots are the multiples of D since the Unix epoch, the same on every
/// host whatever its time zone. See docs/scheduling.md.
public struct Schedule: Sendable, Equatable, CustomStringConvertible {
    /// The schedule as written, without surrounding whitespace.
    public let text: String
    /// The zone whose wall clock cron fields are read in (ignored by `@every`).
    public let timeZone: ZoneInfo
    let rule: Rule

    enum Rule: Hashable, Sendable {
        case cron(CronExpression)
        case every(milliseconds: Int64)
    }

    /// How far `nextDate` and `previousDate` look before deciding a cron expression
    /// never matches (`0 0 30 2 *`); 8 years covers the longest gap between
    /// leap days (2096 → 2104).
    static let searchYears = 8

    static let macroForms =
        "@hourly, @daily (or @midnight), @weekly, @monthly, @yearly (or @annually), or @every <duration> (e.g. \"@every 90s\")"

    private static let macros: [String: String] = [
        "@hourly": "0 * * * *",
        "@daily": "0 0 * * *",
        "@midnight": "0 0 * * *",
        "@weekly": "0 0 * * 0",
        "@monthly": "0 0 1 * *",
        "@yearly": "0 0 1 1 *",
        "@annually": "0 0 1 1 *",
    ]

    /// Parses a schedule: `"*/5 * * * *"`, `"0 3 * * 1-5"`, `"@hourly"`, `"@daily"`,
    /// `"@weekly"`, `"@monthly"`, `"@yearly"`, `"@every 90s"`, …
    ///
    /// Cron fields accept `*`, lists (`1,2`), ranges (`1-5`), steps (`*/15`, `10-50/10`,
    /// `5/15` = `5-59/15`), month names `jan`–`dec` and day names `sun`–`sat`
    /// (any case); day-of-week 0 and 7 are both Sunday. When both day-of-month and
    /// day-of-week are restricted (neither starts with `*`), a day matching either runs.
    /// - Throws: `ScheduleError` saying what is wrong and what was expected.
    public init(parsing text: String, timeZone: ZoneInfo) throws(ScheduleError) {
        let trimmed = text.trimmed()
        self.text = trimmed
        self.timeZone = timeZone
        do {
            rule = try Self.parseRule(trimmed)
        } catch {
            throw ScheduleError(message: "invalid schedule \"\(trimmed)\": \(error.message)")
        }
    }

    private static func parseRule(_ text: String) throws(ScheduleError) -> Rule {
        guard !text.isEmpty else {
            throw ScheduleError(message: "it is empty; expected 5 cron fields (e.g. \"*/5 * * * *\") or \(macroForms)")
        }
        guard text.hasPrefix("@") else {
            return .cron(try CronExpression(parsing: text))
        }
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        let macro = words[0].lowercased()
        if macro == "@every" {
            return try parseEvery(words.dropFirst().joined(separator: " "))
        }
        guard let expansion = macros[macro] else {
            throw ScheduleError(message: "unknown macro \(words[0]); expected 5 cron fields or \(macroForms)")
        }
        guard words.count == 1 else {
            throw ScheduleError(message: "\(words[0]) takes no argument")
        }
        return .cron(try CronExpression(parsing: expansion))
    }

    private static func parseEvery(_ argument: String) throws(ScheduleError) -> Rule {
        guard let interval = DurationText.parse(argument) else {
            throw ScheduleError(
                message: "\"\(argument)\" is not a duration; expected @every followed by e.g. 90s, 10m, 1h30m")
        }
        guard interval >= .seconds(1) else {
            throw ScheduleError(message: "@every needs an interval of at least 1s, got \(argument)")
        }
        let milliseconds = interval.microseconds / 1000
        guard Duration.milliseconds(milliseconds) == interval else {
            throw ScheduleError(message: "@every needs a whole number of milliseconds, got \(argument)")
        }
        return .every(milliseconds: milliseconds)
    }

    /// The schedule as written.
    public var description: String { text }

    /// For `@every` schedules, the interval; nil for cron schedules.
    public var fixedInterval: Duration? {
        if case .every(let milliseconds) = rule { return .milliseconds(milliseconds) }
        return nil
    }

    /// The first slot strictly after `date`, or nil when there is none within 8 years.
    public func nextDate(after date: Date) -> Date? {
        guard let microseconds = EpochTime.microseconds(of: date) else { return nil }
        switch rule {
        case .every(let interval):
            let now = EpochTime.floorDiv(microseconds, 1000)
            return EpochTime.date(milliseconds: (EpochTime.floorDiv(now, interval) + 1) * interval)
        case .cron(let cron):
            return nextCronSlot(cron, after: EpochTime.floorDiv(microseconds, 1_000_000)).map(EpochTime.date(seconds:))
        }
    }

    /// The latest slot at or before `date` (for catch-up: the most recent slot that
    /// was due), or nil when there is none within the previous 8 years.
    public func previousDate(atOrBefore date: Date) -> Date? {
        guard let microseconds = EpochTime.microseconds(of: date) else { return nil }
        switch rule {
        case .every(let interval):
            let now = EpochTime.floorDiv(microseconds, 1000)
            return EpochTime.date(milliseconds: EpochTime.floorDiv(now, interval) * interval)
        case .cron(let cron):
            return previousCronSlot(cron, atOrBefore: EpochTime.floorDiv(microseconds, 1_000_000))
                .map(EpochTime.date(seconds:))
        }
    }

    /// The nominal period, for defaults such as `stale_after` = 3 periods.
    ///
    /// For `@every`, the interval. For cron, the gap between the first two slots after
    /// `date` (so it can be 23 or 25 hours for a daily job across a DST change);
    /// for a cron expression that never fires, 8 years.
    public func period(after date: Date) -> Duration {
        if let fixedInterval { return fixedInterval }
        guard let first = nextDate(after: date), let second = nextDate(after: first) else {
            return .seconds(Self.searchYears * 366 * 86_400)
        }
        return .seconds(Int64(second.timeIntervalSince(first).rounded()))
    }

    // Each matching wall-clock minute gives zero, one or two instants (see
    // `ZoneClock.slots(showing:fixedTime:)`). Those instants rise with the wall clock
    // except within a few hours of a DST change, so the search walks matching wall
    // minutes from a little before `now` and stops once no later wall minute can
    // give an instant that beats the best one found.

    private func nextCronSlot(_ cron: CronExpression, after now: Int64) -> Int64? {
        let clock = ZoneClock(timeZone: timeZone)
        // A fall-back within the next day shows earlier wall times again: start from the smaller reading.
        var start = LocalMinute(wallSeconds: now + clock.smallestOffset(around: now, daysBefore: 0))
        let lastYear = start.year + Self.searchYears
        var best: Int64?
        while let wall = cron.firstMatch(atOrAfter: start, throughYear: lastYear) {
            if let best, wall.wallSeconds - clock.largestOffset(around: best) > best { break }
            for slot in clock.slots(showing: wall.wallSeconds, fixedTime: cron.isFixedTime) where slot > now {
                best = min(best ?? slot, slot)
            }
            start = wall.adding(minutes: 1)
        }
        return best
    }

    private func previousCronSlot(_ cron: CronExpression, atOrBefore now: Int64) -> Int64? {
        let clock = ZoneClock(timeZone: timeZone)
        // In the hours after a fall-back, wall times later than the current one were
        // already shown: start from the larger reading of the past day.
        var start = LocalMinute(wallSeconds: now + clock.largestOffset(around: now, daysAfter: 0))
        let firstYear = start.year - Self.searchYears
        var best: Int64?
        while let wall = cron.lastMatch(atOrBefore: start, downToYear: firstYear) {
            if let best, wall.wallSeconds - clock.smallestOffset(around: best) < best { break }
            for slot in clock.slots(showing: wall.wallSeconds, fixedTime: cron.isFixedTime) where slot <= now {
                best = max(best ?? slot, slot)
            }
            start = wall.adding(minutes: -1)
        }
        return best
    }
}

/// Why a schedule could not be parsed; `message` is meant for the operator.
public struct ScheduleError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong and what is expected, e.g. `invalid schedule "75 * * * *": minute field: 75 is out of range; expected 0-59`.
    public let message: String

    public init(message: String) {
        self.message = message
    }

    public var description: String { message }
}
