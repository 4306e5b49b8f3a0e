import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

/// No job runs on a schema with a migration pending: `once` stops with what `check` says.
@Suite struct SchemaReadinessCLITests {
    @Test(
        "once on a schema with migrations pending exits 78 with check's message, before any job statement; after migrate it runs"
    )
    func onceRefusesPendingMigrations() throws {
        let db = try TestDatabase()
        try db.connection.execute(script: "DELETE FROM caretaker.schema_migrations WHERE version >= 10")
        // A due pack and post: a job statement would delete them.
        let pack = try db.insertPack(age: "3 days")
        try db.insertPost(in: pack, likes: 0, age: "3 days")
        let config = try db.writeConfiguration()
        let check = try Caretaker.run(["check", "--json", "--config", config])
        #expect(check.status == 1)
        let message =
            "caretaker's schema is not up to date: 2 migration(s) pending (10 (pack looks), "
            + "11 (pack likes index without deduplication)): run `caretaker migrate`"
        #expect(check.stdout.contains(message), "\(check.stdout)")
        let once = try Caretaker.run(["once", "expire-content", "--config", config])
        #expect(once.status == 78, "\(once.stderr)")
        #expect(once.stderr.contains(message), "\(once.stderr)")
        #expect(!once.stderr.contains("run started"), "\(once.stderr)")
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs") == 0)
        #expect(try db.count("SELECT count(*) FROM packs") == 1)
        let status = try Caretaker.run(["status", "--config", config])
        #expect(status.stdout.contains(message + "; no job runs until then"), "\(status.stdout)")

        #expect(try Caretaker.run(["migrate", "--config", config]).status == 0)
        let after = try Caretaker.run(["once", "expire-content", "--config", config])
        #expect(after.status == 0, "\(after.stderr)")
        #expect(try db.count("SELECT count(*) FROM packs") == 0)
    }

    @Test("check and once name an index a migration built that is gone, on a partitioned posts")
    func missingIndexNamed() throws {
        let db = try TestDatabase(posts: .dailyWithDefault)
        let config = try db.writeConfiguration()
        #expect(try Caretaker.run(["check", "--config", config]).status == 0)
        try db.connection.execute(script: "DROP INDEX posts_author_idx")
        let check = try Caretaker.run(["check", "--config", config])
        #expect(check.status == 1)
        let missing =
            "index public.posts_author_idx is missing; migration 4 (expiry indexes) builds it: "
            + "DELETE FROM caretaker.schema_migrations WHERE version = 4, then run `caretaker migrate`"
        #expect(check.stdout.contains(missing), "\(check.stdout)")
        let once = try Caretaker.run(["once", "prune", "--config", config])
        #expect(once.status == 78, "\(once.stderr)")
        #expect(once.stderr.contains(missing), "\(once.stderr)")
        try db.connection.execute(script: "DELETE FROM caretaker.schema_migrations WHERE version = 4")
        #expect(try Caretaker.run(["migrate", "--config", config]).status == 0)
        let healthy = try Caretaker.run(["check", "--config", config])
        #expect(healthy.status == 0, "\(healthy.stdout)")
        // The pack-look triggers on the partitioned posts, likewise.
        try db.connection.execute(script: "DROP TRIGGER caretaker_mark_post_deleted ON posts")
        let trigger = try Caretaker.run(["check", "--config", config])
        #expect(trigger.status == 1)
        #expect(
            trigger.stdout.contains(
                "trigger caretaker_mark_post_deleted on public.posts is missing; migration 10 (pack looks) creates it"),
            "\(trigger.stdout)")
        try db.connection.execute(script: "DELETE FROM caretaker.schema_migrations WHERE version = 10")
        #expect(try Caretaker.run(["migrate", "--config", config]).status == 0)
        #expect(try Caretaker.run(["check", "--config", config]).status == 0)
    }
}
