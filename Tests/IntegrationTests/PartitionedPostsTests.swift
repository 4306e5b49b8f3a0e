import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

/// caretaker on an app whose `posts` is partitioned by day on `created_at`: the test
/// layouts themselves, then `migrate` and `check` on each of them.
@Suite struct PartitionedPostsTests {
    @Test(
        "the test layouts: posts partitioned by day, with or without DEFAULT, by hand or by pg_partman",
        arguments: PostsLayout.partitioned)
    func layouts(_ layout: PostsLayout) throws {
        let db = try TestDatabase(posts: layout, migrated: false)
        #expect(try db.count("SELECT count(*) FROM pg_class WHERE oid = 'posts'::regclass AND relkind = 'p'") == 1)
        #expect(
            try db.count(
                """
                SELECT count(*) FROM pg_constraint WHERE conrelid = 'posts'::regclass AND contype = 'p'
                  AND conkey = ARRAY(SELECT attnum FROM pg_attribute WHERE attrelid = 'posts'::regclass
                                     AND attname IN ('id', 'created_at') ORDER BY attnum)
                """) == 1)
        let defaults = try db.count(
            "SELECT count(*) FROM pg_partition_tree('posts') t JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf AND pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'"
        )
        #expect(defaults == (layout == .daily ? 0 : 1))
        let days = PostsLayout.daysBack + PostsLayout.daysAhead + 1
        #expect(try db.postPartitions().count >= days + defaults)
        // A post of every covered day goes into a daily partition, not the DEFAULT one.
        let pack = try db.insertPack(age: "1 hour")
        for day in -PostsLayout.daysAhead + 1...PostsLayout.daysBack - 1 {
            try db.insertPost(in: pack, likes: 0, age: "\(day) days")
        }
        #expect(
            try db.count(
                "SELECT count(*) FROM posts p JOIN pg_class c ON c.oid = p.tableoid WHERE pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'"
            ) == 0)
        if layout == .partman {
            #expect(try db.count("SELECT count(*) FROM partman.part_config WHERE parent_table = 'public.posts'") == 1)
        }
        if layout == .daily {
            #expect(throws: PostgresError.self) { try db.insertPost(in: pack, likes: 0, age: "1 year") }
        }
    }
}

extension PartitionedPostsTests {
    /// caretaker's indexes on `posts` after every migration.
    static let indexes = ["posts_created_idx", "posts_author_idx", "posts_likes_created_idx", "posts_pack_likes_idx"]

    /// For each of caretaker's indexes: whether it is a valid partitioned index with a
    /// valid index attached for every partition (`attached` of `partitions`).
    static func indexState(_ db: TestDatabase) throws -> [String: String] {
        var state: [String: String] = [:]
        for index in indexes {
            let row = try db.connection.query(
                """
                SELECT (SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)) AS kind,
                       (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)) AS valid,
                       (SELECT count(*) FROM pg_partition_tree(to_regclass($1)) t JOIN pg_index i ON i.indexrelid = t.relid
                        WHERE t.isleaf AND i.indisvalid) AS attached,
                       (SELECT count(*) FROM pg_partition_tree('posts') WHERE isleaf) AS partitions
                """, index
            ).first!
            state[index] =
                "\(row.string("kind") ?? "-") valid=\(row.bool("valid").map(String.init) ?? "-") "
                + "\(row.int("attached") ?? 0)/\(row.int("partitions") ?? 0)"
        }
        return state
    }

    static func expectedState(_ db: TestDatabase) throws -> [String: String] {
        let partitions = try db.postPartitions().count
        return Dictionary(uniqueKeysWithValues: indexes.map { ($0, "I valid=true \(partitions)/\(partitions)") })
    }

    @Test(
        "migrate applies every migration on a partitioned posts: each index built per partition and attached, valid; a partition made later gets them",
        arguments: PostsLayout.partitioned)
    func migrate(_ layout: PostsLayout) throws {
        let db = try TestDatabase(posts: layout, migrated: false)
        let migrator = Migrator(appSchema: "public")
        #expect(try migrator.migrate(on: db.connection).map(\.version) == Migration.all.map(\.version))
        #expect(try migrator.pending(on: db.connection).isEmpty)
        #expect(try Self.indexState(db) == Self.expectedState(db))
        // Migration 9 dropped the pack index migration 4 built, on the parent and every partition.
        #expect(try db.count("SELECT count(*) FROM pg_class WHERE relname LIKE 'posts%pack_idx'") == 0)
        // Migration 11's storage parameter, on every partition's pack-likes index.
        #expect(
            try db.count(
                """
                SELECT count(*) FROM pg_partition_tree('posts_pack_likes_idx') t JOIN pg_class c ON c.oid = t.relid
                WHERE NOT ('deduplicate_items=off' = ANY(coalesce(c.reloptions, '{}')))
                """) == 0)
        #expect(try SchemaCheck.check(db.connection, appSchema: "public").problems.isEmpty)
        #expect(try SchemaReadiness.check(db.connection, appSchema: "public").missing.isEmpty)
        // A partition made after the migrations: PostgreSQL builds and attaches its indexes.
        if layout == .partman {
            try db.connection.execute(
                script: "UPDATE partman.part_config SET premake = premake + 2 WHERE parent_table = 'public.posts'")
            try db.connection.execute(script: "SELECT partman.run_maintenance('public.posts')")
        } else {
            try db.addDailyPartition(PostsLayout.daysAhead + 1)
        }
        #expect(try db.postPartitions().count > PostsLayout.daysBack + PostsLayout.daysAhead + 1)
        #expect(try Self.indexState(db) == Self.expectedState(db))
        #expect(
            try db.count(
                """
                SELECT count(*) FROM pg_partition_tree('posts_pack_likes_idx') t JOIN pg_class c ON c.oid = t.relid
                WHERE NOT ('deduplicate_items=off' = ANY(coalesce(c.reloptions, '{}')))
                """) == 0)
    }

    @Test(
        "an interrupted migrate on a partitioned posts: an invalid partition index is built again, a valid unattached one attached, and the parent becomes valid"
    )
    func interruptedBuild() throws {
        let db = try TestDatabase(posts: .dailyWithDefault, migrated: false)
        let partitions = try db.postPartitions()
        let (broken, unattached) = (partitions[0], partitions[1])
        // What a migrate killed during its per-partition builds leaves: the partitioned
        // index (invalid), one partition's index invalid (its build failed), another's
        // built but not yet attached.
        try db.connection.execute(
            script: """
                CREATE INDEX posts_likes_created_idx ON ONLY posts (likes, created_at);
                CREATE INDEX \(quoteIdentifier(broken + "_likes_created_idx")) ON \(quoteIdentifier(broken)) (likes, created_at);
                UPDATE pg_index SET indisvalid = false WHERE indexrelid = '\(broken)_likes_created_idx'::regclass;
                CREATE INDEX \(quoteIdentifier(unattached + "_likes_created_idx")) ON \(quoteIdentifier(unattached)) (likes, created_at);
                """)
        let oid = "SELECT oid::bigint FROM pg_class WHERE relname = $1"
        let brokenBefore = try db.count(oid, broken + "_likes_created_idx")
        let unattachedBefore = try db.count(oid, unattached + "_likes_created_idx")
        try Migrator(appSchema: "public").migrate(on: db.connection)
        #expect(try Self.indexState(db) == Self.expectedState(db))
        #expect(try db.count(oid, broken + "_likes_created_idx") != brokenBefore, "the invalid index was kept")
        #expect(try db.count(oid, unattached + "_likes_created_idx") == unattachedBefore, "the valid index was rebuilt")
    }

    @Test(
        "migration 11 on a partitioned posts whose partitions' pack-likes indexes are deduplicated: each set and rebuilt"
    )
    func packLikesIndexRebuiltPerPartition() throws {
        let db = try TestDatabase(posts: .daily)
        let first = try db.postPartitions()[0]
        let leaf = first + "_pack_likes_idx"
        try db.connection.execute(
            script: """
                ALTER INDEX \(quoteIdentifier(leaf)) RESET (deduplicate_items);
                DELETE FROM caretaker.schema_migrations WHERE version = 11;
                """)
        let node = "SELECT relfilenode::bigint FROM pg_class WHERE relname = $1"
        let before = try db.count(node, leaf)
        #expect(try Migrator(appSchema: "public").migrate(on: db.connection).map(\.version) == [11])
        #expect(try db.count(node, leaf) != before, "the partition's index was not rebuilt")
        #expect(
            try db.count(
                "SELECT count(*) FROM pg_class WHERE relname = $1 AND 'deduplicate_items=off' = ANY(reloptions)", leaf)
                == 1)
        #expect(try Self.indexState(db) == Self.expectedState(db))
    }

    @Test(
        "the pack-look triggers fire on a partitioned posts: fewer likes and moved posts mark their pack, a DELETE through posts marks the check of counted posts",
        arguments: PostsLayout.partitioned)
    func packMarks(_ layout: PostsLayout) throws {
        let db = try TestDatabase(posts: layout)
        let pack = try db.insertPack(age: "1 hour")
        let post = try db.insertPost(in: pack, likes: 3, age: "2 days")
        try db.connection.execute(script: "DELETE FROM caretaker.pack_marks")
        try db.connection.query("UPDATE posts SET likes = 1 WHERE id = $1", post)
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_marks WHERE pack_id = $1", pack) == 1)
        try db.connection.query("DELETE FROM posts WHERE id = $1", post)
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_marks WHERE pack_id IS NULL") == 1)
    }

    @Test(
        "check's advice for a lost index of migration 4, followed to the letter, rebuilds that index and not posts_pack_idx, which migration 9 dropped",
        arguments: [PostsLayout.unpartitioned] + PostsLayout.partitioned)
    func lostIndexAdvice(_ layout: PostsLayout) throws {
        let db = try TestDatabase(posts: layout)
        #expect(try db.count("SELECT count(*) FROM pg_class WHERE oid = to_regclass('posts_pack_idx')") == 0)
        try db.connection.execute(script: "DROP INDEX posts_created_idx")
        let report = try SchemaReadiness.check(db.connection, appSchema: "public")
        let advice = "DELETE FROM caretaker.schema_migrations WHERE version = 4"
        #expect(report.missing.count == 1, "\(report.missing)")
        #expect(report.message.contains("index public.posts_created_idx is missing"), "\(report.message)")
        #expect(report.message.contains(advice + ", then run `caretaker migrate`"), "\(report.message)")
        try db.connection.execute(script: advice)
        try Migrator(appSchema: "public").migrate(on: db.connection)
        #expect(try SchemaReadiness.check(db.connection, appSchema: "public").isReady)
        #expect(
            try db.count(
                "SELECT count(*) FROM pg_index WHERE indexrelid = to_regclass('posts_created_idx') AND indisvalid") == 1
        )
        #expect(
            try db.count("SELECT count(*) FROM pg_class WHERE relname LIKE 'posts%pack_idx'") == 0,
            "posts_pack_idx was built again")
    }
}
