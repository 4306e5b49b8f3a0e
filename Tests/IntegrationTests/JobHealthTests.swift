import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

/// `JobHealth`'s grace for a job that never succeeded. The commands (`check`,
/// `status`, the dashboard): `stale_after` from the schema's first migration
/// (SPEC §2). The daemon: from when caretaker first saw the job (its first claimed
/// slot or run, else since the daemon watched it), never earlier than the migration.
@Suite struct JobHealthTests {
    /// A job added long after `caretaker migrate`: the schema was migrated 30 days ago.
    static let fresh = "[jobs.fresh]\nschedule = \"@every 10m\"\nsql = \"SELECT 1\"\nstale_after = \"1h\"\n"

    static func migrated(_ db: TestDatabase, ago age: String) throws {
        try db.connection.query("UPDATE caretaker.schema_migrations SET applied_at = now() - $1::interval", age)
    }

    /// As the daemon judges (`watchedFor` given; `[:]`: it has just started), or as
    /// the commands do (`nil`).
    static func health(
        _ db: TestDatabase, watchedFor: [String: Duration]? = [:]
    ) throws -> JobHealth {
        try #require(
            JobHealth.assess(db.connection, configuration: db.configuration(fresh), watchedFor: watchedFor)
                .first { $0.job == "fresh" })
    }

    static func slot(_ db: TestDatabase, claimed age: String) throws {
        try db.connection.query(
            "INSERT INTO caretaker.job_slots (job, slot, claimed_at) VALUES ('fresh', now() - $1::interval, now() - $1::interval)",
            age)
    }

    static func run(_ db: TestDatabase, status: String, started age: String, dryRun: Bool = false) throws {
        try db.connection.query(
            """
            INSERT INTO caretaker.job_runs (job, trigger, status, started_at, finished_at, dry_run, error, host, pid)
            VALUES ('fresh', 'schedule', $1, now() - $2::interval,
                    CASE WHEN $1 <> 'running' THEN now() - $2::interval END, $3, 'boom', 'h', 1)
            """, status, age, dryRun)
    }

    @Test(
        "check, status, the dashboard: a job that has not run yet fails once stale_after has passed since the migration"
    )
    func commandsCountFromTheMigration() throws {
        let db = try TestDatabase()
        try Self.migrated(db, ago: "59 minutes")
        let young = try Self.health(db, watchedFor: nil)
        #expect(young.healthy && young.reason == "has not run yet", "\(young.reason)")
        try Self.migrated(db, ago: "61 minutes")
        let old = try Self.health(db, watchedFor: nil)
        #expect(!old.healthy)
        #expect(old.reason == "has never succeeded, and the schema was migrated more than 1h ago", "\(old.reason)")
        // A slot claimed a minute ago changes nothing for them: the daemon that claimed it gives the grace.
        try Self.slot(db, claimed: "1 minute")
        #expect(try !Self.health(db, watchedFor: nil).healthy)
        #expect(try Self.health(db).healthy)
    }

    @Test("the daemon: a new job with no slot or run is not run yet; watched past its grace, never succeeded")
    func noRowsCountsFromTheWatch() throws {
        let db = try TestDatabase()
        try Self.migrated(db, ago: "30 days")
        let unseen = try Self.health(db)
        #expect(unseen.healthy && unseen.reason == "has not run yet", "\(unseen.reason)")
        #expect(try Self.health(db, watchedFor: ["fresh": .seconds(59 * 60)]).healthy)
        let overdue = try Self.health(db, watchedFor: ["fresh": .seconds(61 * 60)])
        #expect(!overdue.healthy)
        #expect(
            overdue.reason == "has never succeeded in the 1h (stale_after) since caretaker first saw it",
            "\(overdue.reason)")
    }

    @Test(
        "the daemon: the grace counts from the job's first claimed slot or run, whichever came first, not from the migration"
    )
    func graceFromFirstSlotOrRun() throws {
        let db = try TestDatabase()
        try Self.migrated(db, ago: "30 days")
        try Self.slot(db, claimed: "50 minutes")
        try Self.run(db, status: "running", started: "50 minutes")
        #expect(try Self.health(db).healthy, "within its grace, however long ago the schema was migrated")
        // A longer watch by this process does not shorten the grace the history gives.
        #expect(try Self.health(db, watchedFor: ["fresh": .seconds(86_400)]).healthy)
        try Self.slot(db, claimed: "61 minutes")
        let bySlot = try Self.health(db)
        #expect(!bySlot.healthy && bySlot.reason.hasPrefix("has never succeeded"), "\(bySlot.reason)")

        let other = try TestDatabase()
        try Self.migrated(other, ago: "30 days")
        try Self.run(other, status: "skipped", started: "61 minutes")
        #expect(try !Self.health(other).healthy, "a skipped slot 61 minutes ago: past the grace")
    }

    @Test(
        "the daemon: dry runs are not when caretaker first saw a job; a migration newer than the first row still gives its grace"
    )
    func dryRunsAndRecentMigration() throws {
        let db = try TestDatabase()
        try Self.migrated(db, ago: "30 days")
        try Self.run(db, status: "succeeded", started: "2 hours", dryRun: true)
        #expect(try Self.health(db).healthy)
        try Self.migrated(db, ago: "10 minutes")
        try Self.slot(db, claimed: "2 hours")
        #expect(try Self.health(db).healthy, "the later of the migration and the first slot")
        try Self.migrated(db, ago: "61 minutes")
        #expect(try !Self.health(db).healthy)
    }

    @Test("an old migration and a failed run: last run failed, as before, within the grace or past it")
    func failedRunStillFails() throws {
        let db = try TestDatabase()
        try Self.migrated(db, ago: "30 days")
        try Self.run(db, status: "failed", started: "5 minutes")
        let failed = try Self.health(db)
        #expect(!failed.healthy && failed.reason == "last run failed: boom", "\(failed.reason)")
        #expect(try Self.health(db, watchedFor: nil).reason == "last run failed: boom")
        try Self.run(db, status: "failed", started: "2 hours")
        #expect(try Self.health(db).reason == "last run failed: boom")
        try db.connection.query("DELETE FROM caretaker.job_runs WHERE started_at > now() - interval '1 hour'")
        try Self.run(db, status: "interrupted", started: "5 minutes")
        let interrupted = try Self.health(db)
        #expect(
            !interrupted.healthy && interrupted.reason.hasPrefix("has never succeeded"),
            "failing for two hours, then interrupted: \(interrupted.reason)")
    }
}
