import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

/// Every job on a `posts` partitioned by day, as the restricted worker role, and
/// `expire-content`'s page sweep, which works partition by partition.
@Suite struct PartitionedJobsTests {
    /// Runs `expire-content` and checks it against each post's deadline on the clock
    /// before and after the run (posts come due while it runs): every post due before
    /// it is gone, none it deleted was due only after it, and `posts_deleted` is what went.
    @discardableResult
    static func expireJudged(_ db: TestDatabase, sourceLocation: SourceLocation = #_sourceLocation) throws -> JobStats {
        try db.connection.execute(
            script: """
                DROP TABLE IF EXISTS before, clock;
                CREATE TABLE before AS SELECT id, created_at + (86400 + 86400 * least(1.0, greatest(likes, 0)::float8 / 100))
                    * interval '1 second' AS deadline FROM posts;
                CREATE TABLE clock (started timestamptz, ended timestamptz);
                INSERT INTO clock (started) VALUES (clock_timestamp());
                """)
        #expect(
            try db.count("SELECT count(*) FROM before, clock WHERE deadline <= started") > 1000,
            sourceLocation: sourceLocation)
        let stats = try db.runSucceeding("expire-content")
        try db.connection.execute(script: "UPDATE clock SET ended = clock_timestamp()")
        let gone = "SELECT count(*) FROM before b, clock WHERE NOT EXISTS (SELECT FROM posts p WHERE p.id = b.id)"
        let deleted = try db.count(gone)
        #expect(stats["posts_deleted"] == deleted, "\(stats)", sourceLocation: sourceLocation)
        #expect(
            try db.count(gone + " AND b.deadline > clock.ended") == 0, "a post was deleted before its lifetime",
            sourceLocation: sourceLocation)
        #expect(
            try db.count(
                "SELECT count(*) FROM posts p JOIN before b USING (id), clock WHERE b.deadline <= clock.started")
                == 0, "a post due before the run is left", sourceLocation: sourceLocation)
        return stats
    }

    @Test(
        "every job runs on a partitioned posts as the worker role, whose grants on posts cover the partitions, later ones too",
        arguments: PostsLayout.partitioned)
    func everyJob(_ layout: PostsLayout) throws {
        let db = try TestDatabase(posts: layout)
        let admin = try db.insertPack(age: "9 days", admin: true)
        // Posts on every day but the newest: likes 0–149, so some wait for their likes.
        try db.connection.query(
            """
            INSERT INTO posts (pack_id, likes, created_at)
            SELECT $1, g % 150, now() - (g % ($2 * 24 * 60)) * interval '1 minute' FROM generate_series(1, 20000) g
            """, admin, PostsLayout.daysBack - 1)
        if layout != .daily {
            // Outside every daily partition: the DEFAULT one.
            try db.insertPost(in: admin, likes: 0, age: "1 year")
        }
        // A partition made after the grants, by the app or by pg_partman, and posts in it.
        if layout == .partman {
            try db.connection.execute(
                script: """
                    UPDATE partman.part_config SET premake = premake + 1 WHERE parent_table = 'public.posts';
                    SELECT partman.run_maintenance('public.posts');
                    """)
        } else {
            try db.addDailyPartition(PostsLayout.daysAhead + 1)
        }
        try db.connection.query(
            "INSERT INTO posts (pack_id, created_at) VALUES ($1, now() + ($2 + 1) * interval '1 day')", admin,
            PostsLayout.daysAhead)
        for job in BuiltInJob.allCases.map(\.rawValue) where job != "expire-content" {
            #expect(throws: Never.self, "\(job)") { try db.runSucceeding(job) }
        }
        try Self.expireJudged(db)
        // The grants are on posts alone: a query naming a partition is refused the worker.
        let worker = try db.connectAsWorker()
        let partition = try db.postPartitions().first { !$0.hasSuffix("default") }!
        #expect(throws: PostgresError.self) { try worker.query("SELECT count(*) FROM \(quoteIdentifier(partition))") }
    }

    @Test(
        "the page sweep samples and sweeps a large partition on its own pages; rows at the same addresses in other partitions stay",
        arguments: [PostsLayout.daily, .partman])
    func sweepPerPartition(_ layout: PostsLayout) throws {
        let db = try TestDatabase(posts: layout)
        let admin = try db.insertPack(age: "9 days", admin: true)
        // 150,000 posts in the partition of two days ago (ages 24–48 h and more, likes
        // 0–149: most due, some waiting on their likes), and as many young ones in
        // today's, at the same heap addresses.
        try db.connection.query(
            """
            INSERT INTO posts (pack_id, likes, created_at, body)
            SELECT $1::bigint, g % 150, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '2 days'
                   + (g % 1440) * interval '1 minute', repeat('post body ', 12)
            FROM generate_series(1, 150000) g
            UNION ALL
            SELECT $1::bigint, 0, now() - (g % 60) * interval '1 second', repeat('post body ', 12) FROM generate_series(1, 150000) g
            """, admin)
        try db.connection.query("VACUUM ANALYZE posts")
        let young = try db.count("SELECT count(*) FROM posts WHERE created_at > now() - interval '1 hour'")
        let stats = try Self.expireJudged(db)
        #expect(try stats.reported("swept_pages") > 0, "the sweep was not chosen: \(stats)")
        #expect(try db.count("SELECT count(*) FROM posts WHERE created_at > now() - interval '1 hour'") == young)
    }
}

/// `retire_partitions`: partitions wholly past `max_lifetime` dropped whole.
@Suite struct PartitionRetirementTests {
    static let retire = "[jobs.expire-content]\nretire_partitions = true\n"

    /// Makes the worker role a member of a role of this database's own that owns `posts`
    /// and its partitions, as retiring partitions needs (only an owner may detach or drop them).
    static func workerOwnsPosts(_ db: TestDatabase) throws {
        let owner = "owner of " + db.name
        try db.connection.execute(
            script: """
                CREATE ROLE \(quoteIdentifier(owner));
                GRANT \(quoteIdentifier(owner)) TO \(quoteIdentifier(TemporaryPostgres.workerRole));
                ALTER TABLE posts OWNER TO \(quoteIdentifier(owner));
                """)
        for partition in try db.postPartitions() {
            try db.connection.execute(
                script: "ALTER TABLE \(quoteIdentifier(partition)) OWNER TO \(quoteIdentifier(owner))")
        }
    }

    /// One post a day on every day, in an admin pack; returns the number of posts in
    /// partitions wholly past 48 h (those whose day ended 48 h ago or more).
    static func postPerDay(_ db: TestDatabase) throws -> (pack: Int64, retirable: Int) {
        let pack = try db.insertPack(age: "9 days", admin: true)
        try db.connection.query(
            """
            INSERT INTO posts (pack_id, created_at)
            SELECT $1, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + d * interval '1 day' + interval '1 hour'
            FROM generate_series(-$2::int, 0) d
            """, pack, PostsLayout.daysBack)
        let retirable = try db.count(
            """
            SELECT count(*) FROM posts
            WHERE created_at < date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 day'
              AND date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 day' <= now() - interval '48 hours'
            """)
        return (pack, retirable)
    }

    /// Partitions whose upper bound is at least 48 h past.
    static func retirablePartitions(_ db: TestDatabase) throws -> Int {
        try db.count(
            """
            SELECT count(*) FROM pg_partition_tree('posts') t JOIN pg_class c ON c.oid = t.relid
            WHERE t.isleaf AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
              AND (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']*)''\\)'))[1]::timestamptz <= now() - interval '48 hours'
            """)
    }

    @Test(
        "partitions wholly past max_lifetime are dropped in one run, counted; DEFAULT and younger ones stay; a dry run names them and drops none",
        arguments: PostsLayout.partitioned)
    func retiresWholePartitions(_ layout: PostsLayout) throws {
        let db = try TestDatabase(posts: layout)
        try Self.workerOwnsPosts(db)
        let (pack, _) = try Self.postPerDay(db)
        if layout != .daily { try db.insertPost(in: pack, likes: 0, age: "1 year") }
        let retirable = try Self.retirablePartitions(db)
        #expect(retirable == PostsLayout.daysBack - 2)
        let partitionsBefore = try db.postPartitions().count

        let log = LineOutput.capturing()
        let preview = try db.runSucceeding("expire-content", Self.retire, dryRun: true, logOutput: log)
        #expect(preview["partitions_dropped"] == retirable, "\(preview)")
        #expect(log.lines.filter { $0.contains("would drop a partition of posts") }.count == retirable)
        #expect(try db.postPartitions().count == partitionsBefore)

        // Off by default: nothing dropped, the old posts deleted row by row.
        let plain = try db.runSucceeding("expire-content")
        #expect(!plain.counters.contains { $0.name == "partitions_dropped" }, "\(plain)")
        #expect(try db.postPartitions().count == partitionsBefore)
        // Put the old posts back to see the partitions' posts counted when dropped.
        try db.connection.query(
            """
            INSERT INTO posts (pack_id, created_at)
            SELECT $1, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + d * interval '1 day' + interval '1 hour'
            FROM generate_series(-$2::int, -3) d
            """, pack, PostsLayout.daysBack)
        let stats = try db.runSucceeding("expire-content", Self.retire)
        #expect(stats["partitions_dropped"] == retirable, "\(stats)")
        #expect(stats["posts_dropped"] == PostsLayout.daysBack - 2, "\(stats)")
        #expect(try Self.retirablePartitions(db) == 0)
        #expect(try db.postPartitions().count == partitionsBefore - retirable)
        #expect(try db.postPartitions().contains { $0.hasSuffix("default") } == (layout != .daily))
        // Nothing detached is left behind, and a second run finds nothing.
        #expect(
            try db.count(
                "SELECT count(*) FROM pg_class WHERE relname LIKE 'posts_p%' AND relkind = 'r' AND NOT relispartition")
                == 0)
        let again = try db.runSucceeding("expire-content", Self.retire)
        #expect(again["partitions_dropped"] == 0, "\(again)")
    }

    @Test(
        "a concurrent detach killed while it waits for an app transaction is finished (FINALIZE) and dropped at the next run"
    )
    func interruptedDetachFinalized() async throws {
        let db = try TestDatabase(posts: .daily)
        try Self.workerOwnsPosts(db)
        try Self.postPerDay(db)
        let retirable = try Self.retirablePartitions(db)
        // An app transaction that has read posts: the detach's second step waits for it.
        let app = try TemporaryPostgres.shared.connect(database: db.name)
        try app.query("BEGIN")
        try app.query("SELECT count(*) FROM posts")
        let name = db.name
        // The detach waits until it is killed: its timeouts are far longer than the poll
        // below can be held up on a loaded machine (an async test may wait minutes for a
        // thread), so that the poll always finds it waiting.
        let run = BackgroundThread {
            try db.run("expire-content", Self.retire + "lock_timeout = \"15m\"\nstatement_timeout = \"15m\"\n")
        }
        // Kill the worker's backend while its detach waits.
        let waiting = try await eventually(timeout: .seconds(600)) {
            try db.count(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = $1 AND pid <> pg_backend_pid() AND query LIKE '%DETACH PARTITION%CONCURRENTLY%'
                  AND wait_event_type = 'Lock'
                """, name) == 1
        }
        if !waiting {
            let activity = try db.connection.query(
                "SELECT pid, state, wait_event_type, wait_event, left(query, 120) AS query FROM pg_stat_activity WHERE datname = $1",
                name
            ).rows.map {
                "\($0.string("pid") ?? "") \($0.string("state") ?? "") \($0.string("wait_event_type") ?? "")/\($0.string("wait_event") ?? ""): \($0.string("query") ?? "")"
            }
            Issue.record("the detach never waited: \(activity); the run: \(String(describing: try? run.value()))")
            return
        }
        try db.connection.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND query LIKE '%DETACH PARTITION%CONCURRENTLY%'",
            name)
        _ = try? run.value()
        #expect(
            try db.count("SELECT count(*) FROM pg_inherits WHERE inhparent = 'posts'::regclass AND inhdetachpending")
                == 1)
        try app.query("COMMIT")
        let stats = try db.runSucceeding("expire-content", Self.retire)
        #expect(stats["partitions_dropped"] == retirable, "\(stats)")
        #expect(
            try db.count("SELECT count(*) FROM pg_inherits WHERE inhparent = 'posts'::regclass AND inhdetachpending")
                == 0)
        #expect(try Self.retirablePartitions(db) == 0)
        #expect(
            try db.count(
                "SELECT count(*) FROM pg_class WHERE relname LIKE 'posts_p%' AND relkind = 'r' AND NOT relispartition")
                == 0)
    }

    @Test(
        "a concurrent detach that gives up waiting for an app transaction stays pending; the run succeeds and starts no other; the next run finishes them all"
    )
    func detachTimeoutLeavesOnePending() throws {
        let db = try TestDatabase(posts: .daily)
        try Self.workerOwnsPosts(db)
        try Self.postPerDay(db)
        let retirable = try Self.retirablePartitions(db)
        let app = try TemporaryPostgres.shared.connect(database: db.name)
        try app.query("BEGIN")
        try app.query("SELECT count(*) FROM posts")
        let stats = try db.runSucceeding("expire-content", Self.retire + "lock_timeout = \"500ms\"\n")
        #expect(stats["partitions_dropped"] == 0, "\(stats)")
        #expect(stats["partitions_waiting"] == 1, "\(stats)")
        #expect(
            try db.count("SELECT count(*) FROM pg_inherits WHERE inhparent = 'posts'::regclass AND inhdetachpending")
                == 1)
        try app.query("COMMIT")
        let next = try db.runSucceeding("expire-content", Self.retire)
        #expect(next["partitions_dropped"] == retirable, "\(next)")
        #expect(try Self.retirablePartitions(db) == 0)
    }

    @Test(
        "with a DEFAULT partition, an app transaction holding posts: caretaker waits briefly, gives up, the app's statements never wait longer; the next run drops it"
    )
    func busyPartitionRetriedNextRun() throws {
        let db = try TestDatabase(posts: .dailyWithDefault)
        try Self.workerOwnsPosts(db)
        let (pack, _) = try Self.postPerDay(db)
        let retirable = try Self.retirablePartitions(db)
        let before = try db.postPartitions().count
        let holder = try TemporaryPostgres.shared.connect(database: db.name)
        try holder.query("BEGIN")
        try holder.query("SELECT count(*) FROM posts")
        // The app writes meanwhile, each statement waiting at most 1 s for a lock.
        let name = db.name
        let app = BackgroundThread { () throws -> Int in
            let connection = try TemporaryPostgres.shared.connect(database: name)
            try connection.query("SET lock_timeout = '1s'")
            for _ in 0..<20 {
                try connection.query("INSERT INTO posts (pack_id) VALUES ($1)", pack)
                Thread.sleep(forTimeInterval: 0.05)
            }
            return 20
        }
        let stats = try db.runSucceeding("expire-content", Self.retire)
        #expect(stats["partitions_dropped"] == 0, "\(stats)")
        #expect(stats["partitions_waiting"] == retirable, "\(stats)")
        #expect(try app.value() == 20, "an app statement waited on caretaker past its lock_timeout")
        #expect(try db.postPartitions().count == before)
        try holder.query("COMMIT")
        let next = try db.runSucceeding("expire-content", Self.retire)
        #expect(next["partitions_dropped"] == retirable, "\(next)")
        #expect(try Self.retirablePartitions(db) == 0)
    }

    @Test(
        "a pack whose liked posts are dropped with their partition is looked at again and expires by its popularity without them; no post younger goes"
    )
    func packsAfterDrop() throws {
        let db = try TestDatabase(posts: .daily)
        try Self.workerOwnsPosts(db)
        // A pack 30 hours old, popular only by its 100-like post in a partition past
        // max_lifetime (so its lifetime is 48 h), and a young post of its own.
        let pack = try db.insertPack(age: "30 hours")
        try db.connection.query(
            """
            INSERT INTO posts (pack_id, likes, created_at)
            VALUES ($1, 100, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '5 days')
            """, pack)
        let other = try db.insertPack(age: "1 hour")
        let young = try db.insertPost(in: other, likes: 0, age: "1 hour")
        let first = try db.runSucceeding("expire-content", Self.retire)
        #expect(first["packs_deleted"] == 0, "packs are expired before posts: \(first)")
        #expect(try first.reported("partitions_dropped") >= 1, "\(first)")
        #expect(try db.count("SELECT count(*) FROM packs WHERE id = $1", pack) == 1)
        let second = try db.runSucceeding("expire-content", Self.retire)
        #expect(second["packs_deleted"] == 1, "\(second)")
        #expect(try db.count("SELECT count(*) FROM packs WHERE id = $1", pack) == 0)
        #expect(try db.count("SELECT count(*) FROM posts WHERE id = $1", young) == 1)
    }
}
