import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Synchronization
import Testing

/// The app's surprises (RELIABILITY.md): rows that the app's foreign keys,
/// triggers and locks protect are skipped for the run, counted (`…_blocked`) and
/// named in one warning; every other row is handled and the run succeeds.
@Suite struct AppSurprisesTests {
    let db: TestDatabase

    init() throws {
        db = try TestDatabase()
    }

    // MARK: Helpers

    func adminPack() throws -> Int64 {
        try db.connection.query(
            "INSERT INTO packs (name, is_admin, created_at) VALUES ('a', true, now() - interval '9 days') RETURNING id"
        )
        .first!.int64("id")!
    }

    /// `count` posts in `pack`, created `age` ago (an interval literal), oldest id first.
    func posts(_ count: Int, in pack: Int64, age: String, likes: Int = 0) throws -> [Int64] {
        try db.connection.query(
            """
            INSERT INTO posts (pack_id, likes, created_at)
            SELECT $1, $3, now() - $2::interval FROM generate_series(1, $4) RETURNING id
            """, pack, age, likes, count
        ).rows.compactMap { $0.int64("id") }.sorted()
    }

    /// The app's own table pointing at posts, plain NO ACTION, as in the issue.
    func reports(on post: Int64) throws {
        try db.connection.execute(
            script: "CREATE TABLE IF NOT EXISTS reports (id bigserial PRIMARY KEY, post_id bigint REFERENCES posts(id))"
        )
        try db.connection.query("INSERT INTO reports (post_id) VALUES ($1)", post)
    }

    /// A trigger of the app's that refuses `operation` on `table` for the row `id`, with `sqlState`.
    func refuse(_ operation: String, on table: String, id: String, sqlState: String = "P0001") throws {
        try db.connection.execute(
            script: """
                CREATE FUNCTION refuse_\(table)() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF OLD.id::text = '\(id)' THEN
                        RAISE EXCEPTION 'the app keeps % %', TG_TABLE_NAME, OLD.id USING ERRCODE = '\(sqlState)';
                    END IF;
                    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
                END $$;
                CREATE TRIGGER refuse_\(table) BEFORE \(operation) ON \(table) FOR EACH ROW EXECUTE FUNCTION refuse_\(table)();
                """)
    }

    func warnings(_ output: LineOutput) -> [String] {
        output.lines.filter { $0.contains("level=warning") }
    }

    // MARK: expire-content

    @Test("one expired post referenced by an app table: every other one goes, posts_blocked = 1, one warning names it")
    func referencedPost() throws {
        let admin = try adminPack()
        // Past the maximum lifetime (keyset path) and within the window (bucket path), over several batches.
        let old = try posts(25, in: admin, age: "3 days")
        let windowed = try posts(25, in: admin, age: "30 hours", likes: 5)
        let fresh = try posts(3, in: admin, age: "1 hour")
        try reports(on: old[7])
        try reports(on: windowed[3])
        let output = LineOutput.capturing()
        let stats = try db.runSucceeding(
            "expire-content", "[jobs.expire-content]\nbatch_size = 10\n", logOutput: output)
        #expect(stats["posts_deleted"] == 48, "\(stats)")
        #expect(stats["posts_blocked"] == 2, "\(stats)")
        #expect(try db.count("SELECT count(*) FROM posts") == 2 + fresh.count)
        let lines = warnings(output)
        #expect(lines.count == 1, "\(output.lines)")
        #expect(lines.first?.contains("constraint reports_post_id_fkey (SQLSTATE 23503)") == true, "\(lines)")
        #expect(lines.first?.contains("posts \(old[7]), \(windowed[3])") == true, "\(lines)")
    }

    @Test("the issue's case: 3,000 expired posts, one referenced; one run leaves only that one")
    func oneReferencedAmongThousands() throws {
        let admin = try adminPack()
        let old = try posts(3000, in: admin, age: "3 days")
        try reports(on: old[0])
        let stats = try db.runSucceeding("expire-content")
        #expect(stats["posts_blocked"] == 1, "\(stats)")
        #expect(stats["posts_deleted"] == 2999, "\(stats)")
        #expect(try db.count("SELECT count(*) FROM posts") == 1)
    }

    @Test("a pack whose post the app references stays; the other packs go")
    func referencedPack() throws {
        let kept = try db.connection.query(
            "INSERT INTO packs (name, created_at) VALUES ('k', now() - interval '3 days') RETURNING id"
        ).first!.int64("id")!
        let gone = try db.connection.query(
            "INSERT INTO packs (name, created_at) VALUES ('g', now() - interval '3 days') RETURNING id"
        ).first!.int64("id")!
        let referenced = try posts(1, in: kept, age: "1 hour")
        _ = try posts(2, in: gone, age: "1 hour")
        try reports(on: referenced[0])
        let stats = try db.runSucceeding("expire-content")
        #expect(stats["packs_deleted"] == 1 && stats["packs_blocked"] == 1, "\(stats)")
        #expect(try db.count("SELECT count(*) FROM packs WHERE id = $1", kept) == 1)
        #expect(try db.count("SELECT count(*) FROM packs WHERE id = $1", gone) == 0)
    }

    @Test(
        "a check or trigger error, a deadlock, a serialization failure or a lock timeout on one row blocks only that row",
        arguments: ["P0001", "23514", "40P01", "40001", "55P03"])
    func rowLevelCauses(sqlState: String) throws {
        let admin = try adminPack()
        let old = try posts(12, in: admin, age: "3 days")
        try refuse("DELETE", on: "posts", id: "\(old[4])", sqlState: sqlState)
        let output = LineOutput.capturing()
        let stats = try db.runSucceeding("expire-content", "[jobs.expire-content]\nbatch_size = 5\n", logOutput: output)
        #expect(stats["posts_blocked"] == 1 && stats["posts_deleted"] == 11, "\(stats)")
        #expect(warnings(output).first?.contains("SQLSTATE \(sqlState)") == true, "\(output.lines)")
    }

    @Test(
        "a real deadlock with the app (it likes a post, then joins the post's pack) fails nothing: the pack is retried")
    func realDeadlock() throws {
        let pack = try db.connection.query(
            "INSERT INTO packs (name, created_at) VALUES ('p', now() - interval '3 days') RETURNING id"
        )
        .first!.int64("id")!
        let post = try posts(1, in: pack, age: "1 hour")[0]
        let user = try db.connection.query(
            "INSERT INTO users (email, password_hash) VALUES ('u@example.org', 'h') RETURNING id"
        )
        .first!.int64("id")!
        // caretaker's session checks for the deadlock (after 3 s) long before the app's would.
        try db.connection.query("SELECT set_config('deadlock_timeout', '3s', false)")
        try db.connection.execute(script: "ALTER DATABASE \(quoteIdentifier(db.name)) SET deadlock_timeout = '3s'")
        let app = try TemporaryPostgres.shared.connect(database: db.name)
        try app.execute(script: "SET deadlock_timeout = '60s'")
        try app.query("BEGIN")
        try app.query("UPDATE posts SET likes = likes + 1 WHERE id = $1", post)
        // The run gets an OS thread of its own: on a loaded 2-core machine the cooperative
        // pool can be busy with other tests' blocking calls for longer than this test waits.
        let database = db
        let outcome = Mutex<Result<RunOutcome, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let result = Result {
                try database.run("expire-content", "[jobs.expire-content]\nlock_timeout = \"30s\"\n")
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        // caretaker holds the pack and waits for the liked post.
        var waiting = false
        for _ in 0..<300 where !waiting {
            waiting =
                try db.count(
                    """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE datname = $1 AND application_name = 'caretaker/expire-content' AND wait_event_type = 'Lock'
                    """, db.name) == 1
            if !waiting { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(waiting, "caretaker never waited for the app's post")
        // Joining the pack needs a share lock on the pack caretaker holds: a deadlock, and caretaker's session is its victim.
        try app.query("INSERT INTO pack_members (pack_id, user_id) VALUES ($1, $2)", pack, user)
        try app.query("COMMIT")
        done.wait()
        let result = try #require(outcome.withLock { $0 }).get()
        guard case .finished(_, .succeeded, let stats, _) = result else {
            Issue.record("the deadlock failed the run: \(result)")
            return
        }
        #expect(stats["packs_deleted"] == 1, "\(stats)")
        #expect(try db.count("SELECT count(*) FROM packs") == 0)
        // The server did break a deadlock (its statistics arrive within a second or so).
        var deadlocks = 0
        _ = try eventually {
            deadlocks = try db.count("SELECT deadlocks FROM pg_stat_database WHERE datname = $1", db.name)
            return deadlocks > 0
        }
        #expect(deadlocks == 1, "no deadlock happened: the test did not test anything")
    }

    @Test("any other error still fails the run, and so does a missing table")
    func otherErrorsFail() throws {
        let admin = try adminPack()
        let old = try posts(3, in: admin, age: "3 days")
        try refuse("DELETE", on: "posts", id: "\(old[1])", sqlState: "XX000")
        guard case .finished(_, .failed, _, let error) = try db.run("expire-content") else {
            Issue.record("an internal error did not fail the run")
            return
        }
        #expect(error?.contains("XX000") == true, "\(error ?? "")")
        try db.connection.execute(script: "DROP TABLE posts CASCADE")
        guard case .finished(_, .failed, _, let missing) = try db.run("expire-content") else {
            Issue.record("a missing table did not fail the run")
            return
        }
        #expect(missing?.contains("42P01") == true, "\(missing ?? "")")
    }

    @Test("the page sweep redoes a range one post at a time when the app references a post in it")
    func sweepWithReference() throws {
        // About 2,500 heap pages, nearly all due: the sweep takes over after the first batch.
        let admin = try adminPack()
        try db.connection.query(
            """
            INSERT INTO posts (pack_id, likes, created_at, body)
            SELECT $1, 0, now() - interval '3 days' - g * interval '1 second', repeat('post body ', 12)
            FROM generate_series(1, 100000) g
            """, admin)
        try db.connection.query("VACUUM ANALYZE posts")
        let referenced = try db.connection.query("SELECT id FROM posts ORDER BY id LIMIT 1 OFFSET 50000").first!.int64(
            "id")!
        try reports(on: referenced)
        let stats = try db.runSucceeding("expire-content")
        #expect(try stats.reported("swept_pages") > 0, "the sweep was not chosen: \(stats)")
        #expect(stats["posts_blocked"] == 1 && stats["posts_deleted"] == 99_999, "\(stats)")
        #expect(try db.count("SELECT count(*) FROM posts") == 1)
    }

    // MARK: The other jobs

    @Test("logout-inactive: a session the app's trigger refuses stays; the others are revoked")
    func refusedSession() throws {
        try db.connection.execute(
            script: """
                INSERT INTO users (email, password_hash) VALUES ('a@example.org', 'h');
                INSERT INTO sessions (user_id, last_seen_at) SELECT id, now() - interval '1 hour' FROM users, generate_series(1, 7);
                """)
        let refused = try db.connection.query("SELECT id FROM sessions ORDER BY id LIMIT 1").first!["id"]!
        try refuse("UPDATE", on: "sessions", id: refused)
        let output = LineOutput.capturing()
        let stats = try db.runSucceeding(
            "logout-inactive", "[jobs.logout-inactive]\nbatch_size = 3\n", logOutput: output)
        #expect(stats["sessions_revoked"] == 6 && stats["sessions_blocked"] == 1, "\(stats)")
        #expect(try db.count("SELECT count(*) FROM sessions WHERE revoked_at IS NULL") == 1)
        #expect(warnings(output).first?.contains("the app keeps sessions") == true, "\(output.lines)")
    }

    @Test("prune: a revoked session the app still references stays; the others go")
    func referencedSession() throws {
        try db.connection.execute(
            script: """
                INSERT INTO users (email, password_hash) VALUES ('a@example.org', 'h');
                INSERT INTO sessions (user_id, revoked_at) SELECT id, now() - interval '60 days' FROM users, generate_series(1, 5);
                CREATE TABLE audit (session_id uuid REFERENCES sessions(id));
                INSERT INTO audit SELECT id FROM sessions ORDER BY id LIMIT 1;
                """)
        let stats = try db.runSucceeding("prune", "[jobs.prune]\nbatch_size = 2\n")
        #expect(stats["sessions_deleted"] == 4 && stats["sessions_blocked"] == 1, "\(stats)")
        #expect(try db.count("SELECT count(*) FROM sessions") == 1)
    }

    @Test("leader-succession: a community the app's trigger refuses waits; the others are settled")
    func refusedCommunity() throws {
        try db.connection.execute(
            script: """
                INSERT INTO users (email, password_hash) VALUES ('a@example.org', 'h');
                INSERT INTO communities (name) SELECT 'c' || g FROM generate_series(1, 4) g;
                INSERT INTO community_members (community_id, user_id) SELECT c.id, u.id FROM communities c, users u;
                """)
        let refused = try db.connection.query("SELECT id FROM communities ORDER BY id LIMIT 1").first!["id"]!
        try refuse("UPDATE", on: "communities", id: refused)
        let stats = try db.runSucceeding("leader-succession")
        #expect(stats["leaders_appointed"] == 3 && stats["communities_blocked"] == 1, "\(stats)")
    }

    @Test(
        "send-temp-passwords: an expired temporary password the app's trigger refuses to clear stays; the others are cleared"
    )
    func refusedAccount() throws {
        try db.connection.execute(
            script: """
                INSERT INTO users (email, password_hash, temp_password_hash, temp_password_expires_at, must_change_password)
                SELECT 'u' || g || '@example.org', 'h', 't', now() - interval '1 minute', true FROM generate_series(1, 5) g;
                """)
        let refused = try db.connection.query("SELECT id FROM users ORDER BY id LIMIT 1").first!["id"]!
        try refuse("UPDATE", on: "users", id: refused)
        let stats = try db.runSucceeding("send-temp-passwords", "[jobs.send-temp-passwords]\nbatch_size = 2\n")
        #expect(stats["temp_passwords_cleared"] == 4 && stats["temp_passwords_blocked"] == 1, "\(stats)")
    }

    @Test("check calls a job unhealthy when its last three runs each blocked rows, and healthy again once they do not")
    func checkReportsKeepBlocking() throws {
        let admin = try adminPack()
        let old = try posts(2, in: admin, age: "3 days")
        try reports(on: old[0])
        let configuration = try db.configuration()
        func health() throws -> JobHealth {
            try #require(
                JobHealth.assess(db.connection, configuration: configuration).first { $0.job == "expire-content" })
        }
        for run in 1...3 {
            #expect(try health().healthy || run == 1, "unhealthy after \(run - 1) blocking run(s)")
            _ = try db.runSucceeding("expire-content")
        }
        let blocked = try health()
        #expect(!blocked.healthy, "\(blocked.reason)")
        #expect(blocked.reason.contains("posts_blocked=1"), "\(blocked.reason)")
        try db.connection.query("DELETE FROM reports")
        _ = try db.runSucceeding("expire-content")
        #expect(try health().healthy)
    }

    // MARK: leader-succession archives

    @Test("an archived community no longer names its leader, with the change row")
    func archiveClearsLeader() throws {
        let leader = try db.connection.query(
            """
            INSERT INTO users (email, password_hash, deleted_at) VALUES ('gone@example.org', 'h', now()) RETURNING id
            """
        ).first!.int64("id")!
        let community = try db.connection.query(
            "INSERT INTO communities (name, leader_id) VALUES ('c', $1) RETURNING id", leader
        )
        .first!.int64("id")!
        let stats = try db.runSucceeding("leader-succession")
        #expect(stats["communities_archived"] == 1)
        let row = try #require(
            try db.connection.query(
                "SELECT leader_id, archived_at IS NOT NULL AS archived FROM communities WHERE id = $1",
                community
            ).first)
        #expect(row.bool("archived") == true)
        #expect(row["leader_id"] == nil, "the archived community still names its leader")
        #expect(
            try db.count(
                """
                SELECT count(*) FROM community_leader_changes WHERE community_id = $1 AND previous_leader_id = $2 AND new_leader_id IS NULL
                """, community, leader) == 1)
    }

    // MARK: Configuration that cannot hurt

    @Test("a statement_timeout of 13 days works: the derived idle-in-transaction limit is clamped")
    func longStatementTimeout() throws {
        let admin = try adminPack()
        _ = try posts(2, in: admin, age: "3 days")
        let stats = try db.runSucceeding("expire-content", "[jobs.expire-content]\nstatement_timeout = \"13d\"\n")
        #expect(stats["posts_deleted"] == 2)
    }
}

/// Every job, against an app schema whose name needs quoting: a quote, a space and a capital letter.
@Suite struct QuotedSchemaTests {
    @Test("every job runs with app_schema = \"O'app Schema\"")
    func everyJob() throws {
        let db = try TestDatabase(appSchema: "O'app Schema")
        try db.connection.execute(
            script: """
                INSERT INTO users (email, password_hash, temp_password_hash, temp_password_expires_at)
                    VALUES ('a@example.org', 'h', 't', now() - interval '1 minute'), ('b@example.org', 'h', NULL, NULL);
                INSERT INTO sessions (user_id, last_seen_at, revoked_at) SELECT id, now() - interval '1 hour', NULL FROM users;
                INSERT INTO sessions (user_id, revoked_at) SELECT id, now() - interval '60 days' FROM users;
                INSERT INTO packs (name, is_admin, created_at) VALUES ('admin', true, now() - interval '9 days');
                INSERT INTO posts (pack_id, created_at) SELECT id, now() - interval '3 days' FROM packs, generate_series(1, 3);
                INSERT INTO communities (name) VALUES ('c');
                INSERT INTO community_members (community_id, user_id) SELECT c.id, u.id FROM communities c, users u;
                INSERT INTO password_reset_requests (email) VALUES ('b@example.org');
                """)
        // The operator SQL job's grant (`migrate --grant` gives operator jobs nothing).
        try db.connection.query(
            "GRANT UPDATE (display_name) ON users TO \(quoteIdentifier(TemporaryPostgres.workerRole))")
        let mail = db.scratchPath("mail")
        try FileManager.default.createDirectory(atPath: mail, withIntermediateDirectories: true)
        let extra = """
            [mail]
            transport = "file"
            directory = "\(mail)"

            [jobs.expire-content]
            batch_size = 1

            [jobs.send-temp-passwords]
            bcrypt_cost = 4

            [jobs.touch]
            schedule = "@hourly"
            sql = "UPDATE \\"O'app Schema\\".users SET display_name = 'x' WHERE email = 'a@example.org'"
            """
        let configuration = try db.configuration(extra)
        let transport = try MailSetup.transport(for: configuration.jobs, configuration: configuration)
        var stats: [String: JobStats] = [:]
        for job in configuration.jobNames {
            stats[job] = try db.runSucceeding(job, extra, mail: transport)
        }
        #expect(stats["expire-content"]?["posts_deleted"] == 3)
        #expect(stats["logout-inactive"]?["sessions_revoked"] == 2)
        #expect(stats["send-temp-passwords"]?["sent"] == 1)
        #expect(stats["send-temp-passwords"]?["temp_passwords_cleared"] == 1)
        #expect(stats["leader-succession"]?["leaders_appointed"] == 1)
        #expect(stats["prune"]?["sessions_deleted"] == 2)
        #expect(stats["touch"]?["rows"] == 1)
        #expect(try SchemaCheck.check(db.connection, appSchema: db.appSchema).problems.isEmpty)
    }
}
