import CaretakerCore
import CaretakerTestSupport
import Postgres
import Testing

/// `prune` against a real PostgreSQL: the three retention periods, a minute either side, and what is never pruned.
@Suite struct PruneTests {
    let db: TestDatabase
    /// 30 days, in minutes: the default of every `keep_*` key.
    static let thirtyDays = 30 * 24 * 60

    init() throws {
        db = try TestDatabase()
    }

    /// A `job_runs` row of `job` started (and finished, unless running) `minutes` ago.
    @discardableResult
    func jobRun(_ job: String = "expire-content", status: String, minutesAgo minutes: Int) throws -> Int64 {
        try db.connection.query(
            """
            INSERT INTO caretaker.job_runs (job, trigger, status, started_at, finished_at, host, pid)
            VALUES ($1, 'schedule', $2, now() - $3::int * interval '1 minute',
                    CASE WHEN $2 <> 'running' THEN now() - $3::int * interval '1 minute' END, 'test', 1)
            RETURNING id
            """, job, status, minutes
        ).first!.int64("id")!
    }

    func runExists(_ id: Int64) throws -> Bool {
        try db.count("SELECT count(*) FROM caretaker.job_runs WHERE id = $1", id) == 1
    }

    /// A session of a fresh user, revoked `minutes` ago (or active, last seen then, when `revoked` is false).
    func session(revoked: Bool = true, minutesAgo minutes: Int) throws -> String {
        try db.connection.query(
            """
            WITH u AS (INSERT INTO users (email, password_hash) VALUES (gen_random_uuid()::text || '@x.test', 'h') RETURNING id)
            INSERT INTO sessions (user_id, last_seen_at, revoked_at, revoked_reason)
            SELECT id, now() - $1::int * interval '1 minute',
                   CASE WHEN $2::boolean THEN now() - $1::int * interval '1 minute' END,
                   CASE WHEN $2::boolean THEN 'logout' END
            FROM u RETURNING id
            """, minutes, revoked
        ).first!["id"]!
    }

    func sessionExists(_ id: String) throws -> Bool {
        try db.count("SELECT count(*) FROM sessions WHERE id = $1::uuid", id) == 1
    }

    func resetRequest(status: String, minutesAgo minutes: Int) throws -> Int64 {
        try db.connection.query(
            """
            INSERT INTO password_reset_requests (email, status, requested_at, next_attempt_at)
            VALUES ('a@x.test', $1, now() - $2::int * interval '1 minute', now() - $2::int * interval '1 minute')
            RETURNING id
            """, status, minutes
        ).first!.int64("id")!
    }

    func requestExists(_ id: Int64) throws -> Bool {
        try db.count("SELECT count(*) FROM password_reset_requests WHERE id = $1", id) == 1
    }

    // MARK: Run history

    @Test(
        "job_runs: kept a minute inside keep_history, deleted a minute past it, whatever the outcome",
        arguments: ["succeeded", "failed", "interrupted", "skipped"])
    func historyBoundary(status: String) throws {
        let kept = try jobRun(status: status, minutesAgo: Self.thirtyDays - 1)
        let gone = try jobRun(status: status, minutesAgo: Self.thirtyDays + 1)
        let stats = try db.runSucceeding("prune")
        #expect(try runExists(kept), "a \(status) run was pruned before keep_history")
        #expect(try !runExists(gone), "a \(status) run outlived keep_history")
        #expect(stats["runs_deleted"] == 1)
    }

    @Test("failed runs are kept exactly as long as successful ones (configured keep_history)")
    func failedKeptAsLongAsSucceeded() throws {
        let keptOK = try jobRun(status: "succeeded", minutesAgo: 119)
        let keptFailed = try jobRun(status: "failed", minutesAgo: 119)
        let goneOK = try jobRun(status: "succeeded", minutesAgo: 121)
        let goneFailed = try jobRun(status: "failed", minutesAgo: 121)
        try jobRun(status: "succeeded", minutesAgo: 1)
        try jobRun(status: "failed", minutesAgo: 1)
        try db.runSucceeding("prune", "[jobs.prune]\nkeep_history = \"2h\"\n")
        #expect(try runExists(keptOK))
        #expect(try runExists(keptFailed))
        #expect(try !runExists(goneOK))
        #expect(try !runExists(goneFailed))
    }

    @Test("a running run is never pruned, however old")
    func runningKept() throws {
        let running = try jobRun(status: "running", minutesAgo: 400 * 24 * 60)
        let stats = try db.runSucceeding("prune")
        #expect(try runExists(running))
        #expect(stats["runs_deleted"] == 0)
    }

    @Test("each job's latest run of each outcome survives, so check still knows a rare job's last success")
    func latestRunOfEachJobKept() throws {
        let monthlyLastSuccess = try jobRun(
            "monthly-report", status: "succeeded", minutesAgo: Self.thirtyDays + 24 * 60)
        let monthlyOlder = try jobRun("monthly-report", status: "succeeded", minutesAgo: 2 * Self.thirtyDays)
        let monthlyLastFailure = try jobRun("monthly-report", status: "failed", minutesAgo: 3 * Self.thirtyDays)
        try db.runSucceeding("prune")
        #expect(try runExists(monthlyLastSuccess))
        #expect(try runExists(monthlyLastFailure))
        #expect(try !runExists(monthlyOlder))
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs WHERE job = 'monthly-report'") == 2)
    }

    @Test("slot claims older than keep_history are deleted with the history")
    func slots() throws {
        try db.connection.query(
            """
            INSERT INTO caretaker.job_slots (job, slot)
            VALUES ('expire-content', now() - $1::int * interval '1 minute'),
                   ('expire-content', now() - $2::int * interval '1 minute')
            """, Self.thirtyDays - 1, Self.thirtyDays + 1)
        let stats = try db.runSucceeding("prune")
        #expect(stats["slots_deleted"] == 1)
        #expect(try db.count("SELECT count(*) FROM caretaker.job_slots") == 1)
    }

    // MARK: Sessions

    @Test("sessions: revoked a minute inside keep_revoked_sessions kept, a minute past it deleted")
    func revokedSessionBoundary() throws {
        let kept = try session(minutesAgo: Self.thirtyDays - 1)
        let gone = try session(minutesAgo: Self.thirtyDays + 1)
        let stats = try db.runSucceeding("prune")
        #expect(try sessionExists(kept))
        #expect(try !sessionExists(gone))
        #expect(stats["sessions_deleted"] == 1)
    }

    @Test("keep_revoked_sessions is honoured; sessions never revoked are never pruned")
    func configuredSessionRetention() throws {
        let kept = try session(minutesAgo: 59)
        let gone = try session(minutesAgo: 61)
        let active = try session(revoked: false, minutesAgo: 400 * 24 * 60)
        try db.runSucceeding("prune", "[jobs.prune]\nkeep_revoked_sessions = \"1h\"\n")
        #expect(try sessionExists(kept))
        #expect(try !sessionExists(gone))
        #expect(try sessionExists(active))
    }

    // MARK: Reset requests

    @Test(
        "finished reset requests: kept a minute inside keep_reset_requests, deleted a minute past it",
        arguments: ["sent", "ignored", "failed"])
    func resetRequestBoundary(status: String) throws {
        let kept = try resetRequest(status: status, minutesAgo: Self.thirtyDays - 1)
        let gone = try resetRequest(status: status, minutesAgo: Self.thirtyDays + 1)
        let stats = try db.runSucceeding("prune")
        #expect(try requestExists(kept))
        #expect(try !requestExists(gone))
        #expect(stats["reset_requests_deleted"] == 1)
    }

    @Test("pending reset requests are never pruned, however old; keep_reset_requests is honoured")
    func pendingKept() throws {
        let pending = try resetRequest(status: "pending", minutesAgo: 400 * 24 * 60)
        let kept = try resetRequest(status: "sent", minutesAgo: 9)
        let gone = try resetRequest(status: "sent", minutesAgo: 11)
        try db.runSucceeding("prune", "[jobs.prune]\nkeep_reset_requests = \"10m\"\n")
        #expect(try requestExists(pending))
        #expect(try requestExists(kept))
        #expect(try !requestExists(gone))
    }

    // MARK: Batches and dry run

    @Test("deletes in batches of batch_size until nothing old is left")
    func batches() throws {
        for _ in 0..<25 { _ = try session(minutesAgo: Self.thirtyDays + 5) }
        let stats = try db.runSucceeding("prune", "[jobs.prune]\nbatch_size = 10\n")
        #expect(stats["sessions_deleted"] == 25)
        #expect(try db.count("SELECT count(*) FROM sessions") == 0)
    }

    @Test("dry run counts what would go and deletes nothing")
    func dryRun() throws {
        try jobRun(status: "succeeded", minutesAgo: Self.thirtyDays + 1)
        try jobRun(status: "succeeded", minutesAgo: 1)
        _ = try session(minutesAgo: Self.thirtyDays + 1)
        _ = try resetRequest(status: "sent", minutesAgo: Self.thirtyDays + 1)
        let stats = try db.runSucceeding("prune", dryRun: true)
        #expect(stats["runs_deleted"] == 1)
        #expect(stats["sessions_deleted"] == 1)
        #expect(stats["reset_requests_deleted"] == 1)
        #expect(try db.count("SELECT count(*) FROM sessions") == 1)
        #expect(try db.count("SELECT count(*) FROM password_reset_requests") == 1)
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs WHERE job = 'expire-content'") == 2)
    }
}
