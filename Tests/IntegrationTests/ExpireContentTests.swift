import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

/// `expire-content` against a real PostgreSQL: lifetimes, boundaries, packs before posts, locks, batches.
@Suite struct ExpireContentTests {
    let db: TestDatabase

    init() throws {
        db = try TestDatabase()
    }

    /// Inserts a pack created `age` ago (an interval literal such as `'24 hours'`); returns its id.
    func pack(age: String, admin: Bool = false, members: Int = 0) throws -> Int64 {
        try db.insertPack(age: age, admin: admin, members: members)
    }

    @discardableResult
    func post(in pack: Int64, likes: Int, age: String) throws -> Int64 {
        try db.insertPost(in: pack, likes: likes, age: age)
    }

    func exists(post id: Int64) throws -> Bool {
        try db.count("SELECT count(*) FROM posts WHERE id = $1", id) == 1
    }

    func exists(pack id: Int64) throws -> Bool {
        try db.count("SELECT count(*) FROM packs WHERE id = $1", id) == 1
    }

    @Test(
        "a post lives L(likes): kept one minute before its deadline, deleted one minute after",
        arguments: [(0, 24 * 60), (50, 36 * 60), (100, 48 * 60), (250, 48 * 60), (-7, 24 * 60)])
    func postBoundaries(likes: Int, lifetimeMinutes: Int) throws {
        let admin = try pack(age: "100 days", admin: true)
        let early = try post(in: admin, likes: likes, age: "\(lifetimeMinutes - 1) minutes")
        let late = try post(in: admin, likes: likes, age: "\(lifetimeMinutes + 1) minutes")
        let stats = try db.runSucceeding("expire-content")
        #expect(try exists(post: early), "a post with \(likes) likes was deleted before its deadline")
        #expect(try !exists(post: late), "a post with \(likes) likes outlived its deadline")
        #expect(stats["posts_deleted"] == 1)
        #expect(stats["packs_deleted"] == 0)
    }

    @Test("a pack's popularity is members plus the likes of its posts")
    func packBoundaries() throws {
        // 30 members + 20 likes = 50 → 36 h.
        let keptPack = try pack(age: "\(36 * 60 - 1) minutes", members: 30)
        try post(in: keptPack, likes: 20, age: "1 minute")
        let gonePack = try pack(age: "\(36 * 60 + 1) minutes", members: 30)
        try post(in: gonePack, likes: 20, age: "1 minute")
        // No members, no likes → 24 h.
        let lonely = try pack(age: "\(24 * 60 + 1) minutes")
        let stats = try db.runSucceeding("expire-content")
        #expect(try exists(pack: keptPack))
        #expect(try !exists(pack: gonePack))
        #expect(try !exists(pack: lonely))
        #expect(stats["packs_deleted"] == 2)
        #expect(stats["posts_deleted"] == 1, "the fresh post of the deleted pack goes with it and is counted")
    }

    @Test("a pack's likes and members are counted only up to its threshold, with the same verdict as the full count")
    func packThreshold() throws {
        // At 30 h a pack is due when its popularity is at most 100 × 6 ÷ 24 = 25.
        func posts(_ pack: Int64, likes: [Int]) throws {
            for like in likes { try post(in: pack, likes: like, age: "1 minute") }
        }
        let over = try pack(age: "30 hours")  // 40 posts of 1 like: past 25 after 26 of them
        try posts(over, likes: Array(repeating: 1, count: 40))
        let under = try pack(age: "30 hours")  // 20 likes in all
        try posts(under, likes: Array(repeating: 1, count: 20))
        let atThreshold = try pack(age: "30 hours", members: 5)  // 5 + 20 = 25
        try posts(atThreshold, likes: [10, 10])
        let manyMembers = try pack(age: "30 hours", members: 26)
        let negative = try pack(age: "30 hours")  // 30 − 10 = 20, but a negative like counts as 0: 30
        try posts(negative, likes: [30, -10])
        let old = try pack(age: "49 hours", members: 3)  // past max_lifetime: due at any popularity
        try posts(old, likes: [500, 500])
        // One post's likes against the threshold (the index probe that settles most packs, then the count).
        let oneAt = try pack(age: "30 hours")
        try posts(oneAt, likes: [25, 0])
        let oneOver = try pack(age: "30 hours")
        try posts(oneOver, likes: [0, 26])
        let oneFarOver = try pack(age: "30 hours")
        try posts(oneFarOver, likes: [27])
        let stats = try db.runSucceeding("expire-content")
        #expect(try exists(pack: over))
        #expect(try !exists(pack: under))
        #expect(try !exists(pack: atThreshold))
        #expect(try exists(pack: manyMembers))
        #expect(try exists(pack: negative), "a negative like made a pack go before its likes' deadline")
        #expect(try !exists(pack: old))
        #expect(try !exists(pack: oneAt))
        #expect(try exists(pack: oneOver))
        #expect(try exists(pack: oneFarOver))
        #expect(stats["packs_deleted"] == 4)
    }

    @Test("admin packs never expire, but their posts do")
    func adminPacks() throws {
        let admin = try pack(age: "400 days", admin: true)
        let old = try post(in: admin, likes: 0, age: "3 days")
        let fresh = try post(in: admin, likes: 0, age: "1 hour")
        try db.runSucceeding("expire-content")
        #expect(try exists(pack: admin))
        #expect(try !exists(post: old))
        #expect(try exists(post: fresh))
    }

    @Test("a deleted pack takes its posts, and stats count them")
    func packWithPosts() throws {
        let doomed = try pack(age: "3 days")
        for _ in 0..<3 { try post(in: doomed, likes: 0, age: "1 hour") }
        let admin = try pack(age: "3 days", admin: true)
        try post(in: admin, likes: 0, age: "2 days")
        let stats = try db.runSucceeding("expire-content")
        #expect(stats["packs_deleted"] == 1)
        #expect(stats["posts_deleted"] == 4)
        #expect(try db.count("SELECT count(*) FROM posts WHERE pack_id = $1", doomed) == 0)
    }

    @Test("dry run reports what would go and changes nothing")
    func dryRun() throws {
        let doomed = try pack(age: "3 days")
        try post(in: doomed, likes: 0, age: "1 hour")
        let admin = try pack(age: "3 days", admin: true)
        try post(in: admin, likes: 0, age: "2 days")
        try post(in: admin, likes: 0, age: "2 hours")
        let stats = try db.runSucceeding("expire-content", dryRun: true)
        #expect(stats["packs_deleted"] == 1)
        #expect(stats["posts_deleted"] == 2)
        #expect(try db.count("SELECT count(*) FROM packs") == 2)
        #expect(try db.count("SELECT count(*) FROM posts") == 3)
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs WHERE dry_run") == 1)
    }

    @Test("a post locked by the app is skipped without waiting and deleted by the next run")
    func lockedPostSkipped() throws {
        let admin = try pack(age: "3 days", admin: true)
        let locked = try post(in: admin, likes: 0, age: "2 days")
        let free = try post(in: admin, likes: 0, age: "2 days")
        let app = try TemporaryPostgres.shared.connect(database: db.name)
        try app.query("BEGIN")
        try app.query("SELECT id FROM posts WHERE id = $1 FOR UPDATE", locked)
        let started = ContinuousClock.now
        let stats = try db.runSucceeding("expire-content", "[jobs.expire-content]\nlock_timeout = \"10s\"\n")
        #expect(ContinuousClock.now - started < .seconds(5), "the run waited for the app's lock")
        #expect(stats["posts_deleted"] == 1)
        #expect(try exists(post: locked))
        #expect(try !exists(post: free))
        try app.query("COMMIT")
        #expect(try db.runSucceeding("expire-content")["posts_deleted"] == 1)
        #expect(try !exists(post: locked))
    }

    @Test("a pack whose post the app holds is left for the next run after lock_timeout")
    func lockedCascadeSkipped() throws {
        let blocked = try pack(age: "3 days")
        let held = try post(in: blocked, likes: 0, age: "1 hour")
        let other = try pack(age: "3 days")
        try post(in: other, likes: 0, age: "1 hour")
        let app = try TemporaryPostgres.shared.connect(database: db.name)
        try app.query("BEGIN")
        try app.query("SELECT id FROM posts WHERE id = $1 FOR UPDATE", held)
        let stats = try db.runSucceeding("expire-content", "[jobs.expire-content]\nlock_timeout = \"200ms\"\n")
        #expect(stats["packs_deleted"] == 1)
        #expect(try exists(pack: blocked))
        #expect(try !exists(pack: other))
        try app.query("ROLLBACK")
        #expect(try db.runSucceeding("expire-content")["packs_deleted"] == 1)
        #expect(try !exists(pack: blocked))
    }

    /// The like's UPDATE holds its post; the run must wait for it and judge the pack
    /// with the like counted, not delete it at the popularity it had a moment before.
    @Test("a like committed while the run is deleting its pack counts: the pack is kept")
    func likeDuringPackDeletion() throws {
        // One minute past 24 h with no likes: due. One like (of 100 for full) adds 14.4 minutes.
        let racing = try pack(age: "\(24 * 60 + 1) minutes")
        let liked = try post(in: racing, likes: 0, age: "1 hour")
        let app = try TemporaryPostgres.shared.connect(database: db.name)
        try app.query("BEGIN")
        try app.query("UPDATE posts SET likes = likes + 1 WHERE id = $1", liked)
        let db = self.db
        let run = BackgroundThread {
            try db.runSucceeding("expire-content", "[jobs.expire-content]\nlock_timeout = \"60s\"\n")
        }
        // The race: the run is waiting for the like's lock before the like commits. Without
        // it (a slow start would have the run begin after the COMMIT) the test proves nothing.
        let waiting = eventually(timeout: .seconds(50)) {
            (try? db.count(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = $1 AND application_name = 'caretaker/expire-content' AND wait_event_type = 'Lock'
                """, db.name)) == 1
        }
        try app.query("COMMIT")
        try #require(waiting, "the run never waited for the like's lock: the race did not happen")
        let stats = try run.value()
        #expect(try exists(pack: racing), "the pack was deleted at the popularity it had before the like")
        #expect(stats["packs_deleted"] == 0)
    }

    @Test("2,500 due posts go in batches of batch_size")
    func batches() throws {
        let admin = try pack(age: "3 days", admin: true)
        try db.connection.query(
            """
            INSERT INTO posts (pack_id, likes, created_at)
            SELECT $1, 0, now() - interval '3 days' - g * interval '1 second' FROM generate_series(1, 2500) g
            """, admin)
        try post(in: admin, likes: 0, age: "1 hour")
        let stats = try db.runSucceeding("expire-content", "[jobs.expire-content]\nbatch_size = 1000\n")
        #expect(stats["posts_deleted"] == 2500)
        #expect(stats["batches"] == 3)
        #expect(try db.count("SELECT count(*) FROM posts") == 1)
    }

    @Test("max_runtime stops between batches; the next run finishes the work")
    func maxRuntime() throws {
        let admin = try pack(age: "3 days", admin: true)
        try db.connection.query(
            """
            INSERT INTO posts (pack_id, likes, created_at)
            SELECT $1, 0, now() - interval '3 days' FROM generate_series(1, 50) g
            """, admin)
        let stats = try db.runSucceeding(
            "expire-content", "[jobs.expire-content]\nbatch_size = 10\nmax_runtime = \"1ms\"\n")
        #expect(try stats.reported("posts_deleted") < 50)
        #expect(
            try db.runSucceeding("expire-content").reported("posts_deleted") == 50 - stats.reported("posts_deleted"))
    }

    @Test("configured lifetimes and popularity thresholds are honoured")
    func configuredLifetimes() throws {
        let admin = try pack(age: "100 days", admin: true)
        // min 1h, max 3h, full at 10 likes: 5 likes → 2h.
        let kept = try post(in: admin, likes: 5, age: "119 minutes")
        let gone = try post(in: admin, likes: 5, age: "121 minutes")
        try db.runSucceeding(
            "expire-content",
            """
            [jobs.expire-content]
            min_lifetime = "1h"
            max_lifetime = "3h"
            post_full_popularity = 10
            """)
        #expect(try exists(post: kept))
        #expect(try !exists(post: gone))
    }

    @Test("with nothing due, the post query reads through the index, not the table")
    func usesIndex() throws {
        let admin = try pack(age: "1 hour", admin: true)
        try db.connection.query(
            """
            INSERT INTO posts (pack_id, likes, created_at)
            SELECT $1, 0, now() - g * interval '1 second' FROM generate_series(1, 20000) g
            """, admin)
        try db.connection.query("ANALYZE posts")
        let plan = try db.connection.query(
            """
            EXPLAIN SELECT s.id FROM posts s
            WHERE s.created_at <= now() - interval '24 hours' AND (s.created_at, s.id) > ('-infinity', 0)
            ORDER BY s.created_at, s.id LIMIT 1000 FOR UPDATE SKIP LOCKED
            """
        ).rows.compactMap { $0[0] }.joined(separator: "\n")
        #expect(plan.contains("posts_created_idx"), "plan:\n\(plan)")
        #expect(!plan.contains("Seq Scan"), "plan:\n\(plan)")
    }
}

/// The page sweep that takes over when much of a large table is due.
@Suite struct ExpireContentSweepTests {
    /// A fresh database whose posts `insert` adds (`$1`: an admin pack's id, so only posts expire), vacuumed.
    static func database(posts insert: String) throws -> TestDatabase {
        let db = try TestDatabase()
        let admin = try db.connection.query(
            "INSERT INTO packs (name, is_admin, created_at) VALUES ('a', true, now() - interval '9 days') RETURNING id"
        )
        .first!.int64("id")!
        try db.connection.query(insert, admin)
        try db.connection.query("VACUUM ANALYZE posts")
        return db
    }

    @Test("a large backlog is swept page range by page range; locked rows are skipped, the rest are exact")
    func sweep() throws {
        // 150,000 posts: likes 0–149 and ages 0–72 h, so most are due and some wait on their likes.
        let db = try Self.database(
            posts: """
                INSERT INTO posts (pack_id, likes, created_at, body)
                SELECT $1, g % 150, now() - (g % 4320) * interval '1 minute', repeat('post body ', 12)
                FROM generate_series(1, 150000) g
                """)
        // Judged on the clock before and after the run, post by post: about 35 posts
        // come due every minute, so a count taken before the run is not what it finds
        // (a loaded run deleted one more than had been due at the count).
        try db.connection.execute(
            script: """
                CREATE TABLE before AS SELECT id, created_at + (86400 + 86400 * least(1.0, greatest(likes, 0)::float8 / 100))
                    * interval '1 second' AS deadline FROM posts;
                CREATE TABLE clock (started timestamptz, ended timestamptz);
                """)
        let locked = try db.connection.query(
            """
            SELECT id FROM posts WHERE created_at < now() - interval '60 hours' ORDER BY id LIMIT 1
            """
        ).first!.int64("id")!
        let app = try TemporaryPostgres.shared.connect(database: db.name)
        try app.query("BEGIN")
        try app.query("SELECT 1 FROM posts WHERE id = $1 FOR UPDATE", locked)
        try db.connection.query("INSERT INTO clock (started) VALUES (clock_timestamp())")
        let stats = try db.runSucceeding("expire-content")
        try db.connection.query("UPDATE clock SET ended = clock_timestamp()")
        #expect(try stats.reported("swept_pages") > 0, "the sweep was not chosen: \(stats)")
        let gone = "SELECT count(*) FROM before b, clock WHERE NOT EXISTS (SELECT FROM posts p WHERE p.id = b.id)"
        #expect(try stats.reported("posts_deleted") == db.count(gone), "\(stats)")
        #expect(try db.count(gone + " AND b.deadline > clock.ended") == 0, "a post was deleted before its deadline")
        #expect(try db.count("SELECT count(*) FROM posts WHERE id = $1", locked) == 1)
        #expect(
            try db.count(
                "SELECT count(*) FROM posts p JOIN before b USING (id), clock WHERE b.deadline <= clock.started")
                == 1, "a post due before the run is left besides the locked one")
        #expect(try db.count("SELECT count(*) FROM before, clock WHERE deadline <= started") > 50_000)
        #expect(try stats.reported("batch_max_ms") > 0)
        try app.query("ROLLBACK")
        // The locked post, and any that came due since.
        #expect(try db.runSucceeding("expire-content").reported("posts_deleted") >= 1)
        #expect(
            try db.count("SELECT count(*) FROM posts WHERE id = $1", locked) == 0, "the locked post outlived its lock")
    }

    @Test("a backlog inside the popularity window (nothing past the maximum lifetime) is swept too")
    func sweepWithinWindow() throws {
        // Ages 30–46 h: with 0–19 likes (lifetime ≤ 28.6 h) all are due; every 20th post
        // has 100 likes (48 h) and is not.
        let db = try Self.database(
            posts: """
                INSERT INTO posts (pack_id, likes, created_at, body)
                SELECT $1, CASE WHEN g % 20 = 0 THEN 100 ELSE g % 20 END,
                       now() - interval '30 hours' - (g % 960) * interval '1 minute', repeat('post body ', 12)
                FROM generate_series(1, 150000) g
                """)
        let stats = try db.runSucceeding("expire-content")
        #expect(try stats.reported("swept_pages") > 0, "the sweep was not chosen: \(stats)")
        #expect(stats["posts_deleted"] == 142_500, "\(stats)")
        #expect(
            try db.count("SELECT count(*) FROM posts WHERE likes = 100") == 7_500,
            "a post was deleted before its deadline")
    }

    @Test("a large table with little due stays on the index path, even after a full batch")
    func littleDueStaysOnIndex() throws {
        // 150,000 young posts and 1,500 due ones (more than one batch of 1,000), half
        // past the maximum lifetime and half due within the popularity window.
        let db = try Self.database(
            posts: """
                INSERT INTO posts (pack_id, likes, created_at, body)
                SELECT $1::bigint, 0, now() - (g % 1200) * interval '1 minute', repeat('post body ', 12)
                FROM generate_series(1, 150000) g
                UNION ALL
                SELECT $1::bigint, CASE WHEN g % 2 = 0 THEN 0 ELSE 10 END,
                       now() - CASE WHEN g % 2 = 0 THEN interval '50 hours' ELSE interval '27 hours' END - g * interval '1 second', ''
                FROM generate_series(1, 1500) g
                """)
        let stats = try db.runSucceeding("expire-content")
        #expect(!stats.counters.contains { $0.name == "swept_pages" }, "the sweep was chosen for 1% due: \(stats)")
        #expect(stats["posts_deleted"] == 1_500, "\(stats)")
        #expect(try db.count("SELECT count(*) FROM posts") == 150_000)
    }
}
