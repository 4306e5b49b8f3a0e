import CaretakerTestSupport
import Foundation
import Postgres
import Testing

@testable import CaretakerCore
@testable import CaretakerJobs

/// `expire-content` looks at a pack only when it may be due (migration 10): each look
/// records when the pack can next be due, and whatever lowers a pack's popularity
/// in between leaves a mark that makes the next run look again. Each case here
/// keeps a pack through a first run, lowers its popularity, and needs the second
/// run to delete it: without the mark, the look recorded by the first run would
/// keep the pack for hours.
@Suite struct PackLookTests {
    let db: TestDatabase

    init() throws {
        db = try TestDatabase()
    }

    func pack(age: String, admin: Bool = false, members: Int = 0) throws -> Int64 {
        try db.insertPack(age: age, admin: admin, members: members)
    }

    @discardableResult
    func post(in pack: Int64, likes: Int, age: String = "1 minute") throws -> Int64 {
        try db.insertPost(in: pack, likes: likes, age: age)
    }

    /// The runs after migrating, with no pack yet: the first looks at every pack, the
    /// second only at what is due or marked (each test makes its packs after these).
    func firstRuns() throws {
        try db.runSucceeding("expire-content")
        try db.runSucceeding("expire-content")
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_look_state WHERE settings <> ''") == 1)
    }

    func exists(pack id: Int64) throws -> Bool {
        try db.count("SELECT count(*) FROM packs WHERE id = $1", id) == 1
    }

    /// The pack's recorded look, as `look_at`'s distance from the pack's `created_at`, and the row's `xmin`.
    func look(_ pack: Int64) throws -> (afterCreation: String, xmin: String)? {
        try db.connection.query(
            """
            SELECT (l.look_at - p.created_at)::text AS after, l.xmin::text AS xmin
            FROM caretaker.pack_looks l JOIN packs p ON p.id = l.pack_id WHERE l.pack_id = $1
            """, pack
        ).first.map { ($0["after"]!, $0["xmin"]!) }
    }

    /// A change that can make a pack due sooner, made between two runs.
    enum Lowering: String, CaseIterable, CustomTestStringConvertible {
        case unlike, appDeletesPost, postMoves, memberLeaves, memberMoves, postsTruncated, membersTruncated
        case packMadeExpirable, packMadeOlder, packArrivesBackdated
        var testDescription: String { rawValue }
    }

    @Test(
        "whatever lowers a pack's popularity or brings its deadline nearer makes the next run look again",
        arguments: Lowering.allCases)
    func lowering(_ lowering: Lowering) throws {
        try firstRuns()
        // At 30 h a pack is due at a popularity of at most 25 (100 × 6 ÷ 24).
        let elsewhere = try pack(age: "1 hour", admin: true)
        var target: Int64 = 0
        switch lowering {
        case .unlike, .postMoves, .postsTruncated:
            target = try pack(age: "30 hours")
            try post(in: target, likes: 100)
        case .appDeletesPost:  // the look counts the first post only: it reaches the full popularity
            target = try pack(age: "30 hours")
            try post(in: target, likes: 100)
            try post(in: target, likes: 10)
        case .memberLeaves, .memberMoves, .membersTruncated:
            target = try pack(age: "30 hours", members: 26)
        case .packMadeExpirable:
            target = try pack(age: "30 hours", admin: true)
        case .packMadeOlder:
            target = try pack(age: "1 hour")
        case .packArrivesBackdated:
            break
        }
        try db.runSucceeding("expire-content")
        if target != 0 {
            #expect(try exists(pack: target), "the first run deleted the pack: the case tests nothing")
        }
        if lowering != .packMadeExpirable {
            #expect(
                try db.count("SELECT count(*) FROM caretaker.pack_looks WHERE look_at > now()") == (target != 0 ? 1 : 0)
            )
        }
        switch lowering {
        case .unlike: try db.connection.query("UPDATE posts SET likes = 0 WHERE pack_id = $1", target)
        case .appDeletesPost: try db.connection.query("DELETE FROM posts WHERE pack_id = $1 AND likes = 100", target)
        case .postMoves: try db.connection.query("UPDATE posts SET pack_id = $1 WHERE pack_id = $2", elsewhere, target)
        case .memberLeaves:
            try db.connection.query(
                "DELETE FROM pack_members WHERE ctid = (SELECT ctid FROM pack_members WHERE pack_id = $1 LIMIT 1)",
                target)
        case .memberMoves:
            try db.connection.query(
                """
                UPDATE pack_members SET pack_id = $1
                WHERE ctid = (SELECT ctid FROM pack_members WHERE pack_id = $2 LIMIT 1)
                """, elsewhere, target)
        case .postsTruncated: try db.connection.query("TRUNCATE posts")
        case .membersTruncated: try db.connection.query("TRUNCATE pack_members")
        case .packMadeExpirable: try db.connection.query("UPDATE packs SET is_admin = false WHERE id = $1", target)
        case .packMadeOlder:
            try db.connection.query("UPDATE packs SET created_at = now() - interval '25 hours' WHERE id = $1", target)
        case .packArrivesBackdated: target = try pack(age: "25 hours")
        }
        let stats = try db.runSucceeding("expire-content")
        #expect(try !exists(pack: target), "the second run kept a pack that is due")
        #expect(stats["packs_deleted"] == 1)
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_looks WHERE pack_id = $1", target) == 0)
        #expect(
            try db.count("SELECT count(*) FROM caretaker.pack_marks") == 0,
            "deleting the pack, its members and its posts left marks")
    }

    @Test("a run with nothing due looks at no pack again, and likes going up leave no mark")
    func nothingDue() throws {
        try firstRuns()
        let popular = try pack(age: "30 hours")
        try post(in: popular, likes: 150)
        let young = try pack(age: "1 hour", members: 3)
        let admin = try pack(age: "30 hours", admin: true)
        try db.runSucceeding("expire-content")
        // The popular pack can be due only at its maximum lifetime, the young one when
        // its 3 members' lifetime ends (24 h + 24 h × 3 ÷ 100); the admin pack has no look.
        let popularLook = try #require(try look(popular))
        let youngLook = try #require(try look(young))
        #expect(popularLook.afterCreation == "2 days")
        #expect(youngLook.afterCreation == "1 day 00:43:12")
        #expect(try look(admin) == nil)
        try db.connection.query("UPDATE posts SET likes = likes + 1")
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_marks") == 0)
        #expect(try db.runSucceeding("expire-content")["packs_looked"] == 0)
        #expect(try look(popular)?.xmin == popularLook.xmin, "the second run looked at the popular pack again")
        #expect(try look(young)?.xmin == youngLook.xmin, "the second run looked at the young pack again")
    }

    @Test("a look is due by the time a post it counted can expire: the pack goes the run after that post")
    func countedPostExpires() throws {
        try firstRuns()
        // The pack's only likes are on a post already past its own 48 h: the first run
        // counts them (packs go first) and then deletes the post, leaving no mark.
        let target = try pack(age: "30 hours")
        let counted = try post(in: target, likes: 100, age: "49 hours")
        let expiredAt = try db.connection.query(
            "SELECT (created_at + interval '48 hours')::text AS at FROM posts WHERE id = $1", counted
        ).first!["at"]!
        let first = try db.runSucceeding("expire-content")
        #expect(first["posts_deleted"] == 1)
        #expect(try exists(pack: target))
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_marks") == 0, "caretaker's own delete left a mark")
        #expect(
            try db.count(
                "SELECT count(*) FROM caretaker.pack_looks WHERE pack_id = $1 AND look_at = $2::timestamptz", target,
                expiredAt) == 1,
            "the look is not due when the post expires")
        let second = try db.runSucceeding("expire-content")
        #expect(second["packs_deleted"] == 1)
        #expect(try !exists(pack: target))
    }

    @Test("a post made older marks its pack: the pack goes the run after the post")
    func postMadeOlder() throws {
        try firstRuns()
        let target = try pack(age: "30 hours")
        let liked = try post(in: target, likes: 100)
        try db.runSucceeding("expire-content")
        try db.connection.query("UPDATE posts SET created_at = now() - interval '49 hours' WHERE id = $1", liked)
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_marks WHERE pack_id = $1", target) == 1)
        #expect(try db.runSucceeding("expire-content")["posts_deleted"] == 1)
        #expect(try db.runSucceeding("expire-content")["packs_deleted"] == 1)
        #expect(try !exists(pack: target))
    }

    @Test("other settings make the next run look at every pack again")
    func settingsChange() throws {
        try firstRuns()
        let target = try pack(age: "31 hours")
        try post(in: target, likes: 150)
        try db.runSucceeding("expire-content")
        #expect(try exists(pack: target))
        let stats = try db.runSucceeding("expire-content", "[jobs.expire-content]\nmax_lifetime = \"30h\"\n")
        #expect(stats["packs_deleted"] == 1)
        #expect(stats["packs_looked"] == 1, "\(stats)")
        #expect(try !exists(pack: target))
    }

    @Test("a mark that never came (triggers bypassed) is made up for by the look at every pack a day later")
    func dailyLook() throws {
        try firstRuns()
        let target = try pack(age: "30 hours")
        try post(in: target, likes: 100)
        try db.runSucceeding("expire-content")
        try db.connection.execute(
            script: """
                SET session_replication_role = replica;
                UPDATE posts SET likes = 0;
                RESET session_replication_role;
                """)
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_marks") == 0)
        try db.runSucceeding("expire-content")
        #expect(try exists(pack: target), "the run looked at every pack although the last look was recent")
        try db.connection.query("UPDATE caretaker.pack_look_state SET full_look_at = now() - interval '1 day'")
        #expect(try db.runSucceeding("expire-content")["packs_deleted"] == 1)
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_look_state WHERE full_look_at = now()") == 0)
        #expect(
            try db.count(
                "SELECT count(*) FROM caretaker.pack_look_state WHERE full_look_at > now() - interval '1 minute'") == 1)
    }

    @Test("a TRUNCATE while every pack is being looked at keeps the next run looking at every pack")
    func truncateDuringFullLook() throws {
        let generation = try db.connection.query("SELECT generation FROM caretaker.pack_look_state").first!.int64(
            "generation")!
        try db.connection.query("TRUNCATE pack_members")
        try db.connection.query(
            ExpireContentQueries.finishFullLook, "settings", "2026-01-01 00:00:00+00", generation, false)
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_look_state WHERE settings = ''") == 1)
        try db.connection.query(
            ExpireContentQueries.finishFullLook, "settings", "2026-01-01 00:00:00+00", generation + 1, false)
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_look_state WHERE settings = 'settings'") == 1)
    }

    @Test("the app's writes leave their marks without any right on caretaker's tables")
    func appRoleNeedsNoGrant() throws {
        try firstRuns()
        let target = try pack(age: "30 hours")
        try post(in: target, likes: 100)
        try db.connection.query("DELETE FROM caretaker.pack_marks")
        try db.connection.execute(
            script: """
                CREATE ROLE caretaker_test_app NOLOGIN;
                GRANT SELECT, UPDATE, DELETE ON posts TO caretaker_test_app;
                GRANT SELECT, DELETE ON pack_members TO caretaker_test_app;
                SET ROLE caretaker_test_app;
                UPDATE posts SET likes = likes - 1;
                DELETE FROM posts;
                RESET ROLE;
                """)
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_marks WHERE pack_id = $1", target) == 1)
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_marks WHERE pack_id IS NULL") == 1)
    }

    @Test(
        "while expire-content has not looked at every pack for two days, the app's writes leave no mark; the run that resumes looks at every pack twice"
    )
    func noMarksWhileOff() throws {
        try firstRuns()
        let target = try pack(age: "30 hours")
        try post(in: target, likes: 100)
        try db.runSucceeding("expire-content")
        try db.connection.query(
            "UPDATE caretaker.pack_look_state SET full_look_at = now() - interval '2 days 1 minute'")
        try db.connection.query("UPDATE posts SET likes = likes - 1")
        try pack(age: "1 hour")
        #expect(
            try db.count("SELECT count(*) FROM caretaker.pack_marks") == 0,
            "marks piled up while expire-content was off")
        try db.runSucceeding("expire-content")
        #expect(
            try db.count("SELECT count(*) FROM caretaker.pack_look_state WHERE settings = ''") == 1,
            "the run that resumed did not ask for a second look at every pack")
        try db.connection.query("UPDATE posts SET likes = 0")
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_marks") == 1, "the triggers did not mark again")
        #expect(try db.runSucceeding("expire-content")["packs_deleted"] == 1)
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_look_state WHERE settings <> ''") == 1)
    }

    @Test("posts the looks did not count can go: the run after checks the counted ones and looks at no pack again")
    func uncountedPostDeleted() throws {
        try firstRuns()
        let target = try pack(age: "30 hours")
        try post(in: target, likes: 100)
        let uncounted = try post(in: target, likes: 10)
        try db.runSucceeding("expire-content")
        let before = try #require(try look(target))
        try db.connection.query("DELETE FROM posts WHERE id = $1", uncounted)
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_marks WHERE pack_id IS NULL") == 1)
        try db.runSucceeding("expire-content")
        #expect(try exists(pack: target))
        #expect(try look(target)?.xmin == before.xmin, "the run looked at the pack again")
        #expect(try db.count("SELECT count(*) FROM caretaker.pack_look_state WHERE check_counted") == 0)
    }

    @Test("a due pack the app holds while every pack is looked at is looked at again by the next run")
    func heldDuringFullLook() throws {
        try firstRuns()
        let held = try pack(age: "3 days")
        try db.connection.query("DELETE FROM caretaker.pack_marks")
        try db.connection.query("UPDATE caretaker.pack_look_state SET settings = ''")
        let app = try TemporaryPostgres.shared.connect(database: db.name)
        try app.query("BEGIN")
        try app.query("SELECT id FROM packs WHERE id = $1 FOR UPDATE", held)
        let first = try db.runSucceeding("expire-content")
        #expect(try first.reported("packs_looked") >= 1)
        #expect(try exists(pack: held))
        try app.query("ROLLBACK")
        #expect(try db.runSucceeding("expire-content")["packs_deleted"] == 1)
        #expect(try !exists(pack: held))
    }
}
