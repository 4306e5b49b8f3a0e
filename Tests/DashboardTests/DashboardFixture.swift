import CaretakerCore
import CaretakerDashboard
import CaretakerTestSupport
import Foundation
import Postgres

/// A test database with a history of runs of every status, relative to the database clock.
struct DashboardFixture {
    let db: TestDatabase
    let configuration: Configuration

    /// An operator job whose hourly slots are claimed but for three in a row (a gap of 5–7 hours ago).
    static let extraConfiguration = """
        [jobs.hourly-report]
        schedule = "@hourly"
        sql = "SELECT 1"

        [jobs.logout-inactive]
        stale_after = "1h"

        """

    /// The error of the failed run: it must reach the pages only escaped.
    static let scriptError = "<script>alert(\"x\")</script> & more"

    /// Runs started in the last 24 hours (every status, one dry run; each a mark of its
    /// own) and in the last 7 days (120 of them prune's, a minute apart).
    static let marksInDay = 11
    static let runsInWeek = 132
    /// 4 + 5 + 6 sessions revoked by real runs; the dry run's 100 do not count.
    static let sessionsRevokedInDay: Int64 = 15

    init(_ test: String = #function, extra: String = "") throws {
        db = try TestDatabase(test)
        configuration = try db.configuration(Self.extraConfiguration + extra)
        try db.connection.execute(
            script: """
                UPDATE caretaker.schema_migrations SET applied_at = now() - interval '2 days';
                INSERT INTO caretaker.job_runs (job, trigger, status, slot, attempt, started_at, finished_at, dry_run, stats, error, host, pid, backend_pid) VALUES
                 ('expire-content', 'schedule', 'succeeded', now() - interval '30 hours', 1, now() - interval '30 hours', now() - interval '30 hours' + interval '2 seconds', false, '{"posts_deleted": 100, "packs_deleted": 1}', NULL, 'host-a', 101, 9001),
                 ('expire-content', 'schedule', 'interrupted', now() - interval '5 hours', 1, now() - interval '5 hours', now() - interval '5 hours' + interval '40 seconds', false, '{}', 'the process running it died (its advisory lock is gone)', 'host-a', 102, 9002),
                 ('expire-content', 'schedule', 'skipped', now() - interval '3 hours', 1, now() - interval '3 hours', now() - interval '3 hours', false, '{}', 'the previous run was still going', 'host-b', 103, NULL),
                 ('expire-content', 'schedule', 'succeeded', now() - interval '2 hours', 1, now() - interval '2 hours', now() - interval '2 hours' + interval '87 milliseconds', false, '{"packs_deleted": 3, "posts_deleted": 512, "batches": 4, "batch_p99_ms": 21}', NULL, 'host-a', 104, 9004),
                 ('expire-content', 'retry', 'failed', now() - interval '1 hour', 2, now() - interval '1 hour', now() - interval '1 hour' + interval '1 second', false, '{"posts_deleted": 0}', '<script>alert("x")</script> & more', 'host-a', 105, 9005),
                 ('expire-content', 'manual', 'running', NULL, 1, now() - interval '10 seconds', NULL, false, '{}', NULL, 'host-a', 106, 9006),
                 ('logout-inactive', 'schedule', 'succeeded', now() - interval '3 hours', 1, now() - interval '3 hours', now() - interval '3 hours' + interval '12 milliseconds', false, '{"sessions_revoked": 4}', NULL, 'host-a', 107, 9007),
                 ('logout-inactive', 'schedule', 'succeeded', now() - interval '2 hours', 1, now() - interval '2 hours', now() - interval '2 hours' + interval '12 milliseconds', false, '{"sessions_revoked": 5}', NULL, 'host-a', 108, 9008),
                 ('logout-inactive', 'schedule', 'succeeded', now() - interval '20 minutes', 1, now() - interval '20 minutes', now() - interval '20 minutes' + interval '12 milliseconds', false, '{"sessions_revoked": 6}', NULL, 'host-a', 109, 9009),
                 ('logout-inactive', 'manual', 'succeeded', NULL, 1, now() - interval '50 minutes', now() - interval '50 minutes' + interval '9 milliseconds', true, '{"sessions_revoked": 100}', NULL, 'host-a', 110, 9010),
                 ('send-temp-passwords', 'notify', 'succeeded', NULL, 1, now() - interval '90 minutes', now() - interval '90 minutes' + interval '800 milliseconds', false, '{"sent": 2, "ignored": 0, "failed": 1}', NULL, 'host-a', 111, 9011),
                 ('leader-succession', 'catch-up', 'succeeded', now() - interval '4 hours', 1, now() - interval '4 hours', now() - interval '4 hours' + interval '30 milliseconds', false, '{"leaders_appointed": 1, "communities_archived": 0}', NULL, 'host-a', 112, 9012);
                INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, finished_at, stats, host, pid)
                SELECT 'prune', 'manual', 'succeeded', NULL, now() - interval '2 days' - n * interval '1 minute',
                       now() - interval '2 days' - n * interval '1 minute' + interval '1 second', '{"runs_deleted": 0}', 'host-a', 200 + n
                FROM generate_series(1, 120) AS n;
                INSERT INTO caretaker.job_slots (job, slot)
                SELECT 'hourly-report', date_trunc('hour', now()) - k * interval '1 hour'
                FROM generate_series(0, 23) AS k WHERE k NOT IN (5, 6, 7);
                """)
    }

    /// The dashboard's own read path: a read-only session with a statement timeout.
    func database(statementTimeout: Duration = DashboardDatabase.defaultStatementTimeout) throws -> DashboardDatabase {
        DashboardDatabase(
            connector: try DatabaseConnector(options: configuration.database), statementTimeout: statementTimeout)
    }

    /// The overview as the dashboard reads it, with a minute for its statements and
    /// the pauses between them: this process is a debug build, and on a loaded machine
    /// it spent more than the dashboard's 5 s between two reads of a page of 86,000 runs,
    /// so the server ended the session (idle in transaction) and the next read failed.
    /// The limit itself is `DashboardHistoryTests.readOnly`'s.
    func overview(_ window: TimeWindow) async throws -> Overview {
        let configuration = configuration
        return try await database(statementTimeout: .seconds(60)).read {
            try DashboardQueries.overview($0, configuration: configuration, window: window)
        }
    }

    /// The runs each crowded timeline mark stands for (its `data-runs`).
    static func crowdedRuns(in html: String) -> [Int] {
        html.components(separatedBy: "data-runs=\"").dropFirst().compactMap { Int($0.prefix { $0.isNumber }) }
    }

    /// How often `needle` occurs in `text`.
    static func count(_ needle: String, in text: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }
}
