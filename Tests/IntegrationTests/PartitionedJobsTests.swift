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
        try flushStatistics(db)
        let retirable = try db.count(
            """
            SELECT count(*) FROM posts
            WHERE created_at < date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '2 days'
            """)
        return (pack, retirable)
    }

    /// Hands this connection's row counts to PostgreSQL's statistics now (they are
    /// otherwise sent within a second or so), where `posts_dropped` reads them.
    static func flushStatistics(_ db: TestDatabase) throws {
        try db.connection.query("SELECT pg_stat_force_next_flush()")
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
        try Self.flushStatistics(db)
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

    @Test(
        "posts_dropped is the statistics' count of a partition's rows (n_live_tup): the partition is not read to count them"
    )
    func postsDroppedFromStatistics() throws {
        let db = try TestDatabase(posts: .daily)
        try Self.workerOwnsPosts(db)
        let (pack, retirable) = try Self.postPerDay(db)
        // 99 more posts in the oldest partition, then its statistics reset: they say it is empty.
        let oldest = try db.postPartitions().first!
        try db.connection.query(
            "INSERT INTO posts (pack_id, created_at) SELECT $1, created_at FROM posts, generate_series(1, 99) WHERE tableoid = $2::regclass",
            pack, oldest)
        try Self.flushStatistics(db)
        #expect(try db.count("SELECT count(*) FROM \(quoteIdentifier(oldest))") == 100)
        try db.connection.query("SELECT pg_stat_reset_single_table_counters($1::regclass)", oldest)
        #expect(try db.count("SELECT pg_stat_get_live_tuples($1::regclass)", oldest) == 0)
        let stats = try db.runSucceeding("expire-content", Self.retire)
        #expect(stats["partitions_dropped"] == PostsLayout.daysBack - 2, "\(stats)")
        // A count that read the partitions would say retirable + 99.
        #expect(stats["posts_dropped"] == retirable - 1, "\(stats)")
    }

    @Test(
        "a dry run counts the posts of the partitions it would drop as dropped, not also as deleted: its figures are the run's",
        arguments: PostsLayout.partitioned)
    func dryRunCountsEachPostOnce(_ layout: PostsLayout) throws {
        let db = try TestDatabase(posts: layout)
        try Self.workerOwnsPosts(db)
        let (pack, _) = try Self.postPerDay(db)
        // Due posts outside the partitions to drop: yesterday's and the day before's, and one in the DEFAULT partition.
        if layout != .daily { try db.insertPost(in: pack, likes: 0, age: "1 year") }
        try Self.flushStatistics(db)
        let preview = try db.runSucceeding("expire-content", Self.retire, dryRun: true)
        let run = try db.runSucceeding("expire-content", Self.retire)
        #expect(try run.reported("posts_deleted") > 0, "\(run)")
        #expect(try run.reported("posts_dropped") == PostsLayout.daysBack - 2, "\(run)")
        for name in ["posts_deleted", "posts_dropped", "partitions_dropped", "packs_deleted"] {
            #expect(preview[name] == run[name], "\(name): dry run \(preview), run \(run)")
        }
    }

    @Test(
        "migrate --grant with retire_partitions accepts a worker that owns posts and its partitions (and nothing else), refuses it without; check agrees and names a partition it cannot drop"
    )
    func grantsForRetirement() throws {
        let db = try TestDatabase(posts: .daily)
        try Self.workerOwnsPosts(db)
        let worker = TemporaryPostgres.workerRole
        let plain = RuntimeGrants(appSchema: "public", jobs: try db.configuration().jobs)
        #expect(plain.retiresPartitions == false)
        #expect(throws: GrantError.self) { try plain.apply(role: worker, on: db.connection) }
        let retiring = RuntimeGrants(appSchema: "public", jobs: try db.configuration(Self.retire).jobs)
        #expect(retiring.retiresPartitions)
        let notes = try retiring.apply(role: worker, on: db.connection)
        #expect(!notes.contains { $0.contains("retire_partitions") }, "\(notes)")
        let connection = try db.connectAsWorker()
        #expect(try RoleCheck.warning(connection, appSchema: "public", retiresPartitions: true) == nil)
        #expect(
            try RoleCheck.warning(connection, appSchema: "public", retiresPartitions: false)?.contains(
                "owns public.posts")
                == true)
        try Self.postPerDay(db)
        let stats = try db.runSucceeding("expire-content", Self.retire)
        #expect(stats["partitions_dropped"] == PostsLayout.daysBack - 2, "\(stats)")

        // A partition the app made as another role: the worker cannot drop it, and both say so.
        let foreign = try db.addDailyPartition(PostsLayout.daysAhead + 1)
        let warning = try RoleCheck.warning(connection, appSchema: "public", retiresPartitions: true)
        #expect(warning?.contains("does not own public.\(foreign)") == true, "\(String(describing: warning))")
        let again = try retiring.apply(role: worker, on: db.connection)
        #expect(again.contains { $0.contains("does not own public.\(foreign)") }, "\(again)")

        // Owning another app table is refused even with retire_partitions.
        try db.connection.execute(script: "ALTER TABLE packs OWNER TO \(quoteIdentifier("owner of " + db.name))")
        #expect {
            try retiring.apply(role: worker, on: db.connection)
        } throws: { error in
            "\(error)".contains("owns public.packs")
        }
    }

    @Test(
        "pg_partman's retention beside retire_partitions: kept longer than max_lifetime plus a partition, either may drop first and no post goes before its lifetime; shorter, partman drops posts caretaker keeps"
    )
    func partmanRetentionBeside() throws {
        let db = try TestDatabase(posts: .partman)
        try Self.workerOwnsPosts(db)
        let (pack, _) = try Self.postPerDay(db)
        let retirable = try Self.retirablePartitions(db)
        // A backstop: retention 3 days (48 h plus one daily partition, and a day to spare).
        try db.connection.execute(
            script: """
                UPDATE partman.part_config SET retention = '3 days', retention_keep_table = false
                WHERE parent_table = 'public.posts';
                SELECT partman.run_maintenance('public.posts');
                """)
        // partman dropped what is older than 3 days; caretaker drops the rest past 48 h.
        #expect(try Self.retirablePartitions(db) == 1)
        let stats = try db.runSucceeding("expire-content", Self.retire)
        #expect(stats["partitions_dropped"] == 1, "\(stats)")
        #expect(try Self.retirablePartitions(db) == 0)
        // Maintenance again: nothing of caretaker's choice is missed or made again, nothing younger goes.
        let left = try db.postPartitions()
        try db.connection.execute(script: "SELECT partman.run_maintenance('public.posts')")
        #expect(try db.postPartitions() == left)
        #expect(retirable == PostsLayout.daysBack - 2)

        // A partition partman makes after the grants (here one for an old day, as a backfill
        // would). With its default for native partitioning it belongs to whoever runs the
        // maintenance: the worker may not drop it, check says so, and the run leaves it
        // attached (it never detaches what it could not drop).
        let backfill = """
            SELECT partman.create_partition_time('public.posts',
                ARRAY[date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '6 days'])
            """
        try db.connection.query(backfill)
        #expect(try Self.retirablePartitions(db) == 1)
        let connection = try db.connectAsWorker()
        let warning = try RoleCheck.warning(connection, appSchema: "public", retiresPartitions: true)
        #expect(warning?.contains("does not own public.posts_p") == true, "\(String(describing: warning))")
        let notOwned = try db.runSucceeding("expire-content", Self.retire)
        #expect(notOwned["partitions_dropped"] == 0, "\(notOwned)")
        #expect(notOwned["partitions_not_owned"] == 1, "\(notOwned)")
        #expect(try Self.retirablePartitions(db) == 1)
        // With inherit_privileges, partman gives its partitions posts' owner (reapply_privileges
        // does it for those it made before): the worker drops it.
        try db.connection.execute(
            script: """
                UPDATE partman.part_config SET inherit_privileges = true WHERE parent_table = 'public.posts';
                SELECT partman.reapply_privileges('public.posts');
                """)
        #expect(try RoleCheck.warning(connection, appSchema: "public", retiresPartitions: true) == nil)
        let backfilled = try db.runSucceeding("expire-content", Self.retire)
        #expect(backfilled["partitions_dropped"] == 1, "\(backfilled)")
        #expect(try Self.retirablePartitions(db) == 0)

        // Retention shorter than max_lifetime plus a partition: partman drops the partition
        // of the day before yesterday with a post in it that caretaker keeps until it is 48 h old.
        let kept = try db.connection.query(
            """
            INSERT INTO posts (pack_id, created_at)
            VALUES ($1, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 day 1 second')
            RETURNING id, created_at > now() - interval '48 hours' AS young
            """, pack
        ).first!
        #expect(kept.bool("young") == true)
        let post = kept.int64("id")!
        try db.connection.execute(
            script: """
                UPDATE partman.part_config SET retention = '1 day' WHERE parent_table = 'public.posts';
                SELECT partman.run_maintenance('public.posts');
                """)
        #expect(try db.count("SELECT count(*) FROM posts WHERE id = $1", post) == 0)
    }
}
