/// A POSIX `TZ` string such as `CET-1CEST,M3.5.0,M10.5.0/3`: a standard offset and,
/// optionally, a daylight-saving offset with the yearly rule for switching between them.
///
/// TZif files end with one (RFC 8536 §3.3) to describe the instants after their last
/// listed transition. Offsets in the string count hours *west* of Greenwich
/// (`CET-1` is UTC+1); this type stores them the usual way, east-positive.
/// Supports the RFC 8536 extensions: rule times from -167 to 167 hours and
/// all-year daylight saving time (`EST5EDT,0/0,J365/25`).
struct PosixTimeZoneRule: Sendable, Hashable {
    /// The UTC offset of standard time, seconds east.
    var standardOffset: Int
    /// Daylight saving time and when it applies; nil when the zone has none.
    var daylight: Daylight?

    struct Daylight: Sendable, Hashable {
        /// The UTC offset of daylight saving time, seconds east.
        var offset: Int
        /// When daylight saving time starts, on the standard-time wall clock.
        var start: Transition
        /// When it ends, on the daylight-time wall clock.
        var end: Transition
    }

    /// A yearly switch: a day of the year and the wall-clock time of day (in seconds,
    /// possibly negative or beyond 24 hours).
    struct Transition: Sendable, Hashable {
        var day: Day
        var time: Int
    }

    /// The day forms of a POSIX rule.
    enum Day: Sendable, Hashable {
        /// `Jn`: day 1...365, February 29 never counted.
        case julian(Int)
        /// `n`: day 0...365, February 29 counted in leap years.
        case zeroBased(Int)
        /// `Mm.w.d`: weekday `d` (0 = Sunday) of week `w` (1...5, 5 = last) of month `m`.
        case monthWeekDay(month: Int, week: Int, weekday: Int)
    }

    /// Parses a TZ string; nil when it is not one.
    init?(parsing text: String) {
        var scanner = TZStringScanner(Array(text.utf8))
        guard scanner.skipName(), let standardWest = scanner.offset(maxHours: 24) else { return nil }
        standardOffset = -standardWest
        if scanner.atEnd {
            daylight = nil
            return
        }
        guard scanner.skipName() else { return nil }
        var daylightOffset = standardOffset + 3600
        if !scanner.atEnd && !scanner.peek(",") {
            guard let west = scanner.offset(maxHours: 24) else { return nil }
            daylightOffset = -west
        }
        var start = Transition(day: .monthWeekDay(month: 3, week: 2, weekday: 0), time: 7200)
        var end = Transition(day: .monthWeekDay(month: 11, week: 1, weekday: 0), time: 7200)
        if !scanner.atEnd {
            guard scanner.skip(","), let first = scanner.transition(),
                scanner.skip(","), let second = scanner.transition()
            else { return nil }
            start = first
            end = second
        }
        guard scanner.atEnd else { return nil }
        daylight = Daylight(offset: daylightOffset, start: start, end: end)
    }

    /// The UTC offset in seconds in force at `instant` (seconds since the Unix epoch).
    func utcOffset(at instant: Int64) -> Int {
        guard let daylight else { return standardOffset }
        let year = CivilDate(daysSinceEpoch: Int(EpochTime.floorDiv(instant + Int64(standardOffset), 86_400))).year
        // The switches of the neighbouring years too, as rule times may cross a year boundary.
        var latest: (instant: Int64, offset: Int)?
        for candidateYear in (year - 1)...(year + 1) {
            let switches = [
                (
                    instant: daylight.start.instant(in: candidateYear, wallOffset: standardOffset),
                    offset: daylight.offset
                ),
                (instant: daylight.end.instant(in: candidateYear, wallOffset: daylight.offset), offset: standardOffset),
            ]
            for change in switches where change.instant <= instant {
                if latest == nil || change.instant >= latest!.instant { latest = change }
            }
        }
        return latest?.offset ?? standardOffset
    }
}

extension PosixTimeZoneRule.Transition {
    /// The instant of this switch in `year`, when the wall clock runs `wallOffset` seconds ahead of UTC.
    func instant(in year: Int, wallOffset: Int) -> Int64 {
        Int64(day.daysSinceEpoch(in: year)) * 86_400 + Int64(time - wallOffset)
    }
}

extension PosixTimeZoneRule.Day {
    /// The day this rule names in `year`, counted from 1970-01-01.
    func daysSinceEpoch(in year: Int) -> Int {
        let january1 = CivilDate(year: year, month: 1, day: 1).daysSinceEpoch
        switch self {
        case .julian(let n):
            let leapDay = CivilDate.isLeapYear(year) && n >= 60 ? 1 : 0
            return january1 + n - 1 + leapDay
        case .zeroBased(let n):
            return january1 + n
        case .monthWeekDay(let month, let week, let weekday):
            let first = CivilDate(year: year, month: month, day: 1)
            var day = 1 + (weekday - first.weekday + 7) % 7 + (week - 1) * 7
            while day > CivilDate.daysInMonth(year: year, month: month) { day -= 7 }
            return first.daysSinceEpoch + day - 1
        }
    }
}

/// Reads the parts of a POSIX TZ string from left to right.
private struct TZStringScanner {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var atEnd: Bool { position == bytes.count }

    func peek(_ character: Unicode.Scalar) -> Bool {
        !atEnd && bytes[position] == UInt8(ascii: character)
    }

    /// Consumes `character` if it comes next.
    mutating func skip(_ character: Unicode.Scalar) -> Bool {
        guard peek(character) else { return false }
        position += 1
        return true
    }

    /// Consumes a zone abbreviation: three or more letters, or anything in `<…>`.
    mutating func skipName() -> Bool {
        if skip("<") {
            guard let close = bytes[position...].firstIndex(of: UInt8(ascii: ">")), close - position >= 3 else {
                return false
            }
            position = close + 1
            return true
        }
        let start = position
        while !atEnd, (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(bytes[position] & 0xDF) { position += 1 }
        return position - start >= 3
    }

    /// Consumes an unsigned decimal number.
    mutating func number() -> Int? {
        let start = position
        var value = 0
        while !atEnd, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]), position - start < 6 {
            value = value * 10 + Int(bytes[position] - UInt8(ascii: "0"))
            position += 1
        }
        return position > start ? value : nil
    }

    /// Consumes `[+-]h[h][:mm[:ss]]` and returns it in seconds.
    mutating func offset(maxHours: Int) -> Int? {
        var sign = 1
        if skip("-") { sign = -1 } else { _ = skip("+") }
        guard let hours = number(), hours <= maxHours else { return nil }
        var seconds = hours * 3600
        for unit in [60, 1] {
            guard skip(":") else { break }
            guard let value = number(), value < 60 else { return nil }
            seconds += value * unit
        }
        return sign * seconds
    }

    /// Consumes `date[/time]`; the time defaults to 02:00.
    mutating func transition() -> PosixTimeZoneRule.Transition? {
        let day: PosixTimeZoneRule.Day
        if skip("J") {
            guard let n = number(), (1...365).contains(n) else { return nil }
            day = .julian(n)
        } else if skip("M") {
            guard let month = number(), (1...12).contains(month), skip("."),
                let week = number(), (1...5).contains(week), skip("."),
                let weekday = number(), (0...6).contains(weekday)
            else { return nil }
            day = .monthWeekDay(month: month, week: week, weekday: weekday)
        } else {
            guard let n = number(), (0...365).contains(n) else { return nil }
            day = .zeroBased(n)
        }
        var time = 7200
        if skip("/") {
            guard let explicit = offset(maxHours: 167) else { return nil }
            time = explicit
        }
        return PosixTimeZoneRule.Transition(day: day, time: time)
    }
}
