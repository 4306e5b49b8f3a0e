import CaretakerCore
import Foundation
import Testing

@testable import CaretakerDashboard

/// The dashboard's pure parts: escaping, schedule words, missed slots, credentials, filters.
@Suite struct DashboardValuesTests {
    @Test("escape replaces the five HTML metacharacters and nothing else")
    func escape() {
        #expect(
            HTML.escape("<a href='x'>\"&\"</a> ünïcode")
                == "&lt;a href=&#39;x&#39;&gt;&quot;&amp;&quot;&lt;/a&gt; ünïcode")
        #expect(HTML.urlComponent("a b/ü-_.~") == "a%20b%2F%C3%BC-_.~")
    }

    @Test("times and durations are written in UTC and readable units")
    func formats() {
        #expect(HTML.time(Date(timeIntervalSince1970: 0)) == "1970-01-01 00:00:00Z")
        #expect(HTML.time(Date(timeIntervalSince1970: 1_795_618_999)) == "2026-11-25 15:03:19Z")
        #expect(HTML.time(Date(timeIntervalSince1970: 951_825_600)) == "2000-02-29 12:00:00Z")
        #expect(HTML.duration(0.087) == "87 ms")
        #expect(HTML.duration(4.21) == "4.2 s")
        #expect(HTML.duration(185) == "3 min 5 s")
        #expect(HTML.duration(7800) == "2 h 10 min")
        #expect(
            HTML.relative(Date(timeIntervalSince1970: 40), now: Date(timeIntervalSince1970: 100)) == "1 min 0 s ago")
        #expect(HTML.relative(Date(timeIntervalSince1970: 130), now: Date(timeIntervalSince1970: 100)) == "in 30.0 s")
    }

    @Test(
        "schedules in words",
        arguments: [
            ("*/5 * * * *", "every 5 minutes"), ("@every 1m", "every minute"), ("@every 90s", "every 90 seconds"),
            ("@hourly", "every hour at :00"), ("@daily", "daily at 00:00"), ("30 3 * * *", "daily at 03:30"),
            ("0 9 * * 1-5", "Mondays to Fridays at 09:00"), ("@weekly", "Sundays at 00:00"),
            ("@monthly", "monthly on day 1 at 00:00"), ("15 */2 * * *", "every 2 hours at :15"),
            ("0 0 1 jan *", "cron 0 0 1 jan *"),
        ])
    func scheduleWords(schedule: String, words: String) throws {
        #expect(ScheduleWords.describe(try Schedule(parsing: schedule, timeZone: .utc)) == words)
    }

    @Test("a slot counts as missed once it is overdue by the longest max_runtime of the enabled jobs")
    func missedGrace() throws {
        func grace(_ toml: String) throws -> TimeInterval {
            DashboardQueries.missedGrace(try ConfigurationLoader.parse(toml, file: "test.toml"))
        }
        #expect(try grace("") == 300, "the default max_runtime, 5 minutes")
        #expect(try grace("[jobs.prune]\nmax_runtime = \"30m\"\n") == 1800)
        #expect(try grace("[jobs.prune]\nmax_runtime = \"1500ms\"\n") == 300, "the longest counts")
        #expect(try grace("[jobs.prune]\nmax_runtime = \"2h\"\nenabled = false\n") == 300, "enabled jobs only")
    }

    @Test("missed slots: unclaimed consecutive slots form one span; a claimed slot splits them")
    func missedSpans() throws {
        let schedule = try Schedule(parsing: "@every 1m", timeZone: .utc)
        let start = Date(timeIntervalSince1970: 600)
        let end = Date(timeIntervalSince1970: 1200)  // slots 600, 660, …, 1140: ten of them
        let claimed: Set<Int64> = [600_000, 660_000, 900_000, 1_140_000]
        let spans = DashboardQueries.missedSpans(schedule, from: start, to: end, claimed: claimed)
        #expect(
            spans == [
                MissedSpan(first: Date(timeIntervalSince1970: 720), last: Date(timeIntervalSince1970: 840), slots: 3),
                MissedSpan(first: Date(timeIntervalSince1970: 960), last: Date(timeIntervalSince1970: 1080), slots: 3),
            ])
        let all = Set(stride(from: Int64(600_000), to: 1_200_000, by: 60_000))
        #expect(DashboardQueries.missedSpans(schedule, from: start, to: end, claimed: all).isEmpty)
        #expect(DashboardQueries.missedSpans(schedule, from: start, to: end, claimed: []).map(\.slots) == [10])
    }

    @Test("basic auth accepts exactly the configured user and password")
    func credentials() {
        let credentials = BasicCredentials(username: "operator", password: "pa:ss wörd")
        func header(_ text: String) -> String { "Basic " + Data(text.utf8).base64EncodedString() }
        #expect(credentials.accepts(authorization: header("operator:pa:ss wörd")))
        #expect(credentials.accepts(authorization: "basic " + Data("operator:pa:ss wörd".utf8).base64EncodedString()))
        #expect(!credentials.accepts(authorization: nil))
        #expect(!credentials.accepts(authorization: header("operator:pa:ss wör")))
        #expect(!credentials.accepts(authorization: header("operator:pa:ss wördx")))
        #expect(!credentials.accepts(authorization: header("Operator:pa:ss wörd")))
        #expect(!credentials.accepts(authorization: "Bearer " + Data("operator:pa:ss wörd".utf8).base64EncodedString()))
        #expect(!credentials.accepts(authorization: "Basic not-base64!"))
    }

    @Test(
        "listen addresses",
        arguments: [
            ("127.0.0.1:8080", "127.0.0.1", 8080), ("[::1]:9000", "::1", 9000), ("0.0.0.0:0", "0.0.0.0", 0),
            ("localhost:80", "localhost", 80),
        ])
    func listenAddress(text: String, host: String, port: Int) throws {
        let address = try #require(ListenAddress(parsing: text))
        #expect(address.host == host && address.port == port)
        #expect(address.description == text)
    }

    @Test(
        "bad listen addresses",
        arguments: ["8080", "localhost", ":8080", "::1:8080", "[127.0.0.1]:80", "host:65536", "host:-1", "a b:80"])
    func badListenAddress(text: String) {
        #expect(ListenAddress(parsing: text) == nil)
    }

    @Test("job page filters read the query and name the choices of a bad value")
    func filters() throws {
        let filter = try RunFilter(query: ["status": "failed", "trigger": "catch-up", "range": "7d", "page": "2"])
        #expect(filter == RunFilter(status: .failed, trigger: .catchUp, range: .week, page: 2))
        #expect(filter.query(page: 3) == "?status=failed&trigger=catch-up&range=7d&page=3")
        #expect(try RunFilter(query: ["status": "", "range": ""]) == RunFilter())
        #expect(
            throws: DashboardError.badRequest("status must be one of: running, succeeded, failed, interrupted, skipped")
        ) {
            try RunFilter(query: ["status": "exploded"])
        }
        #expect(throws: DashboardError.badRequest("page must be a number from 1")) {
            try RunFilter(query: ["page": "0"])
        }
    }
}
