import Testing

@testable import CaretakerSchedule

@Suite("DurationText")
struct DurationTextTests {
    @Test(
        "parses valid durations",
        arguments: [
            ("500ms", Duration.milliseconds(500)),
            ("90s", .seconds(90)),
            ("10m", .seconds(600)),
            ("24h", .seconds(86_400)),
            ("30d", .seconds(30 * 86_400)),
            ("0", .zero),
            ("0s", .zero),
            ("0ms", .zero),
            ("1h30m", .seconds(5400)),
            ("1m30s", .seconds(90)),
            ("1s500ms", .milliseconds(1500)),
            ("1d12h", .seconds(36 * 3600)),
            ("1.5h", .seconds(5400)),
            ("0.5s", .milliseconds(500)),
            ("0.1s", .milliseconds(100)),
            ("1.000s", .seconds(1)),
            ("2.5ms", .microseconds(2500)),
            ("0.000001ms", .nanoseconds(1)),
            ("106751d", .seconds(106_751 * 86_400)),
        ])
    func parsesValid(text: String, expected: Duration) {
        #expect(DurationText.parse(text) == expected)
    }

    @Test(
        "rejects invalid durations",
        arguments: [
            "",
            "10",  // a bare number has no unit; only "0" is allowed without one
            "00",
            "-5s",
            "+5s",
            "5x",
            "s",
            "ms",
            "5ns",  // below the documented units
            "5us",
            "5S",  // units are lower case: "M" could be read as months
            "5H",
            "5 s",
            " 5s",
            "5s ",
            "1h 30m",
            "30m1h",  // units must decrease
            "1m1m",
            "1.s",
            ".5s",
            "1..5s",
            "1,5s",
            "1e3s",
            "\u{0661}\u{0660}s",  // Arabic-Indic digits
            "0.0000000001s",  // not a whole number of nanoseconds
            "106752d",  // just past Int64 nanoseconds (~292 years)
            "99999999999999999999d",
            "999999999999999999999999999999s",
        ])
    func rejectsInvalid(text: String) {
        #expect(DurationText.parse(text) == nil)
    }

    @Test(
        "formats in the largest exact unit",
        arguments: [
            (Duration.seconds(90), "90s"),
            (.seconds(600), "10m"),
            (.milliseconds(1500), "1500ms"),
            (.zero, "0s"),
            (.milliseconds(500), "500ms"),
            (.seconds(5400), "90m"),
            (.seconds(3600), "1h"),
            (.seconds(86_400), "1d"),
            (.seconds(48 * 3600), "2d"),
            (.seconds(30 * 86_400), "30d"),
            (.microseconds(1500), "1.5ms"),
            (.microseconds(250), "0.25ms"),
            (.nanoseconds(1), "0.000001ms"),
            (.seconds(-90), "-90s"),
        ])
    func formats(duration: Duration, expected: String) {
        #expect(DurationText.format(duration) == expected)
    }

    @Test(
        "format output parses back to the same duration",
        arguments: [
            Duration.zero, .nanoseconds(1), .microseconds(1), .milliseconds(1), .milliseconds(999),
            .milliseconds(1001), .seconds(1), .seconds(59), .seconds(61), .seconds(3599),
            .seconds(86_401), .seconds(7 * 86_400), .nanoseconds(Int64.max),
        ])
    func formatRoundTrips(duration: Duration) {
        #expect(DurationText.parse(DurationText.format(duration)) == duration)
    }

    @Test("parsed text formats to an equivalent text", arguments: ["1h30m", "1.5h", "1s500ms", "36h", "0.1s"])
    func parseRoundTrips(text: String) throws {
        let duration = try #require(DurationText.parse(text))
        #expect(DurationText.parse(DurationText.format(duration)) == duration)
    }

    @Test func wholeMicroseconds() {
        #expect(Duration.seconds(90).microseconds == 90_000_000)
        #expect(Duration.milliseconds(1500).microseconds == 1_500_000)
        #expect(Duration.nanoseconds(1999).microseconds == 1)
        #expect(Duration.nanoseconds(-1999).microseconds == -1)
        #expect(Duration.zero.microseconds == 0)
        #expect(Duration.seconds(Int64.max).microseconds == Int64.max)
        #expect(Duration.seconds(Int64.min).microseconds == Int64.min)
    }

    @Test func fractionalSeconds() {
        #expect(Duration.milliseconds(1500).seconds == 1.5)
        #expect(Duration.seconds(90).seconds == 90)
        #expect(Duration.milliseconds(-250).seconds == -0.25)
        #expect(Duration.zero.seconds == 0)
    }
}
