import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

@Suite struct MigrationTests {
    @Test("migrate applies every version once; a second run changes nothing")
    func migrateTwice() throws {
        let db = try TestDatabase(migrated: false)
        let migrator = Migrator(appSchema: "public")
        #expect(try migrator.migrate(on: db.connection).map(\.version) == Migration.all.map(\.version))
        #expect(try migrator.migrate(on: db.connection).isEmpty)
        #expect(try db.count("SELECT count(*) FROM caretaker.schema_migrations") == Migration.all.count)
        #expect(try SchemaCheck.check(db.connection, appSchema: "public").problems.isEmpty)
    }

    @Test("dry run lists pending migrations and creates nothing")
    func dryRun() throws {
        let db = try TestDatabase(migrated: false)
        let pending = try Migrator(appSchema: "public").migrate(on: db.connection, dryRun: true)
        #expect(pending.count == Migration.all.count)
        #expect(try db.count("SELECT count(*) FROM pg_namespace WHERE nspname = 'caretaker'") == 0)
    }

    @Test("the app schema may be any schema, quoted")
    func customSchema() throws {
        let db = try TestDatabase(migrated: false)
        try Migrator(appSchema: "my app").migrate(on: db.connection)
        #expect(try db.count("SELECT count(*) FROM \"my app\".posts") == 0)
        #expect(try SchemaCheck.check(db.connection, appSchema: "my app").problems.isEmpty)
    }

    @Test("two migrators at once: one applies, the other waits and finds nothing to do")
    func concurrentMigrations() throws {
        let db = try TestDatabase(migrated: false)
        let server = TemporaryPostgres.shared
        let name = db.name
        let migrators = (1...2).map { _ in
            BackgroundThread { try Migrator(appSchema: "public").migrate(on: server.connect(database: name)).count }
        }
        let counts = try migrators.map { try $0.value() }.sorted()
        #expect(counts == [0, Migration.all.count])
    }

    @Test("migrate builds the posts indexes CONCURRENTLY: an existing app keeps writing to posts meanwhile")
    func indexesDoNotBlockTheApp() throws {
        let db = try TestDatabase(migrated: false)
        // An existing app: its tables, no caretaker yet, and a writer whose transaction is still open.
        try db.connection.execute(script: Migration.all.first { $0.version == 2 }!.sql(appSchema: "public"))
        try db.connection.execute(script: "DROP INDEX IF EXISTS posts_created_idx, posts_pack_idx, posts_author_idx")
        let applied = try Self.migrateWhileTheAppWrites(db, waitingIn: "CREATE INDEX")
        #expect(applied.count == Migration.all.count)
        #expect(
            try db.count(
                """
                SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                WHERE c.relname IN ('posts_created_idx', 'posts_author_idx', 'posts_likes_created_idx',
                                    'posts_pack_likes_idx') AND i.indisvalid
                """) == 4)
        #expect(try db.count("SELECT count(*) FROM pg_class WHERE relname = 'posts_pack_idx'") == 0)
    }

    @Test(
        "migration 9 drops posts (pack_id), which posts (pack_id, likes) covers, and keeps any other index of that name"
    )
    func redundantPackIndexIsDropped() throws {
        let db = try TestDatabase(migrated: false)
        let migrator = Migrator(appSchema: "public")
        try migrator.migrate(on: db.connection)
        let packIndexes = "SELECT count(*) FROM pg_class WHERE relname = 'posts_pack_idx'"
        #expect(try db.count(packIndexes) == 0)
        #expect(
            try db.count(
                "SELECT count(*) FROM pg_index WHERE indexrelid = 'posts_pack_likes_idx'::regclass AND indisvalid") == 1
        )
        let migrateNineAgain = { (index: String) throws -> Void in
            try db.connection.execute(
                script: """
                    DROP INDEX IF EXISTS posts_pack_idx;
                    \(index);
                    DELETE FROM caretaker.schema_migrations WHERE version = 9;
                    """)
            #expect(try migrator.migrate(on: db.connection).map(\.version) == [9])
        }
        // Indexes an app may have made under that name, which the wider one does not replace.
        for kept in [
            "ON posts (pack_id) WHERE likes > 0", "ON posts (pack_id DESC)", "ON posts (pack_id, author_id)",
            "ON posts USING hash (pack_id)", "ON posts (author_id)", "ON posts ((pack_id + 0))",
            "ON posts (pack_id) INCLUDE (title)",
        ] {
            try migrateNineAgain("CREATE INDEX posts_pack_idx " + kept)
            #expect(try db.count(packIndexes) == 1, "posts_pack_idx \(kept) was dropped")
        }
        // The plain index, while the wider one is invalid (a build that failed half-way): kept.
        try migrateNineAgain(
            """
            CREATE INDEX posts_pack_idx ON posts (pack_id);
            UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'posts_pack_likes_idx'::regclass
            """)
        #expect(try db.count(packIndexes) == 1)
        try migrateNineAgain(
            """
            CREATE INDEX posts_pack_idx ON posts (pack_id);
            UPDATE pg_index SET indisvalid = true WHERE indexrelid = 'posts_pack_likes_idx'::regclass
            """)
        #expect(try db.count(packIndexes) == 0)
    }

    @Test("migration 9 drops the index CONCURRENTLY: the app keeps writing to posts while it waits")
    func dropDoesNotBlockTheApp() throws {
        let db = try TestDatabase(migrated: false)
        try Migrator(appSchema: "public").migrate(on: db.connection)
        try db.connection.execute(
            script: """
                CREATE INDEX posts_pack_idx ON posts (pack_id);
                DELETE FROM caretaker.schema_migrations WHERE version = 9;
                """)
        #expect(try Self.migrateWhileTheAppWrites(db, waitingIn: "DROP INDEX") == [9])
        #expect(try db.count("SELECT count(*) FROM pg_class WHERE relname = 'posts_pack_idx'") == 0)
    }

    /// The buffers an index scan of pack `pack`'s 20 most-liked posts touched, from
    /// `EXPLAIN (ANALYZE, BUFFERS)`: index pages, and a heap page for each entry it
    /// did not skip as dead.
    static func buffersOfPackScan(_ db: TestDatabase, pack: Int64) throws -> Int {
        let plan = try db.connection.query(
            "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, COSTS OFF) SELECT id FROM posts WHERE pack_id = $1 ORDER BY likes DESC LIMIT 20",
            pack
        ).rows.compactMap { $0["QUERY PLAN"] }
        let buffers = plan.first { $0.contains("Buffers:") } ?? ""
        return ["hit", "read"].reduce(0) { sum, kind in
            sum + (buffers.firstMatch(of: try! Regex("\(kind)=([0-9]+)"))?.output[1].substring.flatMap { Int($0) } ?? 0)
        }
    }

    @Test(
        "posts (pack_id, likes) is not deduplicated (migration 11): the first scan of a pack after a delete marks the deleted rows' entries dead, and the next skips them"
    )
    func packLikesIndexMarksDeletedEntries() throws {
        // A cluster of its own: a scan marks an entry dead only once its row is dead
        // to every transaction that counts, and on the shared cluster the other tests'
        // sessions held that back (a CI run saw the second scan cost what the first did).
        let server = try TemporaryPostgres()
        defer { try? server.stop() }
        let db = try TestDatabase(on: server)
        #expect(
            try db.count(
                """
                SELECT count(*) FROM pg_class
                WHERE relname = 'posts_pack_likes_idx' AND 'deduplicate_items=off' = ANY(reloptions)
                """) == 1)
        // 2,000 posts in turn in 10 packs, all with 5 likes: one key per pack. Five
        // posts fill a heap page, so each of a pack's posts is on a page of its own.
        // Then 150 of pack 1's 200 go; with deduplication they would share posting
        // lists with its 50 others.
        try db.connection.execute(
            script: """
                INSERT INTO packs (name) SELECT 'pack ' || i FROM generate_series(1, 10) i;
                INSERT INTO posts (pack_id, likes, body)
                SELECT (SELECT min(id) FROM packs) + i % 10, 5, repeat('x', 1500) FROM generate_series(0, 1999) i;
                DELETE FROM posts WHERE id IN (
                    SELECT id FROM posts WHERE pack_id = (SELECT min(id) FROM packs) ORDER BY id DESC LIMIT 150);
                SET enable_seqscan = off;
                SET enable_bitmapscan = off;
                """)
        let pack = try db.connection.query("SELECT min(id) AS id FROM packs").first!.int64("id")!
        let first = try Self.buffersOfPackScan(db, pack: pack)
        let second = try Self.buffersOfPackScan(db, pack: pack)
        let third = try Self.buffersOfPackScan(db, pack: pack)
        #expect(first >= 150, "the first scan visits the deleted rows' heap pages: \(first) buffers")
        #expect(second * 2 < first, "the second scan skips them: \(second) buffers against \(first)")
        #expect(third == second)
    }

    @Test(
        "migration 11 on an install at version 10: deduplication off, the index rebuilt in place, an interrupted rebuild's invalid leftovers dropped"
    )
    func packLikesIndexIsRebuilt() throws {
        let db = try TestDatabase()
        // Version 10's index (deduplicated), an invalid leftover of an interrupted
        // rebuild, and a valid index of the app's whose name looks like one.
        try db.connection.execute(
            script: """
                ALTER INDEX posts_pack_likes_idx RESET (deduplicate_items);
                REINDEX INDEX posts_pack_likes_idx;
                CREATE INDEX posts_pack_likes_idx_ccnew ON posts (pack_id, likes);
                UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'posts_pack_likes_idx_ccnew'::regclass;
                CREATE INDEX posts_pack_likes_idx_ccold1 ON posts (pack_id, likes);
                DELETE FROM caretaker.schema_migrations WHERE version = 11;
                """)
        let fileNode = "SELECT relfilenode::text AS node FROM pg_class WHERE relname = 'posts_pack_likes_idx'"
        let before = try db.connection.query(fileNode).first?.string("node")
        #expect(try Migrator(appSchema: "public").migrate(on: db.connection).map(\.version) == [11])
        #expect(try db.connection.query(fileNode).first?.string("node") != before, "the index was not rebuilt")
        #expect(
            try db.count(
                """
                SELECT count(*) FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
                WHERE c.relname = 'posts_pack_likes_idx' AND 'deduplicate_items=off' = ANY(c.reloptions) AND i.indisvalid
                """) == 1)
        #expect(try db.count("SELECT count(*) FROM pg_class WHERE relname = 'posts_pack_likes_idx_ccnew'") == 0)
        #expect(try db.count("SELECT count(*) FROM pg_class WHERE relname = 'posts_pack_likes_idx_ccold1'") == 1)
    }

    @Test("migration 11 rebuilds the index CONCURRENTLY: the app keeps writing to posts while it waits")
    func reindexDoesNotBlockTheApp() throws {
        let db = try TestDatabase()
        try db.connection.execute(script: "DELETE FROM caretaker.schema_migrations WHERE version = 11")
        #expect(try Self.migrateWhileTheAppWrites(db, waitingIn: "REINDEX") == [11])
    }

    @Test(
        "a migration that must lock an app table a long transaction holds waits briefly, lets the app's writes through, and gives up after lockWait",
        .timeLimit(.minutes(1))  // without lock_timeout, migrate would wait for the holder for ever
    )
    func lockWaitIsBounded() throws {
        let db = try TestDatabase()
        let server = TemporaryPostgres.shared
        // Migration 10 again: it creates triggers on posts, a lock that conflicts with the app's writes.
        try db.connection.query("DELETE FROM caretaker.schema_migrations WHERE version = 10")
        let pack = try db.connection.query("INSERT INTO packs (name) VALUES ('p') RETURNING id").first!.int64("id")!
        let holder = try server.connect(database: db.name)
        try holder.query("BEGIN")
        try holder.query("INSERT INTO posts (pack_id) VALUES ($1)", pack)
        let name = db.name
        let migration = BackgroundThread { () throws -> String in
            var migrator = Migrator(appSchema: "public", lockWait: .seconds(3))
            migrator.attemptLockTimeout = .milliseconds(300)
            migrator.pauseBetweenAttempts = .milliseconds(200)
            do {
                _ = try migrator.migrate(on: server.connect(database: name))
                return "applied"
            } catch let error as MigrationError {
                return error.lockWait == nil
                    ? "\(error)" : "gave up after \(error.lockWait!.attempts) attempts: \(error)"
            }
        }
        // Meanwhile the app writes: each of its writes waits at most one attempt's timeout.
        let app = try server.connect(database: name)
        try app.query("SET lock_timeout = '2s'")
        for _ in 0..<10 {
            #expect(throws: Never.self, "the app's write queued behind the migration") {
                try app.query("INSERT INTO posts (pack_id) VALUES ($1)", pack)
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let outcome = try migration.value()
        #expect(outcome.hasPrefix("gave up after "), "\(outcome)")
        #expect(outcome.contains("could not take its locks on the app's tables"), "\(outcome)")
        #expect(!outcome.hasPrefix("gave up after 1 attempts"), "it never tried again: \(outcome)")
        #expect(try db.count("SELECT count(*) FROM caretaker.schema_migrations WHERE version = 10") == 0)
        // Once the long transaction ends, the same migrate applies it.
        try holder.query("COMMIT")
        #expect(try Migrator(appSchema: "public").migrate(on: db.connection).map(\.version) == [10])
    }

    @Test("an index build that failed half-way is dropped and built again by the next migrate")
    func invalidIndexIsRebuilt() throws {
        let db = try TestDatabase(migrated: false)
        let migrator = Migrator(appSchema: "public")
        try migrator.migrate(on: db.connection)
        // What a CREATE INDEX CONCURRENTLY that failed leaves: an invalid index, the version not recorded.
        try db.connection.execute(
            script: """
                UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'posts_likes_created_idx'::regclass;
                DELETE FROM caretaker.schema_migrations WHERE version = 4;
                """)
        #expect(try migrator.migrate(on: db.connection).map(\.version) == [4])
        #expect(
            try db.count(
                "SELECT count(*) FROM pg_index WHERE indexrelid = 'posts_likes_created_idx'::regclass AND indisvalid")
                == 1)
    }

    @Test("check names a dropped column and a wrong type")
    func checkNamesColumns() throws {
        let db = try TestDatabase()
        try db.connection.query("ALTER TABLE posts DROP COLUMN likes CASCADE")
        try db.connection.query("ALTER TABLE sessions ALTER COLUMN revoked_reason TYPE integer USING NULL")
        let problems = try SchemaCheck.check(db.connection, appSchema: "public").problems
        #expect(problems.contains { $0.contains("public.posts.likes is missing") }, "\(problems)")
        #expect(problems.contains { $0.contains("public.sessions.revoked_reason has type integer") }, "\(problems)")
    }

    @Test(
        "check: what only disabled jobs rely on gives warnings; a column an enabled job also relies on stays a problem")
    func checkDisabledJobs() throws {
        let db = try TestDatabase()
        try db.connection.execute(
            script: """
                DROP TABLE community_leader_changes CASCADE;
                ALTER TABLE communities DROP COLUMN is_private CASCADE;
                ALTER TABLE users DROP COLUMN deleted_at CASCADE;
                ALTER TABLE posts ALTER COLUMN title TYPE integer USING NULL;
                """)
        let missingTable = "table public.community_leader_changes is missing"
        let missingColumn = "column public.communities.is_private is missing (expected boolean)"
        let sharedColumn = "column public.users.deleted_at is missing (expected timestamp with time zone)"
        let wrongType =
            "column public.posts.title has type integer, expected character or character varying or citext or text"
        let all = try SchemaCheck.check(db.connection, appSchema: "public")
        #expect(all.problems == [missingTable, wrongType, sharedColumn, missingColumn])
        #expect(all.warnings.isEmpty)

        var enabled = Set(BuiltInJob.allCases)
        enabled.remove(try #require(BuiltInJob(rawValue: "leader-succession")))
        let leaderOff = try SchemaCheck.check(db.connection, appSchema: "public", enabled: enabled)
        #expect(leaderOff.problems == [wrongType, sharedColumn])
        #expect(
            leaderOff.warnings == [
                missingTable + "; used only by leader-succession, which is disabled",
                missingColumn + "; used only by leader-succession, which is disabled",
            ])

        let none = try SchemaCheck.check(db.connection, appSchema: "public", enabled: [])
        #expect(none.problems.isEmpty)
        #expect(
            none.warnings == [
                missingTable + "; used only by leader-succession, which is disabled",
                wrongType + "; used only by expire-content, which is disabled",
                sharedColumn + "; used only by send-temp-passwords, leader-succession, which are disabled",
                missingColumn + "; used only by leader-succession, which is disabled",
            ])
    }

    /// Runs `migrate` while an app's transaction that wrote to `posts` is still open,
    /// waits until migrate waits for it in a statement containing `statement`, and checks
    /// that another app write goes through meanwhile (a plain `CREATE INDEX` or `DROP
    /// INDEX` would queue it behind itself). Then commits the app's transaction and
    /// returns the versions migrate applied.
    static func migrateWhileTheAppWrites(_ db: TestDatabase, waitingIn statement: String) throws -> [Int] {
        let server = TemporaryPostgres.shared
        let pack = try db.connection.query("INSERT INTO packs (name) VALUES ('p') RETURNING id").first!.int64("id")!
        let writer = try server.connect(database: db.name)
        try writer.query("BEGIN")
        try writer.query("INSERT INTO posts (pack_id) VALUES ($1)", pack)
        let name = db.name
        let migration = BackgroundThread {
            try Migrator(appSchema: "public").migrate(on: server.connect(database: name)).map(\.version)
        }
        let waiting = try eventually(timeout: .seconds(30)) {
            try db.count(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = $1 AND query ILIKE '%' || $2 || '%' AND wait_event_type = 'Lock'
                """, name, statement) > 0
        }
        #expect(waiting, "migrate never reached \(statement)")
        let app = try server.connect(database: name)
        try app.query("SET lock_timeout = '2s'")
        #expect(throws: Never.self, "the app's write was blocked by \(statement)") {
            try app.query("INSERT INTO posts (pack_id) VALUES ($1)", pack)
        }
        try writer.query("COMMIT")
        return try migration.value()
    }
}
