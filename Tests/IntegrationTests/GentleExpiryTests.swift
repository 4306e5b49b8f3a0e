import CaretakerCore
import CaretakerTestSupport
import Foundation
import Logging
import Postgres
import Testing

/// How `expire-content` spares the app while a backlog goes: its WAL budget, its
/// commits without the WAL flush, and a streaming standby's replay lag.
@Suite struct GentleExpiryTests {
    /// A database with `count` posts past the maximum lifetime in an admin pack.
    static func backlog(
        _ count: Int, _ test: String = #function, on server: TemporaryPostgres = .shared
    ) throws -> TestDatabase {
        let db = try TestDatabase(test, on: server)
        let admin = try db.connection.query(
            """
            INSERT INTO packs (name, is_admin, created_at) VALUES ('admin', true, now() - interval '100 days') RETURNING id
            """
        ).first!.int64("id")!
        try db.connection.query(
            """
            INSERT INTO posts (pack_id, likes, created_at, body)
            SELECT $1, 0, now() - interval '3 days' - g * interval '1 second', repeat('post body ', 12)
            FROM generate_series(1, $2::int) g
            """, admin, count)
        return db
    }

    @Test("a WAL budget smaller than what the batches write makes the run pause between them (throttled_ms)")
    func walBudgetEngages() throws {
        let db = try Self.backlog(400)
        // max_runtime: the budget counts all WAL written while a batch runs, and tests
        // running beside this one write megabytes at a time (CREATE DATABASE).
        let stats = try db.runSucceeding(
            "expire-content",
            """
            [jobs.expire-content]
            batch_size = 100
            max_wal_rate = "32kB/s"
            max_runtime = "5s"
            """)
        #expect(try stats.reported("posts_deleted") >= 100)
        #expect(try stats.reported("wal_bytes") > 0, "\(stats)")
        // Each batch of 100 deletions writes several kB; at 16 kB/s the next one waits.
        #expect(try stats.reported("throttled_ms") > 0, "\(stats)")
    }

    @Test(
        "the budget adapts by default: the run probes what a commit costs and reports the rates it went at; max_commit_slowdown = \"\" keeps it fixed"
    )
    func budgetAdapts() throws {
        let db = try Self.backlog(400)
        let stats = try db.runSucceeding(
            "expire-content", "[jobs.expire-content]\nbatch_size = 100\nmax_wal_rate = \"64MB/s\"\n")
        #expect(stats["posts_deleted"] == 400)
        #expect(
            try stats.reported("wal_rate_last_kbps") > 0 && stats.reported("wal_rate_last_kbps") <= 64 * 1024,
            "\(stats)")
        #expect(try stats.reported("wal_rate_lowest_kbps") >= 4 * 1024, "the floor is max_wal_rate ÷ 16: \(stats)")
        #expect(stats.counters.contains { $0.name == "budget_cuts" }, "\(stats)")
        let fixed = try Self.backlog(400, "fixed")
        let fixedStats = try fixed.runSucceeding(
            "expire-content",
            """
            [jobs.expire-content]
            batch_size = 100
            max_commit_slowdown = ""
            """)
        #expect(fixedStats["posts_deleted"] == 400)
        #expect(
            !fixedStats.counters.contains { $0.name == "budget_cuts" || $0.name == "wal_rate_last_kbps" },
            "\(fixedStats)")
    }

    @Test("without a WAL budget the run never pauses for WAL")
    func walBudgetOff() throws {
        let db = try Self.backlog(400)
        let stats = try db.runSucceeding(
            "expire-content", "[jobs.expire-content]\nbatch_size = 100\nmax_wal_rate = \"\"\n")
        #expect(stats["posts_deleted"] == 400)
        #expect(!stats.counters.contains { $0.name == "throttled_ms" }, "\(stats)")
    }

    @Test(
        "max_busy_share: after each stretch of work the run rests so that its work takes at most that share of the time; 100% never rests"
    )
    func busyShare() throws {
        // No replica waits: the shared cluster's standby, started by other tests, lags
        // on a loaded machine, and its waits (9 s in one run) are time the run neither
        // works nor rests.
        let config =
            "[jobs.expire-content]\nbatch_size = 10\nmax_wal_rate = \"\"\nmax_replica_lag = \"\"\nmax_busy_share = "
        let db = try Self.backlog(400)
        let started = ContinuousClock.now
        let resting = try db.runSucceeding("expire-content", config + "\"10%\"\n")
        let took = ContinuousClock.now - started
        #expect(resting["posts_deleted"] == 400 && resting["batches"] == 40, "\(resting)")
        // At 10 % the 39 rests are 9 times the work before each; the last batch, the
        // runner's bookkeeping and the connection take the rest of the time.
        #expect(
            try Double(resting.reported("rested_ms")) >= 0.5 * Double(took.microseconds) / 1000,
            "rested \(resting["rested_ms"] ?? -1) ms of \(took): \(resting)")
        #expect(!resting.counters.contains { $0.name == "throttled_ms" }, "no WAL budget: \(resting)")
        let full = try Self.backlog(400, "busyShareFull")
        let busy = try full.runSucceeding("expire-content", config + "\"100%\"\n")
        #expect(busy["posts_deleted"] == 400)
        #expect(!busy.counters.contains { $0.name == "rested_ms" }, "\(busy)")
    }

    @Test("a long rest ends when max_runtime passes: at 1% a 200 ms batch would rest 20 s")
    func longRestStopsAtMaxRuntime() throws {
        let db = try Self.backlog(400)
        // Every batch takes at least 200 ms: the rest after the first would be 99 times
        // that, 20 s or more. max_runtime = 2s leaves the first batch ten times its time
        // (at 300 ms a loaded run ended before any batch) and cuts the rest; the run's
        // bookkeeping, stretched by a loaded machine, has 13 s before the limit below.
        try Self.slowDeletes(in: db, seconds: 0.2)
        let started = ContinuousClock.now
        let stats = try db.runSucceeding(
            "expire-content",
            "[jobs.expire-content]\nbatch_size = 10\nmax_wal_rate = \"\"\nmax_replica_lag = \"\"\nmax_busy_share = \"1%\"\nmax_runtime = \"2s\"\n"
        )
        let took = ContinuousClock.now - started
        #expect(try stats.reported("posts_deleted") > 0 && stats.reported("posts_deleted") < 400, "\(stats)")
        #expect(took < .seconds(15), "the run took \(took): \(stats)")
    }

    /// Makes every statement that deletes posts in `db` take at least `seconds`.
    static func slowDeletes(in db: TestDatabase, seconds: Double = 0.05) throws {
        try db.connection.execute(
            script: """
                CREATE FUNCTION slow_delete() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_sleep(\(seconds)); RETURN NULL; END $$;
                CREATE TRIGGER slow_delete AFTER DELETE ON posts FOR EACH STATEMENT EXECUTE FUNCTION slow_delete();
                """)
    }

    @Test(
        "wait_for_vacuum: while a vacuum runs in the job's database its batches wait, for at most half of the run's time; a vacuum in another database, or the key off, does not hold it"
    )
    func waitForVacuum() throws {
        let db = try Self.backlog(2000)
        try Self.slowDeletes(in: db)
        // A VACUUM that sleeps 100 ms after each of its ~350 pages: about a minute
        // (68 s on CI-like load), well past the three runs below.
        try db.connection.execute(
            script: """
                CREATE TABLE vacuum_me AS SELECT g, repeat('x', 500) AS filler FROM generate_series(1, 5000) g;
                ALTER TABLE posts SET (autovacuum_enabled = false);
                """)
        let name = db.name
        let vacuum = BackgroundThread {
            let connection = try TemporaryPostgres.shared.connect(database: name)
            try connection.query("SET vacuum_cost_delay = '100ms'")
            try connection.query("SET vacuum_cost_limit = 1")
            try connection.query("VACUUM vacuum_me")
        }
        var running: Int?
        let started = try eventually {
            running = try db.connection.query(
                "SELECT pid FROM pg_stat_progress_vacuum WHERE relid = 'vacuum_me'::regclass"
            ).first?.int("pid")
            return running != nil
        }
        let vacuumPID = try #require(running, "the VACUUM never showed in pg_stat_progress_vacuum (\(started))")
        defer {
            _ = try? db.connection.query("SELECT pg_cancel_backend($1)", vacuumPID)
            _ = try? vacuum.value()
        }
        let config =
            "[jobs.expire-content]\nbatch_size = 100\nmax_wal_rate = \"\"\nmax_busy_share = \"\"\nwait_for_vacuum = "
        // Elsewhere nothing runs: a database with its own backlog goes without waiting.
        let elsewhere = try Self.backlog(2000, "waitForVacuumElsewhere")
        try elsewhere.connection.query("ALTER TABLE posts SET (autovacuum_enabled = false)")
        let notHere = try elsewhere.runSucceeding("expire-content", config + "true\n")
        #expect(notHere["posts_deleted"] == 2000)
        #expect(!notHere.counters.contains { $0.name == "vacuum_wait_ms" }, "\(notHere)")
        // Off: the run goes on beside the vacuum.
        let ignoring = try db.runSucceeding("expire-content", config + "false\n")
        #expect(ignoring["posts_deleted"] == 2000)
        #expect(!ignoring.counters.contains { $0.name == "vacuum_wait_ms" }, "\(ignoring)")
        try db.connection.query(
            """
            INSERT INTO posts (pack_id, likes, created_at)
            SELECT (SELECT id FROM packs LIMIT 1), 0, now() - interval '3 days' FROM generate_series(1, 2000)
            """)
        let log = LineOutput.capturing()
        let runStarted = ContinuousClock.now
        let waiting = try db.runSucceeding("expire-content", config + "true\n", logOutput: log)
        let took = ContinuousClock.now - runStarted
        #expect(waiting["posts_deleted"] == 2000)
        // Twenty batches of at least 50 ms each: a second or more of other things, so
        // it waited some 250-ms polls, and in all at most half of the run's time.
        #expect(try waiting.reported("vacuum_wait_ms") >= 250, "\(waiting)")
        #expect(
            try Double(waiting.reported("vacuum_wait_ms")) <= Double(took.microseconds) / 2000,
            "took \(took): \(waiting)")
        #expect(
            try db.count("SELECT count(*) FROM pg_stat_progress_vacuum WHERE pid = $1", vacuumPID) == 1,
            "the vacuum ended before the run: the bound was not tested")
        #expect(log.lines.filter { $0.contains("wait_for_vacuum") }.count == 1, "\(log.lines)")
    }

    /// The `synchronous_commit` in force when a statement deletes posts, as the app's trigger sees it.
    func synchronousCommitSeen(_ extra: String, _ test: String = #function) throws -> [String] {
        let db = try Self.backlog(50, test)
        // The database's default is on, so only caretaker's own batch setting can turn it off.
        try db.connection.execute(
            script: """
                ALTER DATABASE "\(db.name)" SET synchronous_commit = on;
                CREATE TABLE seen (setting text);
                GRANT INSERT ON seen TO \(quoteIdentifier(TemporaryPostgres.workerRole));
                CREATE FUNCTION note_setting() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO seen VALUES (current_setting('synchronous_commit') || ' ' || current_setting('backend_flush_after'));
                    RETURN NULL;
                END $$;
                CREATE TRIGGER note_setting AFTER DELETE ON posts FOR EACH STATEMENT EXECUTE FUNCTION note_setting();
                """)
        #expect(try db.runSucceeding("expire-content", extra)["posts_deleted"] == 50)
        let after = try TemporaryPostgres.shared.connect(database: db.name)
        #expect(try after.query("SHOW synchronous_commit").first?[0] == "on", "the database default changed")
        return try db.connection.query("SELECT DISTINCT setting FROM seen").rows.compactMap { $0[0] }
    }

    @Test(
        "expire-content's batches commit with synchronous_commit = off by default and flush their own writes every 256 kB (SHOW inside a batch)"
    )
    func asynchronousCommitByDefault() throws {
        #expect(try synchronousCommitSeen("") == ["off 256kB"])
    }

    @Test("synchronous_commit = true keeps the database's durable commits in the batches")
    func synchronousCommitOn() throws {
        #expect(try synchronousCommitSeen("[jobs.expire-content]\nsynchronous_commit = true\n") == ["on 256kB"])
        // Without a WAL budget the server's backend_flush_after (0, off) stands.
        #expect(try synchronousCommitSeen("[jobs.expire-content]\nmax_wal_rate = \"\"\n", "unbudgeted") == ["off 0"])
    }

    /// Creates `role`, a login role with every right on the tables (as they are now) and
    /// sequences of `public` and `caretaker`, but none of the worker role's extras: it is
    /// no superuser, may not set `wal_compression`, and lacks `pg_read_all_stats`.
    static func createPlainRole(_ role: String, on connection: Connection) throws {
        let quoted = quoteIdentifier(role)
        try connection.execute(
            script: """
                CREATE ROLE \(quoted) LOGIN;
                GRANT USAGE ON SCHEMA public, caretaker TO \(quoted);
                GRANT ALL ON ALL TABLES IN SCHEMA public, caretaker TO \(quoted);
                GRANT ALL ON ALL SEQUENCES IN SCHEMA public, caretaker TO \(quoted);
                """)
    }

    /// Sets `server` (a cluster of the test's own) to write full page images, as a
    /// durable database does (the test clusters go without), with `maxWALSize`, and
    /// waits until a new session of `database` sees both.
    static func writeFullPageImages(on server: TemporaryPostgres, database: String, maxWALSize: String) throws {
        let connection = try server.connect(database: database)
        try connection.query("ALTER SYSTEM SET max_wal_size = '\(maxWALSize)'")
        try connection.query("ALTER SYSTEM SET full_page_writes = on")
        try connection.query("SELECT pg_reload_conf()")
        #expect(
            try eventually {
                try server.connect(database: database).query(
                    "SELECT current_setting('max_wal_size') || ' ' || current_setting('full_page_writes')"
                ).first?[0] == "\(maxWALSize) on"
            })
    }

    /// Runs `job` on `conninfo` (a role of the test's choosing) and returns its stats.
    static func run(
        _ job: String, conninfo: String, _ extra: String = "", log: LineOutput = .capturing()
    ) throws -> JobStats? {
        let configuration = try ConfigurationLoader.parse(
            "[database]\nurl = \"\(conninfo)\"\n" + extra, file: "test.toml")
        let logger = Logger(label: "test") { _ in LineLogHandler(format: .logfmt, journald: false, output: log) }
        let outcome = try JobRunner(configuration: configuration, mail: nil, logger: logger)
            .run(
                .init(job: configuration.job(named: job)!, trigger: .manual, dryRun: false),
                on: try Connection(.init(conninfo: conninfo, applicationName: "test")))
        guard case .finished(_, .succeeded, let stats, _) = outcome else {
            Issue.record("\(job) did not succeed: \(outcome)")
            return nil
        }
        return stats
    }

    @Test(
        "compress_wal (on by default): a sweep whose backlog will request a checkpoint compresses its full page images with lz4 when the role may set wal_compression, and only then, booking them uncompressed on the budget"
    )
    func walCompression() throws {
        // A cluster of its own: max_wal_size is the server's, and changes here; full
        // page images as on a durable database (the test clusters go without).
        let server = try TemporaryPostgres()
        defer { try? server.stop() }
        let name = try server.makeDatabase()
        let primary = try server.connect(database: name)
        let role = "plain_" + name
        try primary.execute(
            script: """
                INSERT INTO packs (name, is_admin, created_at) VALUES ('admin', true, now() - interval '9 days');
                CREATE TABLE seen (id serial, setting text);
                CREATE FUNCTION note_setting() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN INSERT INTO seen (setting) VALUES (current_setting('wal_compression')); RETURN NULL; END $$;
                CREATE TRIGGER note_setting AFTER DELETE ON posts FOR EACH STATEMENT EXECUTE FUNCTION note_setting();
                """)
        try Self.createPlainRole(role, on: primary)  // after `seen`: its trigger inserts as the role
        /// A backlog large enough for the sweep, some 25 MB of WAL with its full page
        /// images; the settings its DELETEs ran with, in order (a repeat counted once),
        /// and how many ran uncompressed.
        var charged: [Int] = []
        func sweep(as user: String, compress: Bool? = nil) throws -> (settings: [String], uncompressed: Int) {
            try primary.execute(
                script: """
                    TRUNCATE seen;
                    INSERT INTO posts (pack_id, likes, created_at, body)
                    SELECT (SELECT id FROM packs LIMIT 1), 0, now() - interval '3 days', repeat('post body ', 12)
                    FROM generate_series(1, 150000);
                    """)
            try primary.query("VACUUM ANALYZE posts")
            try primary.query("CHECKPOINT")
            let holding = try #require(
                try primary.query("SELECT count(DISTINCT (ctid::text::point)[0])::bigint AS n FROM posts").first?
                    .int64("n"))
            let conninfo = server.conninfo(database: name).replacing("user=postgres", with: "user=\(user)")
            let stats = try #require(
                try Self.run(
                    "expire-content", conninfo: conninfo,
                    "[jobs.expire-content]\n" + (compress.map { "compress_wal = \($0)\n" } ?? "")))
            #expect(try stats.reported("swept_pages") > 0 && stats.reported("posts_deleted") == 150_000, "\(stats)")
            // A compressing sweep books at least a full page image of each page it
            // changed once it compresses: those holding the posts, but for the few
            // the index path's first batch changed.
            // (The counter is reported only by a run that booked something beyond its WAL.)
            let chargedBytes = stats["wal_charged_bytes"] ?? 0
            charged.append(chargedBytes)
            if chargedBytes > 0 {
                #expect(
                    try Int64(stats.reported("wal_bytes") + chargedBytes) >= (holding * 8 / 10) * 8192,
                    "\(holding): \(stats)")
            }
            let settings = try primary.query("SELECT setting FROM seen ORDER BY id").rows.compactMap { $0[0] }
            return (
                settings.enumerated().filter { $0.offset == 0 || settings[$0.offset - 1] != $0.element }.map(\.element),
                settings.count { $0 == "off" }
            )
        }
        // At 1GB the backlog fits before the checkpoint distance (539 MB): nothing to gain.
        try Self.writeFullPageImages(on: server, database: name, maxWALSize: "1GB")
        #expect(try sweep(as: "postgres").settings == ["off"], "a backlog that requests no checkpoint")
        // At 32MB (a distance of 17 MB) it will request one.
        try Self.writeFullPageImages(on: server, database: name, maxWALSize: "32MB")
        // Only the first batch, on the index path, comes before the compression: the
        // sweep expects the WAL of its backlog from the sample, before its first range.
        #expect(try sweep(as: "postgres") == (["off", "lz4"], 1), "compress_wal unset: on")
        #expect(try sweep(as: "postgres", compress: true) == (["off", "lz4"], 1))
        #expect(try sweep(as: "postgres", compress: false).settings == ["off"], "compress_wal = false")
        #expect(charged.map { $0 > 0 } == [false, true, true, false], "\(charged)")
        #expect(try sweep(as: role).settings == ["off"], "a role that may not set wal_compression")
        #expect(charged.last == 0, "an uncompressed sweep books its WAL only: \(charged)")
        try primary.execute(script: "GRANT SET ON PARAMETER wal_compression TO \"\(role)\"")
        #expect(try sweep(as: role) == (["off", "lz4"], 1), "GRANT SET ON PARAMETER wal_compression")
    }

    @Test(
        "prune_swept_pages = true: after the pause that follows each range, the sweep reads the range again, which prunes its pages for the app's reads; rows deleted by a plain DELETE stay unpruned on their pages"
    )
    func pruneSweptPages() throws {
        // A cluster of its own: a page is pruned only once the cluster-wide xmin horizon
        // has passed the deletions, and in the shared cluster other tests' standbys, slots
        // and open snapshots hold it back for as long as they like (CI of 7e4a996).
        let server = try TemporaryPostgres()
        defer { try? server.stop() }
        let db = try Self.backlog(150_000, on: server)
        // Autovacuum would remove the tuples this test counts.
        try db.connection.execute(
            script: """
                CREATE EXTENSION IF NOT EXISTS pageinspect;
                ALTER TABLE posts SET (autovacuum_enabled = false);
                """)
        try db.connection.query("VACUUM ANALYZE posts")
        /// Deleted tuples still on the table's pages: line pointers in use whose row was
        /// deleted, what pruning removes. The last page is left out: PostgreSQL prunes a
        /// page on reading it only when the page is nearly full, and the last one may not be.
        func unpruned() throws -> Int {
            let pages = try db.count("SELECT pg_relation_size('posts') / current_setting('block_size')::int")
            return try db.count(
                """
                SELECT count(*) FROM generate_series(0, $1::int - 2) page,
                     heap_page_items(get_raw_page('posts', page)) item
                WHERE item.lp_flags = 1 AND item.t_xmax <> '0'
                """, pages)
        }
        let stats = try #require(
            try Self.run("expire-content", conninfo: db.conninfo, "[jobs.expire-content]\nprune_swept_pages = true\n"))
        #expect(try stats.reported("swept_pages") > 0 && stats.reported("posts_deleted") == 150_000, "\(stats)")
        #expect(stats["pruned_pages"] == stats["swept_pages"], "\(stats)")
        // A page pruned once before (here: by the sweep's own read of the tuples the
        // first batch, on the index path, had deleted) no longer qualifies for pruning
        // on a read, the app's or this pass's: its free space shows no need. Such a
        // page may keep the tuples the sweep then deleted on it (5 on one page here).
        let leftBySweep = try unpruned()
        #expect(leftBySweep < 100, "\(leftBySweep) deleted tuples left unpruned after the sweep; \(stats)")
        // The count sees what no read has pruned yet: 20,000 rows deleted by a plain DELETE,
        // on pages nothing reads afterwards. (Without the pass the sweep's last ranges
        // are left like that too, how many pages depending on the machine's pace: 800
        // here, about 190 on a slower CI run. The default is off: ConfigurationTests.)
        try db.connection.query(
            """
            INSERT INTO posts (pack_id, likes, created_at, body)
            SELECT (SELECT min(id) FROM packs), 0, now(), repeat('post body ', 12) FROM generate_series(1, 20000)
            """)
        try db.connection.query("DELETE FROM posts")
        let leftByDelete = try unpruned()
        #expect(leftByDelete > 15_000, "\(leftByDelete) deleted tuples left unpruned after a plain DELETE")
    }

    @Test(
        "checkpoint_spacing: a backlog that will force checkpoints goes at most one checkpoint distance per spacing (by default 10 s at a small max_wal_size); \"\" lifts the cap"
    )
    func checkpointSpacing() throws {
        // A cluster of its own: max_wal_size is the server's, and small here (64MB);
        // full page images as on a durable database (the test clusters go without).
        let server = try TemporaryPostgres()
        defer { try? server.stop() }
        let name = try server.makeDatabase()
        let primary = try server.connect(database: name)
        try Self.writeFullPageImages(on: server, database: name, maxWALSize: "64MB")
        // What requests a checkpoint: max_wal_size ÷ (1 + checkpoint_completion_target), about 34 MB.
        let distance = try #require(
            try primary.query(
                """
                SELECT (pg_size_bytes(current_setting('max_wal_size'))
                        / (1 + current_setting('checkpoint_completion_target')::float8))::bigint AS distance
                """
            ).first?.int64("distance"))
        /// `count` due posts, then a checkpoint: each page's first delete writes a full
        /// image, some 70 MB of WAL in all for 300,000, two distances.
        func seedBacklog(_ count: Int = 300_000) throws {
            try primary.query(
                """
                WITH admin AS (INSERT INTO packs (name, is_admin) VALUES ('admin', true) RETURNING id)
                INSERT INTO posts (pack_id, likes, created_at, body)
                SELECT (SELECT id FROM admin), 0, now() - interval '3 days', repeat('post body ', 12)
                FROM generate_series(1, $1::int)
                """, count)
            try primary.query("CHECKPOINT")
        }
        // At 160MB/s the rate starts at 80MB/s and grows by 10MB/s a probe (every 100 ms),
        // so some probe comes between half the distance, where the cap starts, and the
        // forced checkpoint; its floor (10MB/s) is above the cap (distance ÷ 4 s, 8.4MB/s).
        // Uncompressed full page images: compressed, the backlog would fit in one distance.
        let uncompressed = "[jobs.expire-content]\ncompress_wal = false\n"
        let settings = uncompressed + "max_wal_rate = \"160MB/s\"\nmax_runtime = \"5m\"\n"
        try seedBacklog()
        let spaced = try #require(
            try Self.run(
                "expire-content", conninfo: server.conninfo(database: name),
                settings + "checkpoint_spacing = \"4s\"\n"))
        #expect(spaced["posts_deleted"] == 300_000)
        #expect(try spaced.reported("wal_bytes") > distance, "\(spaced)")
        // The adaptive rate never goes below its floor: the lowest rate is the cap's.
        #expect(spaced["wal_rate_lowest_kbps"] == Int(distance / 4 / 1024), "distance \(distance): \(spaced)")
        #expect(try spaced.reported("throttled_ms") > 0, "\(spaced)")

        // The default, "auto": 10 s at this small max_wal_size. Half the backlog (one
        // distance, 35 MB) shows the cap: it starts half a distance in, and the rest goes
        // at the cap's 3.4 MB/s, about 5 s. The run goes to the end: a time limit (two
        // seconds, then eight) stopped a loaded run before the cap began.
        try seedBacklog(150_000)
        let scaled = try #require(
            try Self.run(
                "expire-content", conninfo: server.conninfo(database: name),
                uncompressed + "max_wal_rate = \"160MB/s\"\nmax_runtime = \"5m\"\n"))
        #expect(scaled["posts_deleted"] == 150_000)
        #expect(scaled["wal_rate_lowest_kbps"] == Int(distance / 10 / 1024), "distance \(distance): \(scaled)")
        // "" lifts the cap: the same backlog goes at the adaptive rate, never below its floor.
        try seedBacklog(150_000)
        let uncapped = try #require(
            try Self.run(
                "expire-content", conninfo: server.conninfo(database: name),
                settings + "checkpoint_spacing = \"\"\n"))
        #expect(uncapped["posts_deleted"] == 150_000)
        #expect(try uncapped.reported("wal_rate_lowest_kbps") >= 160 * 1024 / 16, "\(uncapped)")
    }

    @Test(
        "a standby replaying further behind than max_replica_lag holds the run until it has replayed the latest batch")
    func replicaLag() throws {
        // A cluster of its own: pausing the shared standby's replay would hold every
        // other test's run (max_replica_lag is on by default).
        let server = try TemporaryPostgres()
        defer { try? server.stop() }
        let name = try server.makeDatabase()
        let primary = try server.connect(database: name)
        let standbyConninfo = try server.standbyConninfo(database: name)
        let standby = try Connection(.init(conninfo: standbyConninfo, applicationName: "test"))
        // Replay stops; the backlog arrives; the standby receives it but does not apply it.
        try standby.query("SELECT pg_wal_replay_pause()")
        defer { _ = try? standby.query("SELECT pg_wal_replay_resume()") }
        try primary.query(
            """
            WITH admin AS (INSERT INTO packs (name, is_admin) VALUES ('admin', true) RETURNING id)
            INSERT INTO posts (pack_id, likes, created_at)
            SELECT (SELECT id FROM admin), 0, now() - interval '3 days' FROM generate_series(1, 300)
            """)
        // Until the primary reports a replay lag over the limit (each write brings a reply).
        var lagging = false
        for _ in 0..<100 where !lagging {
            Thread.sleep(forTimeInterval: 0.1)
            try primary.query("SELECT pg_logical_emit_message(false, 'caretaker-test', 'tick')")
            lagging =
                try primary.query("SELECT count(*) FROM pg_stat_replication WHERE replay_lag > interval '300 ms'")
                .first?[0] != "0"
        }
        #expect(lagging, "the standby never reported a replay lag")
        // A role without pg_read_all_stats sees the standby's WAL sender but not its
        // replay: the run says so once and goes on without waiting.
        let plain = "plain_" + name
        try Self.createPlainRole(plain, on: primary)
        let log = LineOutput.capturing()
        let blind = try #require(
            try Self.run(
                "expire-content",
                conninfo: server.conninfo(database: name).replacing("user=postgres", with: "user=\(plain)"),
                """
                [jobs.expire-content]
                batch_size = 100
                max_replica_lag = "200ms"
                """, log: log))
        #expect(blind["posts_deleted"] == 300)
        #expect(!blind.counters.contains { $0.name == "replica_wait_ms" }, "\(blind)")
        #expect(
            log.lines.filter { $0.contains("hidden from this role") && $0.contains("pg_read_all_stats") }.count == 1,
            "\(log.lines)")
        try primary.query(
            """
            INSERT INTO posts (pack_id, likes, created_at)
            SELECT (SELECT id FROM packs LIMIT 1), 0, now() - interval '3 days' FROM generate_series(1, 300)
            """)
        // max_replica_lag = "" does not look at the standbys: half the backlog goes at once.
        let ignoring = try #require(
            try Self.run(
                "expire-content", conninfo: server.conninfo(database: name),
                """
                [jobs.expire-content]
                batch_size = 50
                max_runtime = "1h"
                max_replica_lag = ""
                """))
        #expect(ignoring["posts_deleted"] == 300)
        #expect(!ignoring.counters.contains { $0.name == "replica_wait_ms" }, "\(ignoring)")
        try primary.query(
            """
            INSERT INTO posts (pack_id, likes, created_at)
            SELECT (SELECT id FROM packs LIMIT 1), 0, now() - interval '3 days' FROM generate_series(1, 300)
            """)
        // On a thread of its own: the run below blocks this one. Replay resumes a second
        // and a half after the run's first batch has committed, when the run waits for
        // the standby (a fixed 2 s from here left a loaded run 900 ms of waiting).
        let primaryConninfo = server.conninfo(database: name)
        let resumed = Thread {
            let watcher = try? Connection(.init(conninfo: primaryConninfo, applicationName: "test"))
            let giveUp = Date(timeIntervalSinceNow: 120)
            while Date() < giveUp, (try? watcher?.query("SELECT count(*) FROM posts").first?[0]) == "300" {
                Thread.sleep(forTimeInterval: 0.05)
            }
            Thread.sleep(forTimeInterval: 1.5)
            let again = try? Connection(.init(conninfo: standbyConninfo, applicationName: "test"))
            _ = try? again?.query("SELECT pg_wal_replay_resume()")
        }
        resumed.start()
        let stats = try #require(
            try Self.run(
                "expire-content", conninfo: server.conninfo(database: name),
                """
                [jobs.expire-content]
                batch_size = 100
                max_replica_lag = "200ms"
                """))
        #expect(stats["posts_deleted"] == 300)
        // The run could not go on before replay resumed, well after its first batch.
        #expect(try stats.reported("replica_wait_ms") >= 1000, "\(stats)")
    }
}
