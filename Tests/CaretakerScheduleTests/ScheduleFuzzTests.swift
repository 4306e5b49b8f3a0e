import CaretakerSchedule
import Foundation
import SeededRandom
import Testing

// Deterministic fuzzing of the schedule and duration parsers (the harness, its
// seeds and replay: SeededRandom's FuzzRun). The properties checked, beyond "does
// not crash":
// - schedules: the next slot is strictly after the date, the previous slot at or
//   before it, no slot lies strictly between a date and its next slot, and a slot
//   is its own "previous slot";
// - durations: `parse(format(d)) == d`, accepted text matches the grammar, and
//   composed durations parse to the sum of their parts.

// MARK: - Cron parser

@Suite("Fuzz: schedules")
struct ScheduleFuzzTests {
    static let utc = ZoneInfo.utc
    /// Zones with DST changes of every kind (30-minute, southern, across the date line).
    static let zones: [ZoneInfo] = [
        "UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
        "Pacific/Chatham", "Asia/Kathmandu", "America/Santiago", "Pacific/Apia",
    ]
    .map { ZoneInfo(identifier: $0)! }
    static let valid = [
        "*/5 * * * *", "0 3 * * *", "0 3 * * 1-5", "@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly",
        "@annually", "@every 90s", "@every 1s", "@every 1h30m", "@every 7d", "5/15 * * * *", "10-50/10 * * * *",
        "0 0 29 2 *", "0 0 31 * *", "30 2 * * *", "0,30 1-3 * jan-mar mon,wed,fri", "0 0 1 * sat-sun", "59 23 31 12 7",
        "0 0 13 * fri", "* * * * *", "0 2 * * 0", "30 1 * * *", "45 2 * 3,10 sun",
    ]

    static let numbers = [
        "-1", "0", "1", "2", "5", "6", "7", "8", "11", "12", "13", "23", "24", "29", "30", "31", "32",
        "59", "60", "61", "99", "9999", "99999", "00", "007", "1e1", "+1", "٣", "１",
    ]
    static let names = ["jan", "DEC", "Feb", "sun", "SAT", "mon", "tues", "sunday", "x", ""]

    static let fragments = [
        "*", "/", "-", ",", " ", "\t", "  ", "\n", "\u{A0}", "@", "@every", "0", "5", "60", "jan",
        "sun", "ms", "s", "\u{0}", "é", "?", "L", "W", "#", "h", "1.5",
    ]

    /// One cron field: a list of `*`, `N`, `A-B` items with optional steps, values chosen near the bounds.
    fileprivate static func field(using random: inout SplitMix64) -> String {
        (0..<random.int(1...3)).map { _ -> String in
            var item: String
            switch random.int(0...4) {
            case 0: item = "*"
            case 1: item = random.pick(numbers)
            case 2: item = random.pick(names)
            default:
                item =
                    "\(random.chance(70) ? random.pick(numbers) : random.pick(names))-\(random.chance(70) ? random.pick(numbers) : random.pick(names))"
            }
            if random.chance(30) { item += "/" + random.pick(numbers) }
            if random.chance(3) { item += "/" + random.pick(numbers) }
            return item
        }.joined(separator: ",")
    }

    fileprivate static func generated(using random: inout SplitMix64) -> String {
        switch random.int(0...9) {
        case 0:
            let arguments = [
                "", "1s", "0s", "999ms", "1500ms", "1.5s", "0.0001s", "106751d", "106752d", "1 s", "90", "-1s",
                "1h 30m", "1h30m", "\u{0663}s", String(repeating: "9", count: 30) + "ms",
            ]
            return random.pick(["@every", "@EVERY", "@every ", "@every\t"]) + " " + random.pick(arguments)
        case 1:
            return random.pick([
                "@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@reboot", "@", "@@daily", "@Daily",
            ])
                + (random.chance(30) ? " " + field(using: &random) : "")
        default:
            let count = random.chance(80) ? 5 : random.int(0...7)
            let separators = [" ", " ", " ", "\t", "  ", "\n", "\u{A0}", ""]
            return (0..<count).map { _ in field(using: &random) }
                .joined(separator: random.chance(90) ? " " : random.pick(separators))
        }
    }

    /// Parses `text` in `zone` and checks the schedule properties at a few instants.
    fileprivate static func check(
        _ text: String, zone: ZoneInfo, seed: UInt64, run: inout FuzzRun, random: inout SplitMix64
    ) {
        let schedule: Schedule
        do {
            schedule = try Schedule(parsing: text, timeZone: zone)
        } catch {
            // Compared as bytes: a schedule starting with a combining mark joins the quote's grapheme.
            run.check(
                error.message.utf8.starts(with: "invalid schedule \"".utf8) && error.message.utf8.count > 30,
                seed: seed, text.shown, "unhelpful message: \(error.message.shown)")
            return
        }
        let input = "\(text.shown) in \(zone.identifier)"
        for _ in 0..<2 {
            let date = Instants.random(using: &random)
            guard let next = schedule.nextDate(after: date) else { continue }
            run.check(next > date, seed: seed, input, "nextDate(after: \(date)) = \(next) is not later")
            if schedule.fixedInterval == nil {
                // A whole minute of the zone's wall clock (not of UTC: 19th-century offsets have seconds).
                let wall = next.timeIntervalSince1970 + Double(zone.secondsFromGMT(for: next))
                run.check(
                    wall.truncatingRemainder(dividingBy: 60) == 0, seed: seed, input,
                    "cron slot \(next) is not on a whole minute of the wall clock")
            }
            run.check(
                schedule.previousDate(atOrBefore: next) == next, seed: seed, input,
                "the slot \(next) is not its own previous slot (got \(String(describing: schedule.previousDate(atOrBefore: next))))"
            )
            if let before = schedule.previousDate(atOrBefore: next.addingTimeInterval(-0.001)) {
                run.check(
                    before <= date, seed: seed, input,
                    "slot \(before) lies between \(date) and its next slot \(next)")
            }
            if let previous = schedule.previousDate(atOrBefore: date) {
                run.check(
                    previous <= date, seed: seed, input, "previousDate(atOrBefore: \(date)) = \(previous) is later")
            }
        }
    }

    @Test("generated cron expressions, macros and @every: no crash, helpful errors, consistent slots")
    func generatedSchedules() {
        var run = FuzzRun("schedule generation", seed: 0xC202_6000)
        run.run(10000) { random, run in
            let seed = random.state
            let text = Self.generated(using: &random)
            Self.check(text, zone: random.pick(Self.zones), seed: seed, run: &run, random: &random)
        }
    }

    @Test("mutations of valid schedules")
    func mutatedSchedules() {
        var run = FuzzRun("schedule mutations", seed: 0xC202_6001)
        run.run(6000) { random, run in
            let seed = random.state
            var text = random.pick(Self.valid)
            for _ in 0..<random.int(1...3) {
                text = Mutate.characters(text, fragments: Self.fragments, using: &random)
            }
            Self.check(text, zone: random.pick(Self.zones), seed: seed, run: &run, random: &random)
        }
    }

    @Test("random text and bytes as a schedule")
    func randomSchedules() {
        var run = FuzzRun("schedule random", seed: 0xC202_6002)
        run.run(6000) { random, run in
            let seed = random.state
            let text =
                random.chance(50)
                ? Mutate.randomText(maxLength: 30, using: &random)
                : String(
                    decoding: (0..<random.int(0...24)).map { _ in UInt8.random(in: 0...255, using: &random) },
                    as: UTF8.self)
            Self.check(text, zone: random.pick(Self.zones), seed: seed, run: &run, random: &random)
        }
    }

    @Test("every field value at and around its bounds")
    func boundaryValues() throws {
        var run = FuzzRun("schedule bounds", seed: 0xC202_6003)
        var random = SplitMix64(seed: 0xC202_6003)
        let bounds = [0...59, 0...23, 1...31, 1...12, 0...7]
        for (position, range) in bounds.enumerated() {
            for value in [range.lowerBound - 1, range.lowerBound, range.upperBound, range.upperBound + 1] {
                var fields = ["*", "*", "*", "*", "*"]
                fields[position] = String(value)
                let text = fields.joined(separator: " ")
                let accepted = (try? Schedule(parsing: text, timeZone: Self.utc)) != nil
                run.check(accepted == range.contains(value), seed: 0, text.shown, "accepted: \(accepted)")
                for zone in Self.zones {
                    Self.check(text, zone: zone, seed: 0, run: &run, random: &random)
                }
                for step in ["0", "1", String(range.upperBound), String(range.upperBound + 1), "99999"] {
                    fields[position] = "\(range.lowerBound)-\(range.upperBound)/\(step)"
                    Self.check(fields.joined(separator: " "), zone: Self.utc, seed: 0, run: &run, random: &random)
                }
            }
        }
        // Instants a schedule cannot place: no crash, no slot.
        let schedule = try Schedule(parsing: "*/5 * * * *", timeZone: Self.utc)
        for seconds in [Double.nan, .infinity, -.infinity, 1e11, -1e11, 1e300] {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(schedule.nextDate(after: date) == nil)
            #expect(schedule.previousDate(atOrBefore: date) == nil)
            _ = schedule.period(after: date)
        }
        for date in [
            Date.distantFuture, .distantPast, Date(timeIntervalSince1970: 1e11 - 1),
            Date(timeIntervalSince1970: -1e11 + 1),
        ] {
            if let next = schedule.nextDate(after: date) { #expect(next > date) }
            if let previous = schedule.previousDate(atOrBefore: date) { #expect(previous <= date) }
        }
    }
}

// MARK: - Duration parser

@Suite("Fuzz: durations")
struct DurationFuzzTests {
    static let units: [(symbol: String, nanoseconds: Int128)] = [
        ("d", 86_400_000_000_000), ("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000),
        ("ms", 1_000_000),
    ]
    static let fragments = [
        "0", "1", "9", ".", "d", "h", "m", "s", "ms", "us", "ns", " ", "-", "+", "e", "M", "S", "٣", "١",
        "\u{0}", "_", "00", "5", "99999999999999999999",
    ]

    /// A random duration: log-uniform magnitude, sometimes a whole number of a unit.
    fileprivate static func randomDuration(using random: inout SplitMix64) -> Duration {
        let digits = random.int(0...18)
        var magnitude = Int64.random(in: 0...Int64(pow(10.0, Double(digits))), using: &random)
        if random.chance(40) {
            let unit = random.pick(units).nanoseconds
            magnitude = (magnitude / Int64(unit)) * Int64(unit)
        }
        if random.chance(2) { magnitude = random.pick([0, 1, Int64.max, Int64.max - 1, 999_999, 1_000_000]) }
        return .nanoseconds(magnitude)
    }

    @Test("format then parse gives the same duration, for random durations")
    func roundTrip() {
        var run = FuzzRun("duration round trip", seed: 0xD0_2026)
        run.run(12_000) { random, run in
            let seed = random.state
            let duration = Self.randomDuration(using: &random)
            let text = DurationText.format(duration)
            run.check(
                DurationText.parse(text) == duration, seed: seed, "\(duration)",
                "format gave \(text.shown), which parses to \(String(describing: DurationText.parse(text)))")
        }
    }

    @Test("composed durations parse to the sum of their parts")
    func composedDurations() {
        var run = FuzzRun("duration composition", seed: 0xD0_2027)
        run.run(8000) { random, run in
            let seed = random.state
            var text = ""
            var total: Int128 = 0
            var exact = true
            for index in Self.units.indices where random.chance(45) {
                let unit = Self.units[index]
                let whole = Int128(random.int(0...(random.chance(80) ? 999 : 999_999)))
                text += String(whole)
                var part = whole * unit.nanoseconds
                if random.chance(25) {
                    let fractionDigits = random.int(1...6)
                    let fraction = Int128(random.int(0...Int(pow(10.0, Double(fractionDigits))) - 1))
                    let scale = (0..<fractionDigits).reduce(Int128(1)) { product, _ in product * 10 }
                    let padded = String(fraction)
                    text += "." + String(repeating: "0", count: fractionDigits - padded.count) + padded
                    if (fraction * unit.nanoseconds) % scale != 0 { exact = false }
                    part += fraction * unit.nanoseconds / scale
                }
                text += unit.symbol
                total += part
            }
            guard !text.isEmpty else { return }
            let expected: Duration? = exact && total <= Int128(Int64.max) ? .nanoseconds(Int64(total)) : nil
            run.check(
                DurationText.parse(text) == expected, seed: seed, text.shown,
                "parsed to \(String(describing: DurationText.parse(text))), expected \(String(describing: expected))")
        }
    }

    /// What `parse` may accept: ASCII digits, at most one `.` per number, and the unit letters.
    static func looksLikeDuration(_ text: String) -> Bool {
        text == "0"
            || (text.allSatisfy { "0123456789.dhms".contains($0) } && text.last.map { "dhms".contains($0) } == true
                && text.first?.isNumber == true)
    }

    @Test(
        "random and mutated text: no crash, nothing outside the grammar accepted, results non-negative and round-trip")
    func randomText() {
        var run = FuzzRun("duration random", seed: 0xD0_2028)
        let valid = [
            "0", "500ms", "90s", "10m", "24h", "30d", "1h30m", "1.5h", "0.25ms", "106751d", "1d23h59m59s999ms",
        ]
        run.run(20_000) { random, run in
            let seed = random.state
            let text: String
            switch random.int(0...3) {
            case 0:
                text = Mutate.randomText(maxLength: 16, using: &random)
            case 1:
                text = (0..<random.int(0...8)).map { _ in random.pick(Self.fragments) }.joined()
            default:
                var mutated = random.pick(valid)
                for _ in 0..<random.int(1...3) {
                    mutated = Mutate.characters(mutated, fragments: Self.fragments, using: &random)
                }
                text = mutated
            }
            guard let duration = DurationText.parse(text) else { return }
            run.check(
                Self.looksLikeDuration(text), seed: seed, text.shown, "accepted text outside the grammar as \(duration)"
            )
            run.check(duration >= .zero, seed: seed, text.shown, "negative duration \(duration)")
            run.check(
                DurationText.parse(DurationText.format(duration)) == duration, seed: seed, text.shown,
                "\(duration) formats as \(DurationText.format(duration)), which does not parse back")
        }
    }

    @Test("boundaries: the largest duration, overflow, long digit runs")
    func boundaries() {
        #expect(DurationText.parse("106751d") == .seconds(106_751 * 86_400))
        #expect(DurationText.parse("106752d") == nil)
        #expect(DurationText.parse("9223372036854775807ms") == nil)
        #expect(DurationText.parse("9223372036854.775807ms") == .nanoseconds(Int64.max))
        #expect(DurationText.parse("9223372036854.775808ms") == nil)
        #expect(DurationText.parse(DurationText.format(.nanoseconds(Int64.max))) == .nanoseconds(Int64.max))
        #expect(DurationText.parse(String(repeating: "9", count: 21) + "ms") == nil)
        #expect(DurationText.parse("1." + String(repeating: "0", count: 10_000) + "1s") == nil)
        #expect(DurationText.parse("1." + String(repeating: "0", count: 10_000) + "s") == .seconds(1))
        #expect(DurationText.parse("0.000000001s") == .nanoseconds(1))
        #expect(DurationText.parse("0.0000000001s") == nil)
        #expect(DurationText.parse(String(repeating: "1", count: 100_000)) == nil)
        #expect(DurationText.parse("106750d23h59m59s999ms") != nil)
        #expect(DurationText.parse("") == nil)
        #expect(DurationText.parse("0.") == nil)
        #expect(DurationText.parse(".5s") == nil)
    }
}
