import CaretakerTestSupport
import Postgres
import Testing

@testable import CaretakerCore
@testable import CaretakerDatabase
@testable import CaretakerJobs

/// `logout-inactive` against a real PostgreSQL.
@Suite struct LogoutInactiveTests {
    let db: TestDatabase
    let user: Int64

    init() throws {
        db = try TestDatabase()
        user = try db.connection.query("INSERT INTO users (email, password_hash) VALUES ('u@x.test', 'h') RETURNING id")
            .first!.int64("id")!
    }

    /// A session last seen `idle` ago (an interval literal).
    func session(idle: String, revoked: Bool = false) throws -> String {
        try db.connection.query(
            """
            INSERT INTO sessions (user_id, created_at, last_seen_at, revoked_at, revoked_reason)
            VALUES ($1, now() - interval '1 day', now() - $2::interval,
                    CASE WHEN $3 THEN now() - interval '1 hour' END, CASE WHEN $3 THEN 'logout' END)
            RETURNING id
            """, user, idle, revoked
        ).first!["id"]!
    }

    func state(_ id: String) throws -> (revokedAt: String?, reason: String?, lastSeen: String?, created: String?) {
        let row = try db.connection.query(
            "SELECT revoked_at, revoked_reason, last_seen_at, created_at FROM sessions WHERE id = $1", id
        ).first!
        return (row["revoked_at"], row["revoked_reason"], row["last_seen_at"], row["created_at"])
    }

    @Test("idle a few seconds past 10 minutes: revoked for inactivity; a few seconds short: untouched")
    func boundary() throws {
        let idle = try session(idle: "10 minutes 3 seconds")
        let active = try session(idle: "9 minutes 57 seconds")
        let before = try state(idle)
        let stats = try db.runSucceeding("logout-inactive")
        #expect(stats["sessions_revoked"] == 1)
        let after = try state(idle)
        #expect(after.revokedAt != nil)
        #expect(after.reason == "inactivity")
        #expect(
            after.lastSeen == before.lastSeen && after.created == before.created,
            "only revoked_at and revoked_reason may change")
        #expect(try state(active).revokedAt == nil)
    }

    @Test("already-revoked sessions keep their revocation")
    func alreadyRevoked() throws {
        let revoked = try session(idle: "3 hours", revoked: true)
        let before = try state(revoked)
        #expect(try db.runSucceeding("logout-inactive")["sessions_revoked"] == 0)
        let after = try state(revoked)
        #expect(after.revokedAt == before.revokedAt && after.reason == "logout")
    }

    @Test("the configured idle_timeout is honoured")
    func configuredTimeout() throws {
        let idle = try session(idle: "31 seconds")
        let active = try session(idle: "29 seconds")
        try db.runSucceeding("logout-inactive", "[jobs.logout-inactive]\nidle_timeout = \"30s\"\n")
        #expect(try state(idle).revokedAt != nil)
        #expect(try state(active).revokedAt == nil)
    }

    @Test("dry run counts and changes nothing; batches cover everything due")
    func dryRunAndBatches() throws {
        try db.connection.query(
            """
            INSERT INTO sessions (user_id, last_seen_at) SELECT $1, now() - interval '1 hour' FROM generate_series(1, 450)
            """, user)
        #expect(try db.runSucceeding("logout-inactive", dryRun: true)["sessions_revoked"] == 450)
        #expect(try db.count("SELECT count(*) FROM sessions WHERE revoked_at IS NOT NULL") == 0)
        #expect(
            try db.runSucceeding("logout-inactive", "[jobs.logout-inactive]\nbatch_size = 100\n")["sessions_revoked"]
                == 450)
        #expect(try db.count("SELECT count(*) FROM sessions WHERE revoked_reason = 'inactivity'") == 450)
    }

    @Test("a session the app holds is skipped without waiting and revoked next time")
    func lockedSession() throws {
        let held = try session(idle: "1 hour")
        let app = try TemporaryPostgres.shared.connect(database: db.name)
        try app.query("BEGIN")
        try app.query("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", held)
        #expect(try db.runSucceeding("logout-inactive")["sessions_revoked"] == 0)
        try app.query("COMMIT")
        #expect(try db.runSucceeding("logout-inactive")["sessions_revoked"] == 1)
    }

    @Test("the deadline query: the next session to go idle, and whether one idle since the last run's start is left")
    func deadlines() throws {
        _ = try session(idle: "4 minutes")
        _ = try session(idle: "1 minute")
        let schema = "\"public\""
        let fresh = try LogoutInactive.deadlines(db.connection, schema: schema, idleTimeout: .seconds(600), since: nil)
        #expect(!fresh.stuck)
        #expect(fresh.secondsUntilNext.map { abs($0 - 360) < 5 } == true, "\(fresh)")
        // A session idle for 11 minutes: already due. With no run before, it is new work (due now).
        _ = try session(idle: "11 minutes")
        let now = try DatabaseClock.now(db.connection)
        let first = try LogoutInactive.deadlines(db.connection, schema: schema, idleTimeout: .seconds(600), since: nil)
        #expect(!first.stuck && first.secondsUntilNext.map { $0 <= 0 } == true, "\(first)")
        // After a run that started 1 s ago it is stuck (the run should have revoked it); the next is 6 min away.
        let afterRun = try LogoutInactive.deadlines(
            db.connection, schema: schema, idleTimeout: .seconds(600),
            since: now.addingTimeInterval(-1))
        #expect(afterRun.stuck)
        #expect(afterRun.secondsUntilNext.map { abs($0 - 360) < 5 } == true, "\(afterRun)")
        // A run that started 2 minutes ago: the session went idle after that start, so it is new work.
        let olderRun = try LogoutInactive.deadlines(
            db.connection, schema: schema, idleTimeout: .seconds(600),
            since: now.addingTimeInterval(-120))
        #expect(!olderRun.stuck && olderRun.secondsUntilNext.map { $0 <= 0 } == true, "\(olderRun)")
    }
}
