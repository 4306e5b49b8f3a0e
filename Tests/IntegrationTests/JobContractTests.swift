import CaretakerTestSupport
import Logging
import Postgres
import Synchronization
import Testing

@testable import CaretakerCore
@testable import CaretakerDatabase
@testable import CaretakerJobs

/// The contract between the runner and a job: a job returns what it did, the
/// context records why it stopped, and the runner decides `interrupted` from that.
@Suite struct JobContractTests {
    let db: TestDatabase

    init() throws {
        db = try TestDatabase()
    }

    /// `idle` sessions idle for an hour and one active one.
    func sessions(idle: Int) throws {
        let user = try #require(
            try db.connection.query(
                "INSERT INTO users (email, password_hash) VALUES ('u@x.test', 'h') RETURNING id"
            ).first?.int64("id"))
        try db.connection.query(
            """
            INSERT INTO sessions (user_id, created_at, last_seen_at)
            SELECT $1::bigint, now() - interval '1 day', now() - interval '1 hour' FROM generate_series(1, $2::int)
            UNION ALL SELECT $1::bigint, now() - interval '1 day', now()
            """, user, idle)
    }

    /// Runs logout-inactive with `batch_size = 1`; the worker starts shutting down at
    /// the `stopAt`-th time the run asks (1: before the first batch).
    func runLogoutInactive(stopAt: Int) throws -> RunOutcome {
        let configuration = try db.configuration("[jobs.logout-inactive]\nbatch_size = 1\nbatch_pause = \"0s\"\n")
        let job = try #require(configuration.job(named: "logout-inactive"))
        let asked = Atomic<Int>(0)
        return try JobRunner(configuration: configuration, mail: nil, logger: Logger(label: "test"))
            .run(
                .init(job: job, trigger: .manual), on: try db.connectAsWorker(),
                stopRequested: { asked.add(1, ordering: .relaxed).newValue >= stopAt })
    }

    func revoked() throws -> Int {
        try db.count("SELECT count(*) FROM sessions WHERE revoked_at IS NOT NULL")
    }

    @Test("a shutdown between batches: the run is interrupted and records the stats of the batches it did")
    func shutdownBetweenBatches() throws {
        try sessions(idle: 3)
        let outcome = try runLogoutInactive(stopAt: 2)
        guard case .finished(let runID, let status, let stats, let error) = outcome else {
            Issue.record("not run: \(outcome)")
            return
        }
        #expect(status == .interrupted)
        #expect(error == "stopped by shutdown between batches")
        #expect(stats == JobStats([("sessions_revoked", 1), ("sessions_blocked", 0)]))
        #expect(try revoked() == 1, "one batch of one session, then the stop")
        let row = try #require(
            try db.connection.query(
                "SELECT status, (stats->>'sessions_revoked')::int AS revoked FROM caretaker.job_runs WHERE id = $1",
                runID
            ).first)
        #expect(row["status"] == "interrupted" && row.int("revoked") == 1)
    }

    @Test("a shutdown before the first batch: interrupted, nothing changed")
    func shutdownBeforeWork() throws {
        try sessions(idle: 2)
        let outcome = try runLogoutInactive(stopAt: 1)
        guard case .finished(_, let status, let stats, _) = outcome else {
            Issue.record("not run: \(outcome)")
            return
        }
        #expect(status == .interrupted)
        #expect(stats["sessions_revoked"] == 0)
        #expect(try revoked() == 0)
    }

    @Test("a shutdown once the work is done leaves the run succeeded: a short batch asks no more")
    func shutdownAfterWork() throws {
        try sessions(idle: 0)
        let outcome = try runLogoutInactive(stopAt: 2)
        guard case .finished(_, let status, let stats, let error) = outcome else {
            Issue.record("not run: \(outcome)")
            return
        }
        #expect(status == .succeeded && error == nil)
        #expect(stats["sessions_revoked"] == 0)
    }

    @Test("inTransaction: .commit keeps the body's changes, .rollback and an error undo them")
    func transactionCompletion() throws {
        let configuration = try db.configuration()
        let job = try #require(configuration.job(named: "prune"))
        let connection = try TemporaryPostgres.shared.connect(database: db.name)
        let context = JobContext(
            connection: connection, job: job, schema: "\"public\"", dryRun: false, runID: 0,
            logger: Logger(label: "test"))
        try db.connection.query("CREATE TABLE kept (x int)")
        try context.inTransaction {
            try $0.query("INSERT INTO kept VALUES (1)")
            return .commit
        }
        try context.inTransaction {
            try $0.query("INSERT INTO kept VALUES (2)")
            return .rollback
        }
        #expect(throws: PostgresError.self) {
            try context.inTransaction {
                try $0.query("INSERT INTO kept VALUES (3)")
                try $0.query("SELECT 1 / 0")
                return .commit
            }
        }
        #expect(try db.count("SELECT count(*) FROM kept WHERE x = 1") == 1)
        #expect(try db.count("SELECT count(*) FROM kept WHERE x <> 1") == 0, "a rolled-back body's row stayed")
        try connection.query("INSERT INTO kept VALUES (10)")
        #expect(try db.count("SELECT count(*) FROM kept WHERE x = 10") == 1, "the connection was left in a transaction")
    }
}
