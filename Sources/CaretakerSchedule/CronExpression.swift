/// A parsed 5-field cron expression, matched against wall-clock minutes.
///
/// Knows nothing about time zones: `Schedule` maps the wall-clock minutes it
/// finds to instants.
struct CronExpression: Hashable, Sendable {
    var minutes: CronValueSet
    var hours: CronValueSet
    var daysOfMonth: CronValueSet
    var months: CronValueSet
    /// 0 = Sunday … 6 = Saturday (a 7 in the text is stored as 0).
    var daysOfWeek: CronValueSet
    /// Vixie cron's rule: when either day field starts with `*`, a day must match
    /// both fields; when both are restricted, it must match either.
    var daysMatchEither: Bool
    /// cronie's *fixed-time* job: neither the minute nor the hour field starts with `*`.
    /// Across DST such a job runs once per matching wall-clock time (a time in a
    /// spring-forward gap at the first instant after it, a repeated one at its first
    /// occurrence); any other job runs whenever the wall clock shows a matching minute.
    var isFixedTime: Bool

    func matches(_ date: CivilDate) -> Bool {
        let dayOfMonth = daysOfMonth.contains(date.day)
        let dayOfWeek = daysOfWeek.contains(date.weekday)
        return daysMatchEither ? (dayOfMonth || dayOfWeek) : (dayOfMonth && dayOfWeek)
    }

    func matches(_ minute: LocalMinute) -> Bool {
        months.contains(minute.month)
            && matches(CivilDate(year: minute.year, month: minute.month, day: minute.day))
            && hours.contains(minute.hour)
            && minutes.contains(minute.minute)
    }

    /// The first matching wall-clock minute at or after `start`, looking no further than the end of `lastYear`.
    ///
    /// Skips whole months, days and hours that cannot match, so a year costs at most
    /// a few hundred steps.
    func firstMatch(atOrAfter start: LocalMinute, throughYear lastYear: Int) -> LocalMinute? {
        var t = start
        while t.year <= lastYear {
            guard let month = months.next(atOrAfter: t.month) else {
                t = LocalMinute(year: t.year + 1, month: 1, day: 1, hour: 0, minute: 0)
                continue
            }
            if month != t.month {
                t = LocalMinute(year: t.year, month: month, day: 1, hour: 0, minute: 0)
            }
            guard let day = firstMatchingDay(atOrAfter: t.day, year: t.year, month: t.month) else {
                t =
                    t.month == 12
                    ? LocalMinute(year: t.year + 1, month: 1, day: 1, hour: 0, minute: 0)
                    : LocalMinute(year: t.year, month: t.month + 1, day: 1, hour: 0, minute: 0)
                continue
            }
            if day != t.day {
                t = LocalMinute(year: t.year, month: t.month, day: day, hour: 0, minute: 0)
            }
            guard let hour = hours.next(atOrAfter: t.hour) else {
                // Day 32 and the like are caught by `firstMatchingDay` on the next pass.
                t = LocalMinute(year: t.year, month: t.month, day: t.day + 1, hour: 0, minute: 0)
                continue
            }
            if hour != t.hour {
                t.hour = hour
                t.minute = 0
            }
            guard let minute = minutes.next(atOrAfter: t.minute) else {
                t.hour += 1
                t.minute = 0
                continue
            }
            t.minute = minute
            return t
        }
        return nil
    }

    /// The last matching wall-clock minute at or before `start`, looking no further back than the start of `firstYear`.
    func lastMatch(atOrBefore start: LocalMinute, downToYear firstYear: Int) -> LocalMinute? {
        var t = start
        while t.year >= firstYear {
            guard let month = months.previous(atOrBefore: t.month) else {
                t = LocalMinute(year: t.year - 1, month: 12, day: 31, hour: 23, minute: 59)
                continue
            }
            if month != t.month {
                t = LocalMinute(year: t.year, month: month, day: 31, hour: 23, minute: 59)
            }
            t.day = min(t.day, CivilDate.daysInMonth(year: t.year, month: t.month))
            guard let day = lastMatchingDay(atOrBefore: t.day, year: t.year, month: t.month) else {
                t =
                    t.month == 1
                    ? LocalMinute(year: t.year - 1, month: 12, day: 31, hour: 23, minute: 59)
                    : LocalMinute(year: t.year, month: t.month - 1, day: 31, hour: 23, minute: 59)
                continue
            }
            if day != t.day {
                t = LocalMinute(year: t.year, month: t.month, day: day, hour: 23, minute: 59)
            }
            guard let hour = hours.previous(atOrBefore: t.hour) else {
                // Day 0 is caught by `lastMatchingDay` on the next pass.
                t = LocalMinute(year: t.year, month: t.month, day: t.day - 1, hour: 23, minute: 59)
                continue
            }
            if hour != t.hour {
                t.hour = hour
                t.minute = 59
            }
            guard let minute = minutes.previous(atOrBefore: t.minute) else {
                t.hour -= 1
                t.minute = 59
                continue
            }
            t.minute = minute
            return t
        }
        return nil
    }

    private func firstMatchingDay(atOrAfter day: Int, year: Int, month: Int) -> Int? {
        let lastDay = CivilDate.daysInMonth(year: year, month: month)
        var candidate = day
        while candidate <= lastDay {
            if matches(CivilDate(year: year, month: month, day: candidate)) { return candidate }
            candidate += 1
        }
        return nil
    }

    private func lastMatchingDay(atOrBefore day: Int, year: Int, month: Int) -> Int? {
        var candidate = day
        while candidate >= 1 {
            if matches(CivilDate(year: year, month: month, day: candidate)) { return candidate }
            candidate -= 1
        }
        return nil
    }
}

/// A set of small non-negative integers (0…63), as a bit mask.
struct CronValueSet: Hashable, Sendable {
    private(set) var bits: UInt64 = 0

    init() {}

    init(_ values: some Sequence<Int>) {
        for value in values { insert(value) }
    }

    mutating func insert(_ value: Int) {
        bits |= 1 << UInt64(value)
    }

    func contains(_ value: Int) -> Bool {
        value >= 0 && value < 64 && bits & (1 << UInt64(value)) != 0
    }

    /// The smallest member ≥ `value`.
    func next(atOrAfter value: Int) -> Int? {
        guard value < 64 else { return nil }
        let candidates = bits & (UInt64.max << UInt64(max(value, 0)))
        return candidates == 0 ? nil : candidates.trailingZeroBitCount
    }

    /// The largest member ≤ `value`.
    func previous(atOrBefore value: Int) -> Int? {
        guard value >= 0 else { return nil }
        let candidates = bits & (UInt64.max >> UInt64(63 - min(value, 63)))
        return candidates == 0 ? nil : 63 - candidates.leadingZeroBitCount
    }
}
