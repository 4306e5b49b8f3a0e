import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

@testable import CaretakerDashboard

/// The pages over a real PostgreSQL holding runs of every status.
@Suite struct DashboardHistoryTests {
    @Test("the overview lists every configured job with its health, last run, next slot and schedule in words")
    func overviewJobs() async throws {
        let fixture = try DashboardFixture()
        let overview = try await fixture.overview(.day)
        let html = OverviewPage.render(overview)
        #expect(overview.jobs.map(\.name) == fixture.configuration.jobNames)
        for name in fixture.configuration.jobNames {
            #expect(html.contains("<tr data-job=\"\(name)\">"), "\(name) missing")
        }
        let expire = try #require(overview.jobs.first { $0.name == "expire-content" })
        #expect(expire.health?.healthy == false)
        #expect(expire.lastRun?.status == .running)
        #expect(expire.nextSlot.map { $0 > overview.now } == true)
        #expect(expire.scheduleWords == "every 5 minutes")
        let logout = try #require(overview.jobs.first { $0.name == "logout-inactive" })
        #expect(logout.health?.healthy == true)
        #expect(logout.lastRun?.counter("sessions_revoked") == 6)
        #expect(html.contains("<span class=\"badge unhealthy\">unhealthy</span>"))
        #expect(html.contains("<span class=\"badge healthy\">healthy</span>"))
        #expect(html.contains("every minute"))
        #expect(html.contains("sessions_revoked=6"))
    }

    @Test("a disabled job is listed as disabled, without next slot or missed slots")
    func disabledJob() async throws {
        let fixture = try DashboardFixture(extra: "[jobs.leader-succession]\nenabled = false\n")
        let overview = try await fixture.overview(.day)
        let leader = try #require(overview.jobs.first { $0.name == "leader-succession" })
        #expect(leader.health == nil && leader.nextSlot == nil && leader.missed.isEmpty)
        #expect(leader.lastRun?.counter("leaders_appointed") == 1)
        let html = OverviewPage.render(overview)
        let row = try #require(
            html.components(separatedBy: "<tr data-job=\"leader-succession\">").last?
                .components(separatedBy: "</tr>").first)
        #expect(row.contains("<span class=\"badge disabled\">disabled</span>"))
    }

    @Test(
        "the timeline has one mark per run, and one per pixel where a job's runs of one status crowd: 24 hours, then 7 days"
    )
    func timelineMarks() async throws {
        let fixture = try DashboardFixture()
        let day = OverviewPage.render(try await fixture.overview(.day))
        #expect(DashboardFixture.count("class=\"mark ", in: day) == DashboardFixture.marksInDay)
        #expect(DashboardFixture.crowdedRuns(in: day).isEmpty)
        for status in RunStatus.allCases {
            #expect(day.contains("class=\"mark s-\(status.rawValue)\""), "no \(status) mark")
        }
        // Over 7 days a pixel is 11.2 minutes: prune's 120 runs a minute apart share 11 or 12
        // marks. The pixels start at the render's clock, so where their edges cut the runs
        // depends on how long after the fixture the page is drawn (minutes, on a loaded
        // machine): an edge pixel may catch a single run, drawn as a mark of its own.
        let week = OverviewPage.render(try await fixture.overview(.week))
        let crowded = DashboardFixture.crowdedRuns(in: week)
        let single = DashboardFixture.count(" data-run=\"", in: week)
        #expect(single + crowded.reduce(0, +) == DashboardFixture.runsInWeek, "\(crowded)")
        let lonePrune = single - (DashboardFixture.runsInWeek - 120)
        #expect((0...2).contains(lonePrune), "\(single) single marks")
        #expect((11...12).contains(crowded.count + lonePrune), "\(crowded), \(lonePrune) alone")
        #expect(
            DashboardFixture.count(
                "<a href=\"/jobs/prune?status=succeeded&amp;range=7d\"><rect class=\"mark s-succeeded crowded\"",
                in: week)
                == crowded.count)
        #expect(week.contains("<title>\(crowded.first ?? 0) runs succeeded from "), "\(week)")
        #expect(week.contains("<span class=\"current\">7 days</span>"))
        let inDatabase = try fixture.db.count(
            "SELECT count(*) FROM caretaker.job_runs WHERE started_at >= now() - interval '24 hours'")
        #expect(inDatabase == DashboardFixture.marksInDay)
    }

    @Test("a job that ran every second for a day: at most one mark per pixel and status, every run counted")
    func crowdedDay() async throws {
        let fixture = try DashboardFixture()
        try fixture.db.connection.query(
            """
            INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, finished_at, stats, host, pid)
            SELECT 'prune', 'schedule', CASE WHEN n % 1000 = 0 THEN 'failed' ELSE 'succeeded' END,
                   now() - n * interval '1 second', now() - n * interval '1 second',
                   now() - n * interval '1 second' + interval '20 milliseconds', '{}', 'host-a', 1
            FROM generate_series(1, 86000) AS n
            """)
        let overview = try await fixture.overview(.day)
        let prune = try #require(overview.jobs.first { $0.name == "prune" })
        #expect(prune.marks.reduce(0) { $0 + $1.runs } == 86_000)
        // The successes in at most 901 pixels (the window's edges cut one), and a failure
        // every 1000 s, 86 of them, each alone in its pixel.
        #expect(prune.marks.count <= 901 + 86, "\(prune.marks.count) marks")
        #expect(prune.marks.filter { $0.first.status == .failed }.count == 86)
        let html = OverviewPage.render(overview)
        #expect(html.utf8.count < 600_000, "\(html.utf8.count) bytes")
    }

    @Test("slots nobody claimed show as one missed span; claimed ones do not")
    func missedSlots() async throws {
        let fixture = try DashboardFixture()
        let overview = try await fixture.overview(.day)
        let report = try #require(overview.jobs.first { $0.name == "hourly-report" })
        #expect(report.missed.count == 1)
        #expect(report.missed.first?.slots == 3)
        let html = OverviewPage.render(overview)
        let row = try #require(
            html.components(separatedBy: "<g class=\"row\" data-job=\"hourly-report\">").last?
                .components(separatedBy: "</g>").first)
        #expect(DashboardFixture.count("class=\"missed\"", in: row) == 1)
        #expect(row.contains("3 missed slots"))
    }

    @Test(
        "a slot not yet claimed within the longest max_runtime is not missed (its run may wait for a free place while other jobs run); one older is"
    )
    func recentSlotsNotMissed() async throws {
        let fixture = try DashboardFixture(
            extra: "[jobs.minutely]\nschedule = \"* * * * *\"\nsql = \"SELECT 1\"\nmax_runtime = \"30m\"\n")
        // Every minute of the day claimed but for minutes 1-3 ago (within the grace of
        // 30 minutes, with room for a test held up for minutes) and 60-61 ago (past it).
        let minute = try #require(
            try fixture.db.connection.query("SELECT extract(epoch FROM date_trunc('minute', now()))::float8 AS t")
                .first?.double("t"))
        try fixture.db.connection.query(
            """
            INSERT INTO caretaker.job_slots (job, slot)
            SELECT 'minutely', to_timestamp($1::float8) - k * interval '1 minute'
            FROM generate_series(0, 1500) AS k WHERE k NOT IN (1, 2, 3, 60, 61)
            """, minute)
        let overview = try await fixture.overview(.day)
        let minutely = try #require(overview.jobs.first { $0.name == "minutely" })
        #expect(minutely.missed.map(\.slots) == [2], "\(minutely.missed)")
        #expect(minutely.missed.first?.first == Date(timeIntervalSince1970: minute - 61 * 60))
    }

    @Test("the charts sum each job's main counter per hour, without dry runs")
    func counterCharts() async throws {
        let fixture = try DashboardFixture()
        let overview = try await fixture.overview(.day)
        func series(_ job: String, _ counter: String) -> CounterSeries? {
            overview.jobs.first { $0.name == job }?.series.first { $0.counter == counter }
        }
        #expect(series("logout-inactive", "sessions_revoked")?.total == DashboardFixture.sessionsRevokedInDay)
        #expect(series("logout-inactive", "sessions_revoked")?.buckets.count == 24)
        #expect(series("expire-content", "posts_deleted")?.total == 512)
        #expect(series("expire-content", "packs_deleted")?.total == 3)
        #expect(series("send-temp-passwords", "sent")?.total == 2)
        #expect(series("send-temp-passwords", "failed")?.total == 1)
        #expect(series("leader-succession", "leaders_appointed")?.total == 1)
        let html = OverviewPage.render(overview)
        #expect(html.contains("data-job=\"logout-inactive\" data-counter=\"sessions_revoked\""))
        #expect(html.contains("(15 in all)"))
        let week = try await fixture.overview(.week)
        #expect(week.jobs.first { $0.name == "expire-content" }?.series.first?.total == 612)
        #expect(week.jobs.first?.series.first?.buckets.count == 28)
    }

    @Test("a job error containing <script> is escaped on every page")
    func escaping() async throws {
        let fixture = try DashboardFixture()
        let configuration = fixture.configuration
        let database = try fixture.database()
        let overview = OverviewPage.render(try await fixture.overview(.day))
        let jobPage = JobPage.render(
            try await database.read {
                try DashboardQueries.jobRuns(
                    $0, configuration: configuration, job: "expire-content", filter: RunFilter())
            })
        let failedID = try #require(
            try fixture.db.connection.query("SELECT id FROM caretaker.job_runs WHERE status = 'failed'").first?.int64(
                "id"))
        let found = try await database.read { try DashboardQueries.run($0, id: failedID) }
        let runPage = RunPage.render(found.run, now: found.now)
        for html in [overview, jobPage, runPage] {
            #expect(!html.contains("<script"))
            #expect(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more"))
        }
    }

    @Test("the job page filters by status, trigger and range, and pages by 50")
    func jobPage() async throws {
        let fixture = try DashboardFixture()
        let configuration = fixture.configuration
        let database = try fixture.database()
        func runs(_ job: String, _ filter: RunFilter) async throws -> JobRuns {
            try await database.read {
                try DashboardQueries.jobRuns($0, configuration: configuration, job: job, filter: filter)
            }
        }
        let failed = try await runs("expire-content", RunFilter(status: .failed))
        #expect(failed.runs.map(\.status) == [.failed])
        let retries = try await runs("expire-content", RunFilter(trigger: .retry))
        #expect(retries.runs.count == 1 && retries.runs.first?.attempt == 2)
        #expect(try await runs("expire-content", RunFilter(range: .day)).runs.count == 5)
        #expect(try await runs("expire-content", RunFilter(range: .week)).runs.count == 6)
        let first = try await runs("prune", RunFilter())
        #expect(first.runs.count == 50 && first.hasNextPage)
        let last = try await runs("prune", RunFilter(page: 3))
        #expect(last.runs.count == 20 && !last.hasNextPage)
        let html = JobPage.render(first)
        #expect(DashboardFixture.count("<tr data-run=", in: html) == 50)
        #expect(html.contains("href=\"/jobs/prune?page=2\""))
        let filtered = JobPage.render(try await runs("expire-content", RunFilter(status: .failed, range: .week)))
        #expect(filtered.contains("<option value=\"failed\" selected>"))
        await #expect(throws: DashboardError.notFound("no job nosuch in the configuration or the history")) {
            _ = try await runs("nosuch", RunFilter())
        }
    }

    @Test("the run page shows the full record: stats, error, host, pid, trigger, slot, attempt, batches, p99")
    func runPage() async throws {
        let fixture = try DashboardFixture()
        let database = try fixture.database()
        let id = try #require(
            try fixture.db.connection.query(
                "SELECT id FROM caretaker.job_runs WHERE job = 'expire-content' AND stats ? 'batches'"
            ).first?.int64("id"))
        let found = try await database.read { try DashboardQueries.run($0, id: id) }
        let html = RunPage.render(found.run, now: found.now)
        for fragment in [
            "<dt>Host</dt><dd>host-a</dd>", "<dt>PID</dt><dd>104</dd>", "<dt>Backend PID</dt><dd>9004</dd>",
            "<dt>Trigger</dt><dd>schedule</dd>", "<dt>Attempt</dt><dd>1</dd>", "<dt>Batches</dt><dd>4</dd>",
            "<dt>Batch p99</dt><dd>21 ms</dd>", "<dt>Duration</dt><dd>87 ms</dd>",
            "<tr><td>posts_deleted</td><td class=\"num\">512</td></tr>",
        ] {
            #expect(html.contains(fragment), "missing \(fragment)")
        }
        #expect(found.run.slot != nil && html.contains("<dt>Slot</dt><dd>20"))
        await #expect(throws: DashboardError.notFound("no run 999999")) {
            _ = try await database.read { try DashboardQueries.run($0, id: 999_999) }
        }
    }

    @Test("the connection is read-only and has a statement timeout")
    func readOnly() async throws {
        let fixture = try DashboardFixture()
        let database = try fixture.database(statementTimeout: .milliseconds(300))
        await #expect(throws: PostgresError.self) {
            _ = try await database.read { try $0.query("DELETE FROM caretaker.job_runs") }
        }
        #expect(try fixture.db.count("SELECT count(*) FROM caretaker.job_runs") > 0)
        let setting = try await database.read { try $0.query("SHOW default_transaction_read_only").first?[0] }
        #expect(setting == "on")
        let started = ContinuousClock.now
        await #expect(throws: PostgresError.self) {
            _ = try await database.read { try $0.query("SELECT pg_sleep(30)") }
        }
        #expect(ContinuousClock.now - started < .seconds(25))
        // The connection is still usable after the failed reads.
        #expect(try await database.read { try $0.query("SELECT 1 AS one").first?.int("one") } == 1)
    }
}
