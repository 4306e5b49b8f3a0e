import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Synchronization
import Testing

/// `leader-succession` against a real PostgreSQL: causes, choices, archiving, inactivity, locks and a racing app.
@Suite struct LeaderSuccessionTests {
    let db: TestDatabase
    static let inactivityOn = "[jobs.leader-succession]\nleader_inactive_after = \"90d\"\n"

    init() throws {
        db = try TestDatabase()
    }

    // MARK: Arranging data

    /// A user created `created` ago; with `seen`, one session last seen that long ago.
    func user(deleted: Bool = false, created: String = "400 days", seen: String? = "1 minute") throws -> Int64 {
        let id = try db.connection.query(
            """
            INSERT INTO users (email, password_hash, created_at, deleted_at)
            VALUES (gen_random_uuid()::text || '@x.test', 'h', now() - $1::interval, CASE WHEN $2::boolean THEN now() END)
            RETURNING id
            """, created, deleted
        ).first!.int64("id")!
        if let seen {
            try db.connection.query(
                "INSERT INTO sessions (user_id, last_seen_at) VALUES ($1, now() - $2::interval)", id, seen)
        }
        return id
    }

    func community(leader: Int64? = nil, successor: Int64? = nil, archived: Bool = false) throws -> Int64 {
        try db.connection.query(
            """
            INSERT INTO communities (name, leader_id, successor_id, archived_at)
            VALUES ('c', $1::bigint, $2::bigint, CASE WHEN $3::boolean THEN now() - interval '1 day' END) RETURNING id
            """, leader, successor, archived
        ).first!.int64("id")!
    }

    /// Adds `user` to `community`, joined `ago` (an interval) or at the timestamp `at`.
    func join(_ community: Int64, _ user: Int64, ago: String = "10 days") throws {
        try db.connection.query(
            """
            INSERT INTO community_members (community_id, user_id, joined_at) VALUES ($1, $2, now() - $3::interval)
            """, community, user, ago)
    }

    func state(of community: Int64) throws -> (leader: Int64?, successor: Int64?, archived: Bool) {
        let row = try db.connection.query(
            "SELECT leader_id, successor_id, archived_at IS NOT NULL AS archived FROM communities WHERE id = $1",
            community
        ).first!
        return (row.int64("leader_id"), row.int64("successor_id"), row.bool("archived")!)
    }

    struct Change: Equatable {
        var previous: Int64?
        var new: Int64?
        var reason: String
        var chosenBy: String
        var runID: Int64?
    }

    func changes(of community: Int64) throws -> [Change] {
        try db.connection.query(
            """
            SELECT previous_leader_id, new_leader_id, reason, chosen_by, run_id
            FROM community_leader_changes WHERE community_id = $1 ORDER BY id
            """, community
        ).rows.map {
            Change(
                previous: $0.int64("previous_leader_id"), new: $0.int64("new_leader_id"),
                reason: $0["reason"]!, chosenBy: $0["chosen_by"]!, runID: $0.int64("run_id"))
        }
    }

    /// Runs the job and returns its run id and stats, failing unless it succeeded.
    func run(_ extra: String = "", dryRun: Bool = false) throws -> (runID: Int64, stats: JobStats) {
        let outcome = try db.run("leader-succession", extra, dryRun: dryRun)
        guard case .finished(let runID, .succeeded, let stats, _) = outcome else {
            Issue.record("leader-succession did not succeed: \(outcome)")
            throw CancellationError()
        }
        return (runID, stats)
    }

    // MARK: Causes and choices

    @Test("no leader: the most senior member is appointed, with a changes row carrying the run id")
    func noLeaderSeniority() throws {
        let junior = try user(), senior = try user()
        let c = try community()
        try join(c, junior, ago: "3 days")
        try join(c, senior, ago: "5 days")
        let (runID, stats) = try run()
        #expect(try state(of: c).leader == senior)
        #expect(
            try changes(of: c) == [
                Change(previous: nil, new: senior, reason: "no_leader", chosenBy: "seniority", runID: runID)
            ])
        #expect(stats["leaders_appointed"] == 1)
        #expect(stats["communities_archived"] == 0)
    }

    @Test("leader left: the appointed successor takes over and successor_id is cleared")
    func leaderLeftSuccessor() throws {
        let gone = try user(), senior = try user(), successor = try user()
        let c = try community(leader: gone, successor: successor)
        try join(c, senior, ago: "100 days")
        try join(c, successor, ago: "1 day")
        let (runID, stats) = try run()
        let after = try state(of: c)
        #expect(after.leader == successor)
        #expect(after.successor == nil)
        #expect(
            try changes(of: c) == [
                Change(previous: gone, new: successor, reason: "leader_left", chosenBy: "successor", runID: runID)
            ])
        #expect(stats["leaders_appointed"] == 1)
    }

    @Test("leader deleted: a soft-deleted leader who is still a member is replaced by seniority")
    func leaderDeleted() throws {
        let leader = try user(deleted: true), senior = try user(), junior = try user()
        let c = try community(leader: leader)
        try join(c, leader, ago: "500 days")
        try join(c, senior, ago: "20 days")
        try join(c, junior, ago: "2 days")
        let (runID, _) = try run()
        #expect(try state(of: c).leader == senior)
        #expect(
            try changes(of: c) == [
                Change(previous: leader, new: senior, reason: "leader_deleted", chosenBy: "seniority", runID: runID)
            ])
    }

    @Test("a leader both deleted and gone is recorded as leader_deleted")
    func deletedAndGone() throws {
        let leader = try user(deleted: true), member = try user()
        let c = try community(leader: leader)
        try join(c, member)
        _ = try run()
        #expect(try changes(of: c).map(\.reason) == ["leader_deleted"])
    }

    @Test("successor_id is cleared even when seniority chose")
    func successorClearedAfterSeniority() throws {
        let outsider = try user(), member = try user()
        let c = try community(successor: outsider)
        try join(c, member)
        _ = try run()
        let after = try state(of: c)
        #expect(after.leader == member)
        #expect(after.successor == nil)
        #expect(try changes(of: c).map(\.chosenBy) == ["seniority"], "a successor who is not a member is not chosen")
    }

    @Test("a deleted successor falls back to seniority")
    func deletedSuccessor() throws {
        let successor = try user(deleted: true), senior = try user(), junior = try user()
        let c = try community(successor: successor)
        try join(c, successor, ago: "900 days")
        try join(c, senior, ago: "30 days")
        try join(c, junior, ago: "3 days")
        _ = try run()
        #expect(try state(of: c).leader == senior)
        #expect(try changes(of: c).map(\.chosenBy) == ["seniority"])
    }

    @Test("deleted members are never chosen, however senior")
    func deletedMembersSkipped() throws {
        let ghost1 = try user(deleted: true), ghost2 = try user(deleted: true), alive = try user()
        let c = try community()
        try join(c, ghost1, ago: "900 days")
        try join(c, ghost2, ago: "800 days")
        try join(c, alive, ago: "1 hour")
        _ = try run()
        #expect(try state(of: c).leader == alive)
    }

    @Test("members who joined at the same instant: the smaller user id wins")
    func tieBreak() throws {
        let smaller = try user(), larger = try user()
        #expect(smaller < larger)
        let c = try community()
        for member in [larger, smaller] {
            try db.connection.query(
                """
                INSERT INTO community_members (community_id, user_id, joined_at) VALUES ($1, $2, '2024-03-01 12:00:00+00')
                """, c, member)
        }
        _ = try run()
        #expect(try state(of: c).leader == smaller)
    }

    @Test("nobody eligible: the community is archived, nothing is deleted, chosen_by = none")
    func archive() throws {
        let leader = try user(deleted: true), ghost = try user(deleted: true)
        let withGhosts = try community(leader: leader)
        try join(withGhosts, leader)
        try join(withGhosts, ghost)
        let empty = try community()
        let (runID, stats) = try run()
        #expect(stats["communities_archived"] == 2)
        #expect(stats["leaders_appointed"] == 0)
        #expect(try state(of: withGhosts).archived)
        #expect(try state(of: empty).archived)
        #expect(
            try changes(of: withGhosts) == [
                Change(previous: leader, new: nil, reason: "leader_deleted", chosenBy: "none", runID: runID)
            ])
        #expect(
            try changes(of: empty) == [
                Change(previous: nil, new: nil, reason: "no_leader", chosenBy: "none", runID: runID)
            ])
        #expect(try db.count("SELECT count(*) FROM community_members WHERE community_id = $1", withGhosts) == 2)
        #expect(try db.count("SELECT count(*) FROM communities") == 2)
        #expect(try db.count("SELECT count(*) FROM users") == 2)
    }

    @Test("an archived community is left alone, even without a leader")
    func archivedUntouched() throws {
        let member = try user()
        let c = try community(archived: true)
        try join(c, member)
        let (_, stats) = try run()
        #expect(try state(of: c).leader == nil)
        #expect(try changes(of: c).isEmpty)
        #expect(stats["leaders_appointed"] == 0)
    }

    @Test("a healthy community is left alone, and a second run changes nothing")
    func healthyAndIdempotent() throws {
        let leader = try user(), member = try user()
        let healthy = try community(leader: leader, successor: member)
        try join(healthy, leader, ago: "1 day")
        try join(healthy, member, ago: "9 days")
        let orphan = try community()
        try join(orphan, member)
        let first = try run()
        #expect(first.stats["leaders_appointed"] == 1)
        #expect(try state(of: healthy).leader == leader)
        #expect(try state(of: healthy).successor == member, "a healthy community keeps its successor")
        #expect(try changes(of: healthy).isEmpty)
        let second = try run()
        #expect(second.stats["leaders_appointed"] == 0)
        #expect(second.stats["communities_archived"] == 0)
        #expect(try db.count("SELECT count(*) FROM community_leader_changes") == 1)
    }

    // MARK: Inactivity

    @Test("inactivity is off by default: a leader unseen for a year keeps the lead")
    func inactivityOffByDefault() throws {
        let leader = try user(seen: "365 days"), active = try user()
        let c = try community(leader: leader)
        try join(c, leader)
        try join(c, active)
        let (_, stats) = try run()
        #expect(try state(of: c).leader == leader)
        #expect(stats["leaders_appointed"] == 0)
    }

    @Test("leader_inactive_after: a leader last seen a minute past the limit is replaced, a minute before is kept")
    func inactivityBoundary() throws {
        let stale = try user(seen: "\(90 * 24 * 60 + 1) minutes")
        let fresh = try user(seen: "\(90 * 24 * 60 - 1) minutes")
        let other = try user()
        let replaced = try community(leader: stale)
        let kept = try community(leader: fresh)
        for c in [replaced, kept] {
            try join(c, c == replaced ? stale : fresh, ago: "300 days")
            try join(c, other, ago: "1 day")
        }
        let (runID, stats) = try run(Self.inactivityOn)
        #expect(try state(of: replaced).leader == other)
        #expect(
            try changes(of: replaced) == [
                Change(previous: stale, new: other, reason: "leader_inactive", chosenBy: "seniority", runID: runID)
            ])
        #expect(try state(of: kept).leader == fresh)
        #expect(stats["leaders_appointed"] == 1)
    }

    @Test("last seen is the latest session, revoked ones included; with no session, the account's creation")
    func lastSeenDefinition() throws {
        let revokedRecently = try user(seen: "200 days")
        try db.connection.query(
            """
            INSERT INTO sessions (user_id, last_seen_at, revoked_at, revoked_reason)
            VALUES ($1, now() - interval '5 days', now() - interval '5 days', 'inactivity')
            """, revokedRecently)
        let neverSeenOld = try user(created: "400 days", seen: nil)
        let neverSeenNew = try user(created: "2 days", seen: nil)
        let heir = try user()
        var communities: [Int64: Int64] = [:]
        for leader in [revokedRecently, neverSeenOld, neverSeenNew] {
            let c = try community(leader: leader)
            try join(c, leader, ago: "100 days")
            try join(c, heir, ago: "1 day")
            communities[leader] = c
        }
        _ = try run(Self.inactivityOn)
        #expect(try state(of: communities[revokedRecently]!).leader == revokedRecently)
        #expect(try state(of: communities[neverSeenOld]!).leader == heir, "no session for 400 days counts as inactive")
        #expect(try state(of: communities[neverSeenNew]!).leader == neverSeenNew, "a new account is not inactive")
    }

    @Test("with inactivity on, an inactive successor or senior is passed over for an active member")
    func activeMembersPreferred() throws {
        let idleSuccessor = try user(seen: "200 days"), idleSenior = try user(seen: "100 days")
        let active = try user(seen: "1 hour")
        let c = try community(successor: idleSuccessor)
        try join(c, idleSuccessor, ago: "50 days")
        try join(c, idleSenior, ago: "400 days")
        try join(c, active, ago: "1 day")
        _ = try run(Self.inactivityOn)
        #expect(try state(of: c).leader == active)
        #expect(try changes(of: c).map(\.chosenBy) == ["seniority"])
    }

    @Test("an inactive leader with only inactive members keeps the lead; the community is not archived")
    func inactiveLeaderKept() throws {
        let leader = try user(seen: "200 days"), idle = try user(seen: "150 days")
        let c = try community(leader: leader)
        try join(c, leader)
        try join(c, idle)
        let (_, stats) = try run(Self.inactivityOn)
        let after = try state(of: c)
        #expect(after.leader == leader)
        #expect(!after.archived)
        #expect(try changes(of: c).isEmpty)
        #expect(stats["inactive_leaders_kept"] == 1)
        #expect(stats["leaders_appointed"] == 0)
    }

    @Test("with no leader and only inactive members, an inactive member still leads (seniority)")
    func inactiveMembersStillEligible() throws {
        let idleSenior = try user(seen: "200 days"), idleJunior = try user(seen: "150 days")
        let c = try community()
        try join(c, idleJunior, ago: "2 days")
        try join(c, idleSenior, ago: "20 days")
        _ = try run(Self.inactivityOn)
        #expect(try state(of: c).leader == idleSenior)
    }

    // MARK: Dry run, batches, locks

    @Test("dry run counts what would happen and changes nothing")
    func dryRun() throws {
        let member = try user()
        let needsLeader = try community()
        try join(needsLeader, member)
        let doomed = try community()
        let (_, stats) = try run(dryRun: true)
        #expect(stats["leaders_appointed"] == 1)
        #expect(stats["communities_archived"] == 1)
        #expect(try state(of: needsLeader).leader == nil)
        #expect(try !state(of: doomed).archived)
        #expect(try db.count("SELECT count(*) FROM community_leader_changes") == 0)
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs WHERE dry_run AND status = 'succeeded'") == 1)
    }

    @Test("communities are found in batches of batch_size, all of them settled")
    func batches() throws {
        let member = try user()
        for _ in 0..<25 {
            try join(try community(), member)
        }
        let (_, stats) = try run("[jobs.leader-succession]\nbatch_size = 10\n")
        #expect(stats["leaders_appointed"] == 25)
        #expect(try db.count("SELECT count(*) FROM communities WHERE leader_id IS NULL") == 0)
    }

    @Test("a community row the app holds is skipped without waiting and settled by the next run")
    func lockedCommunitySkipped() throws {
        let member = try user()
        let held = try community(), free = try community()
        try join(held, member)
        try join(free, member)
        let app = try TemporaryPostgres.shared.connect(database: db.name)
        try app.query("BEGIN")
        try app.query("SELECT id FROM communities WHERE id = $1 FOR UPDATE", held)
        let started = ContinuousClock.now
        let (_, stats) = try run("[jobs.leader-succession]\nlock_timeout = \"10s\"\n")
        #expect(ContinuousClock.now - started < .seconds(5), "the run waited for the app's lock")
        #expect(stats["leaders_appointed"] == 1)
        #expect(stats["communities_skipped"] == 1)
        #expect(try state(of: held).leader == nil)
        try app.query("COMMIT")
        #expect(try run().stats["leaders_appointed"] == 1)
        #expect(try state(of: held).leader == member)
    }

    @Test("a member the app is deleting is not appointed: the community waits for the next run")
    func memberBeingDeleted() throws {
        let senior = try user(), junior = try user()
        let c = try community()
        try join(c, senior, ago: "9 days")
        try join(c, junior, ago: "1 day")
        let app = try TemporaryPostgres.shared.connect(database: db.name)
        try app.query("BEGIN")
        try app.query("DELETE FROM community_members WHERE community_id = $1 AND user_id = $2", c, senior)
        let (_, stats) = try run("[jobs.leader-succession]\nlock_timeout = \"200ms\"\n")
        #expect(stats["communities_blocked"] == 1)
        #expect(try state(of: c).leader == nil)
        try app.query("COMMIT")
        #expect(try run().stats["leaders_appointed"] == 1)
        #expect(try state(of: c).leader == junior)
    }

    // MARK: Racing the app

    @Test("an app deleting members while the job runs never leaves a leader who is not a current, non-deleted member")
    func concurrentDeletes() throws {
        let communities = 60, membersEach = 12
        try db.connection.query(
            """
            WITH c AS (INSERT INTO communities (name) SELECT 'c' || g FROM generate_series(1, $1) g RETURNING id),
                 u AS (INSERT INTO users (email, password_hash)
                       SELECT gen_random_uuid()::text || '@x.test', 'h' FROM generate_series(1, $1 * $2) RETURNING id),
                 numbered AS (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM u),
                 cs AS (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM c)
            INSERT INTO community_members (community_id, user_id, joined_at)
            SELECT cs.id, numbered.id, now() - numbered.n * interval '1 minute'
            FROM numbered JOIN cs ON cs.n = numbered.n % $1
            """, communities, membersEach)
        try installCommitTimeCheck()
        let ids = try db.connection.query("SELECT id FROM communities ORDER BY id").rows.compactMap { $0.int64("id") }

        let app = RacingApp(connection: try TemporaryPostgres.shared.connect(database: db.name), communities: ids)
        app.start()
        defer { app.stop() }
        var runs = 0
        let started = ContinuousClock.now
        while ContinuousClock.now - started < .seconds(2) || runs < 3 {
            _ = try run("[jobs.leader-succession]\nlock_timeout = \"500ms\"\n")
            runs += 1
        }
        let deletions = app.stop()
        #expect(deletions > 50, "the app did not race the job")
        #expect(try db.count("SELECT count(*) FROM community_leader_changes") > communities)

        // The app may have removed a leader after the job appointed them: that is the next run's work.
        _ = try run()
        #expect(
            try db.count(
                """
                SELECT count(*) FROM communities c
                WHERE c.archived_at IS NULL AND NOT EXISTS (
                    SELECT 1 FROM community_members m JOIN users u ON u.id = m.user_id
                    WHERE m.community_id = c.id AND m.user_id = c.leader_id AND u.deleted_at IS NULL)
                """) == 0, "an active community is led by someone who is not a current, non-deleted member")
        #expect(
            try db.count(
                """
                SELECT count(*) FROM communities c
                WHERE c.archived_at IS NOT NULL AND EXISTS (
                    SELECT 1 FROM community_members m JOIN users u ON u.id = m.user_id
                    WHERE m.community_id = c.id AND u.deleted_at IS NULL)
                """) == 0, "a community with eligible members was archived")
    }

    /// A deferred trigger that fails any transaction committing a leader who, at that
    /// moment, is not a non-deleted member; with a pause between the choice and the
    /// commit so a racing deletion has every chance to slip in if the job did not lock.
    func installCommitTimeCheck() throws {
        try db.connection.execute(
            script: """
                CREATE FUNCTION test_leader_is_member() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NEW.archived_at IS NULL AND NEW.leader_id IS NOT NULL AND NOT EXISTS (
                        SELECT 1 FROM community_members m JOIN users u ON u.id = m.user_id
                        WHERE m.community_id = NEW.id AND m.user_id = NEW.leader_id AND u.deleted_at IS NULL) THEN
                        RAISE EXCEPTION 'leader % of community % is not a member at commit', NEW.leader_id, NEW.id;
                    END IF;
                    RETURN NULL;
                END $$;
                CREATE CONSTRAINT TRIGGER test_leader_is_member AFTER UPDATE ON communities
                    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_leader_is_member();
                CREATE FUNCTION test_pause() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_sleep(0.01); RETURN NULL; END $$;
                CREATE TRIGGER test_pause AFTER INSERT ON community_leader_changes
                    FOR EACH ROW EXECUTE FUNCTION test_pause();
                """)
    }
}

/// Another connection that, until stopped, removes the most senior member of a
/// random community (the job's likeliest choice), and now and then soft-deletes one.
final class RacingApp: Sendable {
    private let connection: Connection
    private let communities: [Int64]
    private let stopRequested = Atomic<Bool>(false)
    private let deletions = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(connection: Connection, communities: [Int64]) {
        self.connection = connection
        self.communities = communities
    }

    func start() {
        Thread.detachNewThread { [self] in
            var round = 0
            while !stopRequested.load(ordering: .relaxed) {
                round += 1
                let community = communities.randomElement()!
                let sql =
                    round % 5 == 0
                    ? """
                    UPDATE users SET deleted_at = now() WHERE id = (
                        SELECT m.user_id FROM community_members m JOIN users u ON u.id = m.user_id
                        WHERE m.community_id = $1 AND u.deleted_at IS NULL ORDER BY m.joined_at, m.user_id LIMIT 1)
                    """
                    : """
                    DELETE FROM community_members WHERE community_id = $1 AND user_id = (
                        SELECT user_id FROM community_members WHERE community_id = $1 ORDER BY joined_at, user_id LIMIT 1)
                    """
                if let changed = try? connection.query(sql, community).affectedRows {
                    deletions.add(changed, ordering: .relaxed)
                }
                Thread.sleep(forTimeInterval: 0.005)
            }
            finished.signal()
        }
    }

    /// Stops the loop (once; later calls just report) and returns how many rows it deleted or soft-deleted.
    @discardableResult
    func stop() -> Int {
        stopRequested.store(true, ordering: .relaxed)
        if !stopped.exchange(true, ordering: .relaxed) { finished.wait() }
        return deletions.load(ordering: .relaxed)
    }
}
