import Foundation
import Testing

@testable import CaretakerSchedule

/// Seconds since the Unix epoch of an ISO 8601 text with offset ("2030-03-31T01:00:00Z").
private func epoch(_ text: String) -> Int64 {
    guard let date = ISO8601DateFormatter().date(from: text) else { fatalError("bad test date \(text)") }
    return Int64(date.timeIntervalSince1970)
}

private func rule(_ text: String) -> PosixTimeZoneRule {
    guard let rule = PosixTimeZoneRule(parsing: text) else { fatalError("bad TZ string \(text)") }
    return rule
}

@Suite("Time zones from the tz database")
struct ZoneInfoTests {
    /// Zones with DST north and south, half-hour and 45-minute offsets, and zones that
    /// dropped DST, compared with Foundation's (ICU's) TimeZone.
    @Test(
        "agrees with Foundation's TimeZone from 1900 to 2100",
        arguments: [
            "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata",
            "Europe/London", "Australia/Sydney", "Pacific/Chatham", "America/Sao_Paulo", "UTC",
        ])
    func agreesWithFoundation(identifier: String) throws {
        let zone = try #require(ZoneInfo(identifier: identifier))
        let reference = try #require(TimeZone(identifier: identifier))
        let start = epoch("1900-01-01T00:00:00Z"), end = epoch("2100-12-31T00:00:00Z")
        // A stride of 3 days and 1 hour 7 seconds visits every time of day and weekday.
        var instants = Array(stride(from: start, to: end, by: 3 * 86_400 + 3607))
        // Both sides of every listed transition (and so of the switch to the footer rule).
        for transition in zone.transitions where transition > start && transition < end {
            instants += [transition - 1, transition]
        }
        var mismatches: [String] = []
        for instant in instants {
            let date = Date(timeIntervalSince1970: TimeInterval(instant))
            let ours = zone.secondsFromGMT(for: date), theirs = reference.secondsFromGMT(for: date)
            if ours != theirs, mismatches.count < 5 { mismatches.append("\(date): \(ours) ≠ \(theirs)") }
        }
        #expect(mismatches.isEmpty, "\(identifier): \(mismatches)")
    }

    @Test func footerRuleBeyondTheListedTransitions() throws {
        let berlin = try #require(ZoneInfo(identifier: "Europe/Berlin"))
        #expect(berlin.footer == rule("CET-1CEST,M3.5.0,M10.5.0/3"))
        // 2100-03-28 is the last Sunday of March; the clocks go forward at 01:00 UTC.
        #expect(berlin.secondsFromGMT(at: epoch("2100-03-28T00:59:59Z")) == 3600)
        #expect(berlin.secondsFromGMT(at: epoch("2100-03-28T01:00:00Z")) == 7200)
        #expect(berlin.secondsFromGMT(at: epoch("2100-10-31T00:59:59Z")) == 7200)
        #expect(berlin.secondsFromGMT(at: epoch("2100-10-31T01:00:00Z")) == 3600)
    }

    @Test func monthWeekDayRules() {
        // Lord Howe: half-hour DST, southern hemisphere (starts in October, ends in April).
        let lordHowe = rule("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0")
        #expect(lordHowe.standardOffset == 37_800)
        #expect(lordHowe.utcOffset(at: epoch("2030-01-15T00:00:00Z")) == 39_600)
        #expect(lordHowe.utcOffset(at: epoch("2030-07-15T00:00:00Z")) == 37_800)
        // 2030-10-06 02:00 +10:30 → 2030-10-05T15:30Z.
        #expect(lordHowe.utcOffset(at: epoch("2030-10-05T15:29:59Z")) == 37_800)
        #expect(lordHowe.utcOffset(at: epoch("2030-10-05T15:30:00Z")) == 39_600)
        // Default DST offset (one hour ahead) and default rule times (02:00).
        let newYork = rule("EST5EDT,M3.2.0,M11.1.0")
        #expect(newYork.utcOffset(at: epoch("2030-03-10T06:59:59Z")) == -18_000)
        #expect(newYork.utcOffset(at: epoch("2030-03-10T07:00:00Z")) == -14_400)
        #expect(newYork.utcOffset(at: epoch("2030-11-03T05:59:59Z")) == -14_400)
        #expect(newYork.utcOffset(at: epoch("2030-11-03T06:00:00Z")) == -18_000)
        // Without a rule, the US rule applies.
        #expect(rule("EST5EDT") == newYork)
    }

    @Test func julianDayRules() {
        // Jn never counts February 29: J60 is March 1, also in leap years.
        let julian = rule("EST5EDT,J60/2,J300/2")
        #expect(julian.utcOffset(at: epoch("2024-03-01T06:59:59Z")) == -18_000)
        #expect(julian.utcOffset(at: epoch("2024-03-01T07:00:00Z")) == -14_400)
        // n counts from 0 and includes February 29: 59 is February 29 in 2024, March 1 in 2025.
        let zeroBased = rule("EST5EDT,59/2,300/2")
        #expect(zeroBased.utcOffset(at: epoch("2024-02-29T06:59:59Z")) == -18_000)
        #expect(zeroBased.utcOffset(at: epoch("2024-02-29T07:00:00Z")) == -14_400)
        #expect(zeroBased.utcOffset(at: epoch("2025-03-01T06:59:59Z")) == -18_000)
        #expect(zeroBased.utcOffset(at: epoch("2025-03-01T07:00:00Z")) == -14_400)
    }

    @Test func negativeAndExtendedRuleTimes() {
        // Greenland since 2023: DST starts at -01:00 (the evening before) and ends at 00:00.
        let nuuk = rule("<-02>2<-01>,M3.5.0/-1,M10.5.0/0")
        #expect(nuuk.standardOffset == -7200)
        // Last Sunday of March 2030 is the 31st: -01:00 on it is 30th 23:00 -02:00 = 31st 01:00Z.
        #expect(nuuk.utcOffset(at: epoch("2030-03-31T00:59:59Z")) == -7200)
        #expect(nuuk.utcOffset(at: epoch("2030-03-31T01:00:00Z")) == -3600)
        // Last Sunday of October 2030 is the 27th: 00:00 -01:00 = 01:00Z.
        #expect(nuuk.utcOffset(at: epoch("2030-10-27T00:59:59Z")) == -3600)
        #expect(nuuk.utcOffset(at: epoch("2030-10-27T01:00:00Z")) == -7200)
        // Daylight saving time all year (RFC 8536 §3.3.1), across the new year too.
        let allYear = rule("EST5EDT,0/0,J365/25")
        for text in ["2030-01-01T04:30:00Z", "2030-06-01T00:00:00Z", "2030-12-31T23:59:59Z", "2031-01-01T05:00:00Z"] {
            #expect(allYear.utcOffset(at: epoch(text)) == -14_400, "\(text)")
        }
        // Offsets with minutes and seconds, explicit signs.
        #expect(rule("<+0545>-5:45").standardOffset == 20_700)
        #expect(rule("<-0330>+3:30").standardOffset == -12_600)
        #expect(rule("LMT-0:53:28").standardOffset == 3208)
        #expect(rule("AAA3BBB2:30,M3.2.0/-2:30,M11.1.0/26").daylight?.offset == -9000)
        #expect(rule("AAA3BBB,M3.2.0/167,M11.1.0/-167").daylight?.start.time == 167 * 3600)
    }

    @Test(
        "rejects malformed TZ strings",
        arguments: [
            "", "CE", "CET", "CET-1CEST,M13.1.0,M10.5.0", "CET-1CEST,M3.6.0,M10.5.0", "CET-1CEST,M3.5.7,M10.5.0",
            "CET-1CEST,J0,J365", "CET-1CEST,366,1", "CET-1CEST,M3.5.0", "CET-1CEST,M3.5.0/168,M10.5.0",
            "CET-25", "<+01-1", "CET-1:60", "CET-1 ",
        ])
    func rejectsMalformed(text: String) {
        #expect(PosixTimeZoneRule(parsing: text) == nil)
    }

    @Test func utcNeedsNoDatabase() throws {
        for name in ["UTC", "Etc/UTC", "GMT"] {
            let zone = try #require(ZoneInfo(identifier: name))
            #expect(zone.identifier == name)
            #expect(zone.transitions.isEmpty && zone.footer == nil)
            #expect(zone.secondsFromGMT(for: Date(timeIntervalSince1970: 1e9)) == 0)
        }
    }

    @Test(
        "refuses names that are not zones",
        arguments: [
            "Mars/Olympus", "", "/etc/localtime", "../zoneinfo/UTC", "Europe/../Europe/Berlin", "Europe",
            "Europe/Berlin ",
        ])
    func refusesNonZones(name: String) {
        #expect(ZoneInfo(identifier: name) == nil)
    }

    @Test func rejectsDamagedFiles() throws {
        let bytes = try #require(FileManager.default.contents(atPath: "/usr/share/zoneinfo/Europe/Berlin"))
        #expect(throws: ZoneInfoError.self) { try ZoneInfo(identifier: "x", tzif: Array(bytes.prefix(100))) }
        #expect(throws: ZoneInfoError.self) { try ZoneInfo(identifier: "x", tzif: Array("not a zone file".utf8)) }
        // The version 1 block alone (version byte cleared) still reads, without a footer.
        var version1 = [UInt8](bytes)
        version1[4] = 0
        let zone = try ZoneInfo(identifier: "x", tzif: version1)
        #expect(zone.footer == nil)
        #expect(zone.secondsFromGMT(at: epoch("2026-07-01T00:00:00Z")) == 7200)
    }
}
