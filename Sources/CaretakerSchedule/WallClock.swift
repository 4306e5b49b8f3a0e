#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A wall-clock minute (what a clock on the wall shows), with no time zone attached.
///
/// Cron fields are matched against these; `ZoneClock` maps them to instants.
struct LocalMinute: Hashable, Comparable, Sendable, CustomStringConvertible {
    var year: Int
    var month: Int
    var day: Int
    var hour: Int
    var minute: Int

    /// Builds the minute containing `wallSeconds` (seconds since 1970-01-01 00:00 on the wall clock).
    init(wallSeconds: Int64) {
        let days = EpochTime.floorDiv(wallSeconds, 86_400)
        let secondOfDay = Int(wallSeconds - days * 86_400)
        let date = CivilDate(daysSinceEpoch: Int(days))
        self.init(
            year: date.year, month: date.month, day: date.day,
            hour: secondOfDay / 3600, minute: secondOfDay % 3600 / 60)
    }

    init(year: Int, month: Int, day: Int, hour: Int, minute: Int) {
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
    }

    var wallSeconds: Int64 {
        let days = CivilDate(year: year, month: month, day: day).daysSinceEpoch
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60)
    }

    func adding(minutes: Int64) -> LocalMinute {
        LocalMinute(wallSeconds: wallSeconds + minutes * 60)
    }

    static func < (lhs: LocalMinute, rhs: LocalMinute) -> Bool {
        (lhs.year, lhs.month, lhs.day, lhs.hour, lhs.minute)
            < (rhs.year, rhs.month, rhs.day, rhs.hour, rhs.minute)
    }

    var description: String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(two(month))-\(two(day)) \(two(hour)):\(two(minute))"
    }
}

/// A day in the proleptic Gregorian calendar.
///
/// Plain integer arithmetic (Howard Hinnant's `days_from_civil`): the cron search
/// calls it in tight loops, and Gregorian day counting needs no time zone data.
struct CivilDate: Hashable, Sendable {
    var year: Int
    var month: Int
    var day: Int

    init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    init(daysSinceEpoch: Int) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // March = 0
        day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    var daysSinceEpoch: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let shiftedMonth = (month + 9) % 12  // March = 0
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// 0 = Sunday … 6 = Saturday, as in crontab.
    var weekday: Int {
        // 1970-01-01 was a Thursday.
        ((daysSinceEpoch % 7) + 7 + 4) % 7
    }

    static func isLeapYear(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

/// Maps between instants (seconds since the Unix epoch) and wall-clock seconds in one time zone.
///
/// `Calendar.date(from:)` silently moves a non-existent local time forward and picks
/// one of the two instants of a repeated one; cronie's DST rule needs both cases
/// decided explicitly, so the mapping is done here from UTC offsets.
struct ZoneClock: Sendable {
    let timeZone: ZoneInfo

    func utcOffset(at instant: Int64) -> Int64 {
        Int64(timeZone.secondsFromGMT(at: instant))
    }

    func wallSeconds(at instant: Int64) -> Int64 {
        instant + utcOffset(at: instant)
    }

    /// Every instant at which the wall clock shows `wall`, earliest first: none in a
    /// spring-forward gap, two in a repeated (fall-back) stretch, else one.
    func instants(showing wall: Int64) -> [Int64] {
        // Any offset in force within a day of `wall` is a candidate; an offset is right
        // when the zone really uses it at the instant it produces.
        Set(offsetsNear(wall)).map { wall - $0 }.filter { wallSeconds(at: $0) == wall }.sorted()
    }

    /// The slots a cron job matching the wall-clock time `wall` has there (cronie's rule):
    /// a fixed-time job runs at the first occurrence, or at the first instant after a
    /// gap that swallowed `wall`; any other job at every occurrence, none in a gap.
    func slots(showing wall: Int64, fixedTime: Bool) -> [Int64] {
        let shown = instants(showing: wall)
        guard fixedTime else { return shown }
        if let first = shown.first { return [first] }
        return firstInstant(after: wall).map { [$0] } ?? []
    }

    /// The first instant whose wall-clock reading is later than `wall`, for a `wall`
    /// that falls in a spring-forward gap: the moment the clock jumped over it.
    func firstInstant(after wall: Int64) -> Int64? {
        let offsets = offsetsNear(wall)
        // Before the jump the wall clock reads earlier than `wall`, after it later.
        var low = wall - offsets.max()!, high = wall - offsets.min()!
        guard wallSeconds(at: high) > wall else { return nil }
        while low < high {
            let middle = low + (high - low) / 2
            if wallSeconds(at: middle) > wall { high = middle } else { low = middle + 1 }
        }
        return low
    }

    /// The largest UTC offset in force from `daysBefore` days before `instant` to `daysAfter` days after it.
    ///
    /// A zone changes its offset at most once within a day, so around a slot this bounds
    /// every wall-clock reading a nearby instant can have.
    func largestOffset(around instant: Int64, daysBefore: Int64 = 1, daysAfter: Int64 = 1) -> Int64 {
        offsets(around: instant, daysBefore: daysBefore, daysAfter: daysAfter).max()!
    }

    /// The smallest UTC offset in force from `daysBefore` days before `instant` to `daysAfter` days after it.
    func smallestOffset(around instant: Int64, daysBefore: Int64 = 1, daysAfter: Int64 = 1) -> Int64 {
        offsets(around: instant, daysBefore: daysBefore, daysAfter: daysAfter).min()!
    }

    private func offsets(around instant: Int64, daysBefore: Int64, daysAfter: Int64) -> [Int64] {
        (-daysBefore...daysAfter).map { utcOffset(at: instant + $0 * 86_400) }
    }

    /// The offsets in force within a day of the instant `wall` would be in UTC.
    private func offsetsNear(_ wall: Int64) -> [Int64] {
        [wall - 86_400, wall, wall + 86_400].map(utcOffset(at:))
    }
}

/// Instant arithmetic shared by the schedule code, kept in a namespace so it cannot
/// collide with helpers elsewhere in the module.
enum EpochTime {
    /// Floor division (rounds towards negative infinity), for instants before 1970.
    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    /// Whole microseconds since the Unix epoch, rounded to absorb `Double` noise;
    /// nil for dates too far away to schedule (beyond about 3000 years from 1970).
    static func microseconds(of date: Date) -> Int64? {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, abs(seconds) < 1e11 else { return nil }
        return Int64((seconds * 1_000_000).rounded())
    }

    static func date(seconds: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
    }
}
