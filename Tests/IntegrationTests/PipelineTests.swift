import CaretakerCore
import CaretakerTestSupport
import Logging
import Postgres
import Testing

/// `Connection.pipeline` (libpq pipeline mode) and the one-round-trip batch built on it.
@Suite struct PipelineTests {
    let db: TestDatabase

    init() throws {
        db = try TestDatabase()
    }

    @Test("statements come back in order, with their parameters and row counts")
    func results() throws {
        let connection = db.connection
        try connection.query("CREATE TEMP TABLE t (x int)")
        let results = try connection.pipeline([
            .init("SELECT 1 AS a"),
            .init("SELECT $1::int + 1 AS b", [41]),
            .init("INSERT INTO t VALUES (1), (2)"),
            .init("SELECT count(*) AS n FROM t"),
        ])
        #expect(results.count == 4)
        #expect(results[0].first?.int("a") == 1)
        #expect(results[1].first?.int("b") == 42)
        #expect(results[2].affectedRows == 2)
        #expect(results[3].first?.int("n") == 2)
        #expect(connection.isHealthy)
        #expect(try connection.query("SELECT 3 AS c").first?.int("c") == 3, "the connection left pipeline mode")
    }

    @Test("an error skips the rest, is thrown with its SQLSTATE, and leaves a usable connection to roll back")
    func error() throws {
        let connection = db.connection
        try connection.query("CREATE TEMP TABLE t (x int)")
        #expect {
            try connection.pipeline([
                .init("BEGIN"), .init("INSERT INTO t VALUES (3)"), .init("SELECT 1 / 0"),
                .init("INSERT INTO t VALUES (4)"), .init("COMMIT"),
            ])
        } throws: { ($0 as? PostgresError)?.sqlState == SQLState.divisionByZero }
        #expect(connection.isHealthy)
        try connection.query("ROLLBACK")
        #expect(
            try db.count("SELECT count(*) FROM t") == 0, "statements after the error ran, or the transaction committed")
    }

    @Test("a one-round-trip batch sets its timeouts for its own transaction only, and reports lock timeouts")
    func batch() throws {
        let configuration = try db.configuration("[jobs.prune]\nlock_timeout = \"1500ms\"\n")
        let job = try #require(configuration.job(named: "prune"))
        let connection = try TemporaryPostgres.shared.connect(database: db.name)
        let context = JobContext(
            connection: connection, job: job, schema: "\"public\"", dryRun: false, runID: 0,
            logger: Logger(label: "test"))
        let inside = try context.inBatch(statement: "SELECT current_setting('lock_timeout') AS t", [])
        #expect(inside.first?["t"] == "1500ms")
        #expect(try connection.query("SHOW lock_timeout").first?[0] == "0", "the timeout outlived its transaction")
        let settings =
            "SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l, "
            + "current_setting('idle_in_transaction_session_timeout') AS i"
        let closure = try context.inBatch { try $0.query(settings).first }
        let first = try context.inBatch(first: .init(settings)) { result, _ in result.first }
        for row in [closure, first] {
            #expect(
                row?["s"] == "30s" && row?["l"] == "1500ms" && row?["i"] == "1min", "\(String(describing: row?.values))"
            )
        }
        #expect(
            try connection.query(settings).first?.values == ["0", "0", "0"], "the timeouts outlived their transactions")

        try db.connection.query("CREATE TABLE held (x int)")
        try db.connection.query("INSERT INTO held VALUES (1)")
        let app = try TemporaryPostgres.shared.connect(database: db.name)
        try app.query("BEGIN")
        try app.query("SELECT * FROM held FOR UPDATE")
        #expect {
            try context.inBatch(lockTimeout: .milliseconds(100), statement: "UPDATE held SET x = $1", [2])
        } throws: { ($0 as? PostgresError)?.isLockNotAvailable == true }
        #expect(connection.isHealthy)
        #expect(try connection.query("SELECT count(*) AS n FROM held WHERE x = 1").first?.int("n") == 1)
        try app.query("ROLLBACK")
    }
}
