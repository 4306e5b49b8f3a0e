import Foundation
import SeededRandom
import Testing

@testable import CaretakerSchedule

// Helpers. Dates are written with explicit UTC offsets so that DST expectations
// are visible in the test text ("+02:00" is summer time in Berlin).

private func zone(_ identifier: String) -> ZoneInfo {
    ZoneInfo(identifier: identifier)!
}

/// Foundation's (ICU's) view of the same zone, the reference the tests read wall clocks through.
private func foundationZone(_ zone: ZoneInfo) -> TimeZone {
    TimeZone(identifier: zone.identifier)!
}

/// "2026-03-29T01:30:00+01:00" (seconds may carry a fraction: "…:59.5+00:00").
private func instant(_ text: String) -> Date {
    let formatter = ISO8601DateFormatter()
    if text.contains(".") {
        formatter.formatOptions.insert(.withFractionalSeconds)
    }
    guard let date = formatter.date(from: text) else {
        fatalError("bad test date \(text)")
    }
    return date
}

/// "2026-03-29 03:00 +02:00": the wall clock in `timeZone`, read through Foundation's Calendar.
private func local(_ date: Date?, _ zone: ZoneInfo) -> String? {
    guard let date else { return nil }
    let timeZone = foundationZone(zone)
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = timeZone
    let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .nanosecond], from: date)
    let offset = timeZone.secondsFromGMT(for: date)
    func two(_ n: Int) -> String { String(format: "%02d", n) }
    var text = "\(c.year!)-\(two(c.month!))-\(two(c.day!)) \(two(c.hour!)):\(two(c.minute!))"
    if c.second! != 0 || c.nanosecond! > 1000 {
        text += ":\(two(c.second!))"
        if c.nanosecond! > 1000 { text += String(format: ".%03d", (c.nanosecond! + 500_000) / 1_000_000) }
    }
    let sign = offset < 0 ? "-" : "+"
    return text + " \(sign)\(two(abs(offset) / 3600)):\(two(abs(offset) % 3600 / 60))"
}

/// The first `count` slots after `start`, each as `local(_:_:)` text.
private func slots(_ text: String, _ zoneName: String = "UTC", after start: String, count: Int) throws -> [String] {
    let timeZone = zone(zoneName)
    let schedule = try Schedule(parsing: text, timeZone: timeZone)
    var result: [String] = []
    var date = instant(start)
    for _ in 0..<count {
        guard let next = schedule.nextDate(after: date) else { break }
        #expect(next > date)
        result.append(local(next, timeZone)!)
        date = next
    }
    return result
}

private func previous(_ text: String, _ zoneName: String = "UTC", atOrBefore date: String) throws -> String? {
    let timeZone = zone(zoneName)
    return local(try Schedule(parsing: text, timeZone: timeZone).previousDate(atOrBefore: instant(date)), timeZone)
}

private let utc = ZoneInfo.utc

@Suite("Schedule parsing")
struct ScheduleParsingTests {
    @Test(
        "accepts every documented form",
        arguments: [
            "*/5 * * * *", "0 3 * * 1-5", "0,30 9,17 * * *", "10-50/10 * * * *", "5/15 * * * *",
            "0 0 1 jan,JUL *", "0 12 * * Mon-FRI", "0 0 * * 7", "0 0 * * sat-sun", "0 0 1-7 * mon",
            "  0 3 * * *  ", "0\t3 * *  *", "@hourly", "@daily", "@midnight", "@weekly", "@monthly",
            "@yearly", "@annually", "@DAILY", "@every 90s", "@every 1h30m", "@every 1.5s", "@EVERY  10m",
        ])
    func acceptsValid(text: String) throws {
        let schedule = try Schedule(parsing: text, timeZone: utc)
        #expect(schedule.text == text.trimmingCharacters(in: .whitespaces))
        #expect(schedule.description == schedule.text)
    }

    @Test(
        "rejects invalid schedules with a message saying what is wrong",
        arguments: [
            ("", "empty"),
            ("   ", "empty"),
            ("* * * *", "4 fields; expected 5"),
            ("* * * * * *", "6 fields; expected 5"),
            ("60 * * * *", "minute field: 60 is out of range; expected 0-59"),
            ("* 24 * * *", "hour field: 24 is out of range; expected 0-23"),
            ("* * 0 * *", "day-of-month field: 0 is out of range; expected 1-31"),
            ("* * 32 * *", "day-of-month field: 32 is out of range"),
            ("* * * 13 *", "month field: 13 is out of range; expected 1-12 or jan-dec"),
            ("* * * * 8", "day-of-week field: 8 is out of range; expected 0-7"),
            ("*/0 * * * *", "minute field: step \"0\""),
            ("*/x * * * *", "minute field: step \"x\""),
            ("*/ * * * *", "minute field: step \"\""),
            ("1/2/3 * * * *", "more than one \"/\""),
            ("5-1 * * * *", "minute field: range \"5-1\" runs backwards"),
            ("1-2-3 * * * *", "not a value or a range"),
            ("1,,2 * * * *", "empty list item"),
            ("1, * * * *", "empty list item"),
            ("mon * * * *", "minute field: \"mon\" is not a valid value; expected 0-59"),
            ("* * * jan-foo *", "month field: \"foo\" is not a valid value; expected 1-12 or jan-dec"),
            ("* * * * monday", "day-of-week field: \"monday\""),
            ("-5 * * * *", "minute field: \"\" is not a valid value"),
            ("@fortnightly", "unknown macro @fortnightly"),
            ("@reboot", "unknown macro @reboot"),
            ("@daily 3", "@daily takes no argument"),
            ("@every", "\"\" is not a duration"),
            ("@every 90", "\"90\" is not a duration"),
            ("@every -5s", "\"-5s\" is not a duration"),
            ("@every 0s", "at least 1s"),
            ("@every 500ms", "at least 1s"),
            ("@every 1.0005s", "whole number of milliseconds"),
        ])
    func rejectsInvalid(text: String, fragment: String) {
        #expect {
            _ = try Schedule(parsing: text, timeZone: utc)
        } throws: { error in
            guard let error = error as? ScheduleError else { return false }
            let quoted = "invalid schedule \"\(text.trimmingCharacters(in: .whitespaces))\""
            return error.message.hasPrefix(quoted) && error.message.contains(fragment)
                && error.description == error.message
        }
    }

    @Test func errorMessagesSayWhatIsExpected() {
        do {
            _ = try Schedule(parsing: "* * * *", timeZone: utc)
            Issue.record("expected an error")
        } catch {
            #expect(error.message.contains("minute hour day-of-month month day-of-week"))
            #expect(error.message.contains("@every <duration>"))
        }
    }

    @Test func equalityFollowsTextAndZone() throws {
        let a = try Schedule(parsing: "*/5 * * * *", timeZone: utc)
        #expect(a == (try Schedule(parsing: "*/5 * * * *", timeZone: utc)))
        #expect(a != (try Schedule(parsing: "*/5 * * * *", timeZone: zone("Europe/Berlin"))))
        #expect(a != (try Schedule(parsing: "*/10 * * * *", timeZone: utc)))
    }

    @Test func fixedIntervalOnlyForEvery() throws {
        #expect(try Schedule(parsing: "@every 1h30m", timeZone: utc).fixedInterval == .seconds(5400))
        #expect(try Schedule(parsing: "@hourly", timeZone: utc).fixedInterval == nil)
    }
}

@Suite("Cron fields")
struct CronFieldTests {
    @Test func everyFiveMinutes() throws {
        #expect(
            try slots("*/5 * * * *", after: "2026-01-01T00:00:00Z", count: 3)
                == ["2026-01-01 00:05 +00:00", "2026-01-01 00:10 +00:00", "2026-01-01 00:15 +00:00"])
    }

    @Test func strictlyAfterAndFractionalSeconds() throws {
        #expect(
            try slots("*/15 * * * *", after: "2026-01-01T10:07:00Z", count: 4)
                == [
                    "2026-01-01 10:15 +00:00", "2026-01-01 10:30 +00:00", "2026-01-01 10:45 +00:00",
                    "2026-01-01 11:00 +00:00",
                ])
        #expect(try slots("*/5 * * * *", after: "2026-01-01T10:04:59.500Z", count: 1) == ["2026-01-01 10:05 +00:00"])
        #expect(try slots("*/5 * * * *", after: "2026-01-01T10:05:00Z", count: 1) == ["2026-01-01 10:10 +00:00"])
        #expect(try slots("*/5 * * * *", after: "2026-01-01T10:05:00.001Z", count: 1) == ["2026-01-01 10:10 +00:00"])
    }

    @Test func rangeWithStep() throws {
        #expect(
            try slots("10-50/10 * * * *", after: "2026-01-01T00:00:00Z", count: 6)
                == [
                    "2026-01-01 00:10 +00:00", "2026-01-01 00:20 +00:00", "2026-01-01 00:30 +00:00",
                    "2026-01-01 00:40 +00:00", "2026-01-01 00:50 +00:00", "2026-01-01 01:10 +00:00",
                ])
    }

    @Test func startWithStep() throws {
        #expect(
            try slots("5/15 * * * *", after: "2026-01-01T00:00:00Z", count: 5)
                == [
                    "2026-01-01 00:05 +00:00", "2026-01-01 00:20 +00:00", "2026-01-01 00:35 +00:00",
                    "2026-01-01 00:50 +00:00", "2026-01-01 01:05 +00:00",
                ])
    }

    @Test func lists() throws {
        #expect(
            try slots("0,30 9,17 * * *", after: "2026-01-01T00:00:00Z", count: 5)
                == [
                    "2026-01-01 09:00 +00:00", "2026-01-01 09:30 +00:00", "2026-01-01 17:00 +00:00",
                    "2026-01-01 17:30 +00:00", "2026-01-02 09:00 +00:00",
                ])
    }

    @Test func weekdayRange() throws {
        // 2026-01-02 is a Friday.
        #expect(
            try slots("0 3 * * 1-5", after: "2026-01-02T04:00:00Z", count: 3)
                == ["2026-01-05 03:00 +00:00", "2026-01-06 03:00 +00:00", "2026-01-07 03:00 +00:00"])
    }

    @Test func namesAreCaseInsensitive() throws {
        #expect(
            try slots("0 12 * * Mon-FRI", after: "2026-01-02T13:00:00Z", count: 2)
                == ["2026-01-05 12:00 +00:00", "2026-01-06 12:00 +00:00"])
        #expect(
            try slots("0 0 1 jan,JUL *", after: "2026-01-01T00:00:00Z", count: 2)
                == ["2026-07-01 00:00 +00:00", "2027-01-01 00:00 +00:00"])
        #expect(
            try slots("0 0 1 mar-may/2 *", after: "2026-01-01T00:00:00Z", count: 2)
                == ["2026-03-01 00:00 +00:00", "2026-05-01 00:00 +00:00"])
    }

    @Test("Sunday is 0, 7 or sun", arguments: ["0 0 * * 0", "0 0 * * 7", "0 0 * * sun", "0 0 * * SUN"])
    func sunday(text: String) throws {
        // 2026-01-04 is a Sunday.
        #expect(
            try slots(text, after: "2026-01-01T00:00:00Z", count: 2)
                == ["2026-01-04 00:00 +00:00", "2026-01-11 00:00 +00:00"])
    }

    @Test func weekendRangesEndingOnSunday() throws {
        let weekend = ["2026-01-03 00:00 +00:00", "2026-01-04 00:00 +00:00", "2026-01-10 00:00 +00:00"]
        #expect(try slots("0 0 * * sat-sun", after: "2026-01-01T00:00:00Z", count: 3) == weekend)
        #expect(try slots("0 0 * * 6-7", after: "2026-01-01T00:00:00Z", count: 3) == weekend)
        #expect(try slots("0 0 * * 6,0", after: "2026-01-01T00:00:00Z", count: 3) == weekend)
    }

    @Test func thirtyFirstSkipsShortMonths() throws {
        #expect(
            try slots("0 0 31 * *", after: "2026-01-01T00:00:00Z", count: 5)
                == [
                    "2026-01-31 00:00 +00:00", "2026-03-31 00:00 +00:00", "2026-05-31 00:00 +00:00",
                    "2026-07-31 00:00 +00:00", "2026-08-31 00:00 +00:00",
                ])
        #expect(try previous("0 0 31 * *", atOrBefore: "2026-05-01T00:00:00Z") == "2026-03-31 00:00 +00:00")
    }

    @Test func leapDayOnlyInLeapYears() throws {
        #expect(
            try slots("0 0 29 2 *", after: "2026-01-01T00:00:00Z", count: 3)
                == ["2028-02-29 00:00 +00:00", "2032-02-29 00:00 +00:00", "2036-02-29 00:00 +00:00"])
        // 2100 is not a leap year: the longest gap, still inside the 8-year search.
        #expect(try slots("0 0 29 2 *", after: "2096-03-01T00:00:00Z", count: 1) == ["2104-02-29 00:00 +00:00"])
        #expect(try previous("0 0 29 2 *", atOrBefore: "2104-02-28T00:00:00Z") == "2096-02-29 00:00 +00:00")
        #expect(
            try slots("0 0 28-29 feb *", after: "2027-01-01T00:00:00Z", count: 3)
                == ["2027-02-28 00:00 +00:00", "2028-02-28 00:00 +00:00", "2028-02-29 00:00 +00:00"])
    }

    @Test("impossible expressions end instead of looping", arguments: ["0 0 30 2 *", "0 0 31 4,6,9,11 *"])
    func impossible(text: String) throws {
        let schedule = try Schedule(parsing: text, timeZone: utc)
        #expect(schedule.nextDate(after: instant("2026-01-01T00:00:00Z")) == nil)
        #expect(schedule.previousDate(atOrBefore: instant("2026-01-01T00:00:00Z")) == nil)
        #expect(schedule.period(after: instant("2026-01-01T00:00:00Z")) == .seconds(8 * 366 * 86_400))
    }

    @Test func dayOfMonthOrDayOfWeekWhenBothRestricted() throws {
        // The 13th or any Friday. April 2026: Fridays 3, 10, 17, 24; the 13th is a Monday.
        #expect(
            try slots("0 0 13 * 5", after: "2026-04-01T00:00:00Z", count: 5)
                == [
                    "2026-04-03 00:00 +00:00", "2026-04-10 00:00 +00:00", "2026-04-13 00:00 +00:00",
                    "2026-04-17 00:00 +00:00", "2026-04-24 00:00 +00:00",
                ])
        #expect(try slots("0 0 1-7 * mon", after: "2026-04-01T00:00:00Z", count: 8).count == 8)
    }

    @Test func starredDayFieldMeansBothMustMatch() throws {
        // Vixie cron: a day field starting with "*" (even "*/2") makes the rule AND.
        // Mondays of April–May 2026: 6, 13, 20, 27, 4, 11, …; odd ones: 13, 27, 11.
        #expect(
            try slots("0 0 */2 * 1", after: "2026-04-01T00:00:00Z", count: 3)
                == ["2026-04-13 00:00 +00:00", "2026-04-27 00:00 +00:00", "2026-05-11 00:00 +00:00"])
        #expect(
            try slots("0 0 * * 1", after: "2026-04-01T00:00:00Z", count: 2)
                == ["2026-04-06 00:00 +00:00", "2026-04-13 00:00 +00:00"])
        #expect(
            try slots("0 0 13 * *", after: "2026-04-01T00:00:00Z", count: 2)
                == ["2026-04-13 00:00 +00:00", "2026-05-13 00:00 +00:00"])
    }

    @Test(
        "macros",
        arguments: [
            ("@hourly", ["2026-01-01 11:00 +00:00", "2026-01-01 12:00 +00:00"]),
            ("@daily", ["2026-01-02 00:00 +00:00", "2026-01-03 00:00 +00:00"]),
            ("@midnight", ["2026-01-02 00:00 +00:00", "2026-01-03 00:00 +00:00"]),
            ("@weekly", ["2026-01-04 00:00 +00:00", "2026-01-11 00:00 +00:00"]),
            ("@monthly", ["2026-02-01 00:00 +00:00", "2026-03-01 00:00 +00:00"]),
            ("@yearly", ["2027-01-01 00:00 +00:00", "2028-01-01 00:00 +00:00"]),
            ("@annually", ["2027-01-01 00:00 +00:00", "2028-01-01 00:00 +00:00"]),
        ])
    func macros(text: String, expected: [String]) throws {
        #expect(try slots(text, after: "2026-01-01T10:30:00Z", count: 2) == expected)
    }

    @Test func evaluatedInTheScheduleTimeZone() throws {
        #expect(
            try slots("@daily", "Europe/Berlin", after: "2026-01-01T10:30:00Z", count: 1)
                == ["2026-01-02 00:00 +01:00"])
        #expect(
            try slots("0 9 * * *", "Asia/Kolkata", after: "2026-01-01T00:00:00Z", count: 1)
                == ["2026-01-01 09:00 +05:30"])
    }

    @Test func previousDate() throws {
        #expect(try previous("*/5 * * * *", atOrBefore: "2026-01-01T10:05:00Z") == "2026-01-01 10:05 +00:00")
        #expect(try previous("*/5 * * * *", atOrBefore: "2026-01-01T10:04:59Z") == "2026-01-01 10:00 +00:00")
        #expect(try previous("*/5 * * * *", atOrBefore: "2026-01-01T10:05:59.900Z") == "2026-01-01 10:05 +00:00")
        // Monday 02:00 → Friday 03:00.
        #expect(try previous("0 3 * * 1-5", atOrBefore: "2026-01-05T02:00:00Z") == "2026-01-02 03:00 +00:00")
        #expect(try previous("0 0 1 1 *", atOrBefore: "2026-06-15T00:00:00Z") == "2026-01-01 00:00 +00:00")
        #expect(try previous("30 23 31 12 *", atOrBefore: "2026-06-15T00:00:00Z") == "2025-12-31 23:30 +00:00")
        #expect(try previous("0 0 13 * 5", atOrBefore: "2026-04-16T00:00:00Z") == "2026-04-13 00:00 +00:00")
        #expect(try previous("10-50/10 * * * *", atOrBefore: "2026-01-01T00:05:00Z") == "2025-12-31 23:50 +00:00")
    }

    @Test func periodIsTheGapBetweenTheNextTwoSlots() throws {
        let start = instant("2026-01-01T10:30:00Z")
        #expect(try Schedule(parsing: "*/5 * * * *", timeZone: utc).period(after: start) == .seconds(300))
        #expect(try Schedule(parsing: "@daily", timeZone: utc).period(after: start) == .seconds(86_400))
        #expect(try Schedule(parsing: "0 9,17 * * *", timeZone: utc).period(after: start) == .seconds(16 * 3600))
        #expect(try Schedule(parsing: "@every 90s", timeZone: utc).period(after: start) == .seconds(90))
    }

    @Test func sparseScheduleIsFast() throws {
        // Far apart slots must not be found minute by minute.
        let schedule = try Schedule(parsing: "0 0 29 2 1", timeZone: zone("Europe/Berlin"))
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            var date = instant("2026-01-01T00:00:00Z")
            for _ in 0..<200 {
                date = schedule.nextDate(after: date)!
            }
        }
        #expect(elapsed < .seconds(2))
    }
}

@Suite("@every")
struct EveryTests {
    @Test func slotsAreMultiplesOfTheIntervalSinceTheEpoch() throws {
        let schedule = try Schedule(parsing: "@every 90s", timeZone: utc)
        // 2026-01-01T00:00:00Z = 1_767_225_600 s, a multiple of 90.
        #expect(local(schedule.nextDate(after: instant("2026-01-01T00:00:00Z")), utc) == "2026-01-01 00:01:30 +00:00")
        #expect(local(schedule.nextDate(after: instant("2026-01-01T00:00:01Z")), utc) == "2026-01-01 00:01:30 +00:00")
        #expect(
            local(schedule.nextDate(after: instant("2026-01-01T00:01:29.999Z")), utc) == "2026-01-01 00:01:30 +00:00")
        #expect(
            local(schedule.previousDate(atOrBefore: instant("2026-01-01T00:01:29Z")), utc) == "2026-01-01 00:00 +00:00")
        #expect(
            local(schedule.previousDate(atOrBefore: instant("2026-01-01T00:01:30Z")), utc)
                == "2026-01-01 00:01:30 +00:00")
    }

    @Test(
        "every instance computes the same slots",
        arguments: [
            "2026-05-17T08:13:07Z", "2026-05-17T08:13:07.250Z", "2026-05-17T08:19:59Z", "2026-05-17T08:14:00Z",
        ])
    func sameSlotsFromAnyStart(start: String) throws {
        let schedule = try Schedule(parsing: "@every 7m", timeZone: utc)
        let next = try #require(schedule.nextDate(after: instant(start)))
        let seconds = next.timeIntervalSince1970
        #expect(seconds.truncatingRemainder(dividingBy: 420) == 0)
        #expect(next > instant(start))
        #expect(next.timeIntervalSince(instant(start)) <= 420)
    }

    @Test func timeZoneDoesNotMatter() throws {
        let start = instant("2026-03-29T00:45:12Z")
        let dates = try ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"].map {
            try Schedule(parsing: "@every 1h", timeZone: zone($0)).nextDate(after: start)
        }
        #expect(Set(dates).count == 1)
        // Hourly since the epoch is :30 past the hour on a +05:30 wall clock.
        #expect(local(dates[0], zone("Asia/Kolkata")) == "2026-03-29 06:30 +05:30")
    }

    @Test func millisecondIntervals() throws {
        let schedule = try Schedule(parsing: "@every 1.5s", timeZone: utc)
        #expect(
            local(schedule.nextDate(after: instant("2026-01-01T00:00:00Z")), utc) == "2026-01-01 00:00:01.500 +00:00")
        let slot = try #require(schedule.nextDate(after: instant("2026-01-01T00:00:00Z")))
        #expect(schedule.previousDate(atOrBefore: slot) == slot)
        #expect(schedule.nextDate(after: slot) == instant("2026-01-01T00:00:03Z"))
    }

    @Test func acrossDSTNothingChanges() throws {
        let schedule = try Schedule(parsing: "@every 30m", timeZone: zone("Europe/Berlin"))
        #expect(
            try slots("@every 30m", "Europe/Berlin", after: "2026-03-29T01:00:00+01:00", count: 2)
                == ["2026-03-29 01:30 +01:00", "2026-03-29 03:00 +02:00"])
        #expect(schedule.period(after: instant("2026-03-29T01:00:00+01:00")) == .seconds(1800))
    }
}

@Suite("Daylight saving time")
struct DaylightSavingTests {
    // Europe/Berlin 2026-03-29: 02:00 CET → 03:00 CEST (02:xx does not exist).
    // Europe/Berlin 2026-10-25: 03:00 CEST → 02:00 CET (02:xx happens twice).
    // America/New_York 2026-03-08: 02:00 EST → 03:00 EDT; 2026-11-01: 02:00 EDT → 01:00 EST.
    // Australia/Lord_Howe 2026-04-05: 02:00 → 01:30 (+11 → +10:30); 2026-10-04: 02:00 → 02:30.
    // America/Santiago 2026-04-05: 00:00 → Saturday 23:00 (-03 → -04); 2026-09-06: 00:00 → 01:00.

    @Test func berlinSpringForwardRunsAFixedTimeJobRightAfterTheGap() throws {
        #expect(
            try slots("30 2 * * *", "Europe/Berlin", after: "2026-03-28T00:00:00+01:00", count: 3)
                == ["2026-03-28 02:30 +01:00", "2026-03-29 03:00 +02:00", "2026-03-30 02:30 +02:00"])
        #expect(
            try previous("30 2 * * *", "Europe/Berlin", atOrBefore: "2026-03-29T23:00:00+02:00")
                == "2026-03-29 03:00 +02:00")
        #expect(
            try previous("30 2 * * *", "Europe/Berlin", atOrBefore: "2026-03-29T02:59:59+02:00")
                == "2026-03-28 02:30 +01:00")
        // Two times in the gap, and one right after it, make one slot at 03:00.
        #expect(
            try slots("15,45 2,3 * * *", "Europe/Berlin", after: "2026-03-29T01:00:00+01:00", count: 3)
                == ["2026-03-29 03:00 +02:00", "2026-03-29 03:15 +02:00", "2026-03-29 03:45 +02:00"])
        #expect(
            try slots("0 2,3 * * *", "Europe/Berlin", after: "2026-03-29T01:00:00+01:00", count: 2)
                == ["2026-03-29 03:00 +02:00", "2026-03-30 02:00 +02:00"])
    }

    @Test func berlinFallBackRunsAFixedTimeJobOnce() throws {
        #expect(
            try slots("30 2 * * *", "Europe/Berlin", after: "2026-10-24T12:00:00+02:00", count: 3)
                == ["2026-10-25 02:30 +02:00", "2026-10-26 02:30 +01:00", "2026-10-27 02:30 +01:00"])
        // From inside the repeated hour, the second 02:30 is not a slot.
        #expect(
            try slots("30 2 * * *", "Europe/Berlin", after: "2026-10-25T02:10:00+01:00", count: 1)
                == ["2026-10-26 02:30 +01:00"])
        #expect(
            try previous("30 2 * * *", "Europe/Berlin", atOrBefore: "2026-10-25T02:45:00+01:00")
                == "2026-10-25 02:30 +02:00")
        #expect(
            try previous("30 2 * * *", "Europe/Berlin", atOrBefore: "2026-10-25T02:10:00+01:00")
                == "2026-10-25 02:30 +02:00")
    }

    @Test func berlinStarredJobsSkipTheGapAndRunInBothRepeatedHours() throws {
        #expect(
            try slots("*/30 * * * *", "Europe/Berlin", after: "2026-03-29T00:45:00+01:00", count: 4)
                == [
                    "2026-03-29 01:00 +01:00", "2026-03-29 01:30 +01:00", "2026-03-29 03:00 +02:00",
                    "2026-03-29 03:30 +02:00",
                ])
        #expect(
            try slots("*/30 * * * *", "Europe/Berlin", after: "2026-10-25T01:15:00+02:00", count: 6)
                == [
                    "2026-10-25 01:30 +02:00", "2026-10-25 02:00 +02:00", "2026-10-25 02:30 +02:00",
                    "2026-10-25 02:00 +01:00", "2026-10-25 02:30 +01:00", "2026-10-25 03:00 +01:00",
                ])
        // No two-hour gap for an hourly job.
        #expect(
            try slots("38 * * * *", "Europe/Berlin", after: "2026-10-25T01:00:00+02:00", count: 4)
                == [
                    "2026-10-25 01:38 +02:00", "2026-10-25 02:38 +02:00", "2026-10-25 02:38 +01:00",
                    "2026-10-25 03:38 +01:00",
                ])
        #expect(
            try previous("*/30 * * * *", "Europe/Berlin", atOrBefore: "2026-10-25T02:10:00+01:00")
                == "2026-10-25 02:00 +01:00")
        #expect(
            try previous("*/30 * * * *", "Europe/Berlin", atOrBefore: "2026-10-25T02:59:00+02:00")
                == "2026-10-25 02:30 +02:00")
        #expect(
            try previous("*/30 * * * *", "Europe/Berlin", atOrBefore: "2026-10-25T03:00:00+01:00")
                == "2026-10-25 03:00 +01:00")
    }

    @Test func newYork() throws {
        #expect(
            try slots("30 2 * * *", "America/New_York", after: "2026-03-07T00:00:00-05:00", count: 3)
                == ["2026-03-07 02:30 -05:00", "2026-03-08 03:00 -04:00", "2026-03-09 02:30 -04:00"])
        #expect(
            try slots("*/30 * * * *", "America/New_York", after: "2026-03-08T00:45:00-05:00", count: 4)
                == [
                    "2026-03-08 01:00 -05:00", "2026-03-08 01:30 -05:00", "2026-03-08 03:00 -04:00",
                    "2026-03-08 03:30 -04:00",
                ])
        #expect(
            try slots("30 1 * * *", "America/New_York", after: "2026-10-31T12:00:00-04:00", count: 2)
                == ["2026-11-01 01:30 -04:00", "2026-11-02 01:30 -05:00"])
        #expect(
            try slots("*/30 * * * *", "America/New_York", after: "2026-11-01T00:15:00-04:00", count: 6)
                == [
                    "2026-11-01 00:30 -04:00", "2026-11-01 01:00 -04:00", "2026-11-01 01:30 -04:00",
                    "2026-11-01 01:00 -05:00", "2026-11-01 01:30 -05:00", "2026-11-01 02:00 -05:00",
                ])
        #expect(
            try previous("*/30 * * * *", "America/New_York", atOrBefore: "2026-11-01T01:59:00-05:00")
                == "2026-11-01 01:30 -05:00")
    }

    @Test func lordHoweShiftsByHalfAnHour() throws {
        #expect(
            try slots("15 2 * * *", "Australia/Lord_Howe", after: "2026-10-03T12:00:00+10:30", count: 2)
                == ["2026-10-04 02:30 +11:00", "2026-10-05 02:15 +11:00"])
        #expect(
            try slots("45 2 * * *", "Australia/Lord_Howe", after: "2026-10-03T12:00:00+10:30", count: 1)
                == ["2026-10-04 02:45 +11:00"])
        #expect(
            try slots("45 1 * * *", "Australia/Lord_Howe", after: "2026-04-04T12:00:00+11:00", count: 2)
                == ["2026-04-05 01:45 +11:00", "2026-04-06 01:45 +10:30"])
        #expect(
            try slots("*/15 * * * *", "Australia/Lord_Howe", after: "2026-04-05T01:20:00+11:00", count: 5)
                == [
                    "2026-04-05 01:30 +11:00", "2026-04-05 01:45 +11:00", "2026-04-05 01:30 +10:30",
                    "2026-04-05 01:45 +10:30", "2026-04-05 02:00 +10:30",
                ])
    }

    @Test func santiagoChangesAtMidnight() throws {
        // Spring forward: midnight does not exist, so a daily job runs at 01:00.
        #expect(
            try slots("@daily", "America/Santiago", after: "2026-09-05T12:00:00-04:00", count: 2)
                == ["2026-09-06 01:00 -03:00", "2026-09-07 00:00 -03:00"])
        #expect(
            try slots("*/30 * * * *", "America/Santiago", after: "2026-09-05T23:15:00-04:00", count: 2)
                == ["2026-09-05 23:30 -04:00", "2026-09-06 01:00 -03:00"])
        // Fall back: Saturday 23:xx happens twice.
        #expect(
            try slots("30 23 * * *", "America/Santiago", after: "2026-04-04T12:00:00-03:00", count: 2)
                == ["2026-04-04 23:30 -03:00", "2026-04-05 23:30 -04:00"])
        #expect(
            try slots("*/30 23 * * *", "America/Santiago", after: "2026-04-04T12:00:00-03:00", count: 4)
                == [
                    "2026-04-04 23:00 -03:00", "2026-04-04 23:30 -03:00", "2026-04-04 23:00 -04:00",
                    "2026-04-04 23:30 -04:00",
                ])
    }

    @Test func periodAcrossDSTIsRealTime() throws {
        let berlin = zone("Europe/Berlin")
        let daily = try Schedule(parsing: "0 12 * * *", timeZone: berlin)
        #expect(daily.period(after: instant("2026-03-27T13:00:00+01:00")) == .seconds(23 * 3600))
        #expect(daily.period(after: instant("2026-10-23T13:00:00+02:00")) == .seconds(25 * 3600))
    }
}

/// The schedule maths against an independent, deliberately naive reading of SPEC §4's
/// rule: walk every real minute, read the wall clock through Foundation's TimeZone and
/// Calendar, and mark the slots minute by minute.
@Suite("DST rule, minute by minute")
struct DaylightSavingPropertyTests {
    /// Two changes of each zone in 2026 (UTC instants a few hours before each).
    static let changes: [(String, String)] = [
        ("Europe/Berlin", "2026-03-28T20:00:00Z"), ("Europe/Berlin", "2026-10-24T20:00:00Z"),
        ("America/New_York", "2026-03-07T22:00:00Z"), ("America/New_York", "2026-10-31T22:00:00Z"),
        ("Australia/Lord_Howe", "2026-04-04T08:00:00Z"), ("Australia/Lord_Howe", "2026-10-03T08:00:00Z"),
        ("America/Santiago", "2026-04-04T20:00:00Z"), ("America/Santiago", "2026-09-05T20:00:00Z"),
    ]

    /// One real minute of the walk: the instant and what the wall clock shows then.
    struct Minute {
        var instant: Date
        var wall: LocalMinute
        var wallSeconds: Int
    }

    /// The wall clock minute by minute from `from` for `days` days, through Foundation.
    static func walk(_ zoneName: String, from: Date, days: Int) -> [Minute] {
        let timeZone = TimeZone(identifier: zoneName)!
        var utcCalendar = Calendar(identifier: .gregorian)
        utcCalendar.timeZone = TimeZone(identifier: "UTC")!
        return (0..<(days * 1440)).map { index in
            let instant = from.addingTimeInterval(Double(index) * 60)
            let wallSeconds = Int(instant.timeIntervalSince1970) + timeZone.secondsFromGMT(for: instant)
            return Minute(instant: instant, wall: wallMinute(wallSeconds, utcCalendar), wallSeconds: wallSeconds)
        }
    }

    static func wallMinute(_ wallSeconds: Int, _ utcCalendar: Calendar) -> LocalMinute {
        let c = utcCalendar.dateComponents(
            [.year, .month, .day, .hour, .minute],
            from: Date(timeIntervalSince1970: Double(wallSeconds)))
        return LocalMinute(year: c.year!, month: c.month!, day: c.day!, hour: c.hour!, minute: c.minute!)
    }

    /// The rule, read literally: a starred job runs whenever the clock shows a matching
    /// minute; a fixed-time job the first time it shows one, and at the minute after a
    /// jump for matching times the jump skipped.
    static func referenceSlots(_ cron: CronExpression, _ minutes: [Minute]) -> [Date] {
        var utcCalendar = Calendar(identifier: .gregorian)
        utcCalendar.timeZone = TimeZone(identifier: "UTC")!
        var shown = Set<Int>()
        var slots: [Date] = []
        for (index, minute) in minutes.enumerated() {
            var due = cron.matches(minute.wall) && (!cron.isFixedTime || !shown.contains(minute.wallSeconds))
            if cron.isFixedTime, index > 0 {
                var skipped = minutes[index - 1].wallSeconds + 60
                while skipped < minute.wallSeconds && !due {
                    due = cron.matches(wallMinute(skipped, utcCalendar))
                    skipped += 60
                }
            }
            shown.insert(minute.wallSeconds)
            if due { slots.append(minute.instant) }
        }
        return slots
    }

    @Test(
        "random cron expressions agree with the minute-by-minute walk for a dozen slots",
        arguments: changes.indices)
    func randomExpressions(change: Int) throws {
        let (zoneName, start) = Self.changes[change]
        var random = SplitMix64(seed: UInt64(change) &+ 20_261_125)
        // The walk starts a day early, so wall times shown before the first `from` count as shown.
        let walkStart = instant(start).addingTimeInterval(-86_400)
        let minutes = Self.walk(zoneName, from: walkStart, days: 16)
        let end = minutes.last!.instant
        for _ in 0..<40 {
            let text = randomCron(&random)
            let schedule = try Schedule(parsing: text, timeZone: zone(zoneName))
            guard case .cron(let cron) = schedule.rule else { continue }
            let from = instant(start).addingTimeInterval(Double(random.int(0...240)) * 60)
            let expected = Self.referenceSlots(cron, minutes).filter { $0 > from && $0 <= end }.prefix(12)
            var actual: [Date] = []
            var date = from
            while actual.count < 12, let next = schedule.nextDate(after: date), next <= end {
                actual.append(next)
                date = next
            }
            #expect(actual == Array(expected), "\(text) in \(zoneName) after \(from)")
            for (index, slot) in expected.enumerated().dropFirst() {
                let earlier = expected[expected.startIndex + index - 1]
                #expect(schedule.previousDate(atOrBefore: slot) == slot, "\(text) in \(zoneName)")
                #expect(
                    schedule.previousDate(atOrBefore: slot.addingTimeInterval(-1)) == earlier,
                    "\(text) in \(zoneName) before \(slot)")
            }
        }
    }

    /// A cron expression whose minute and hour fields take every form, often around the
    /// hours DST changes happen in; day fields mostly `*` so a dozen slots fit the walk.
    private func randomCron(_ random: inout SplitMix64) -> String {
        func pick<T>(_ options: [T]) -> T { random.pick(options) }
        func m() -> Int { random.int(0...59) }
        func h() -> Int { pick([0, 1, 2, 3, 22, 23, random.int(0...23)]) }
        let minute = pick([
            "*", "*/\(pick([1, 5, 7, 15, 20, 30, 45]))", "\(m())", "\(m())", "\(m()),\(m())",
            "\(pick([0, 10, 20]))-\(pick([30, 45, 59]))", "\(pick([0, 5]))-59/\(pick([10, 15, 25]))", "5/15",
        ])
        let (low, high) = (h(), h())
        let hour = pick([
            "*", "*", "*/\(pick([2, 3, 5]))", "\(h())", "\(h())", "\(h()),\(h())",
            "\(min(low, high))-\(max(low, high))",
            "1-3/2",
        ])
        let dayOfMonth = pick(["*", "*", "*", "*", "*/2", "1-31/3"])
        let dayOfWeek = pick(["*", "*", "*", "*", "0", "0,6", "1-5"])
        return "\(minute) \(hour) \(dayOfMonth) * \(dayOfWeek)"
    }
}
