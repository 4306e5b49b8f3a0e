import CaretakerCore
import CaretakerTestSupport
import Postgres
import Testing

/// Operator SQL jobs (`[jobs.NAME] sql = "…"`) against a real PostgreSQL, and their validation at load.
@Suite struct OperatorSQLTests {
    let db: TestDatabase

    init() throws {
        db = try TestDatabase()
    }

    /// An `invitations` table with `count` invitations to events already past and `future` to coming ones,
    /// and the grant the README tells operators to give the worker role for `expireInvitations`.
    func invitations(past count: Int, future: Int = 0) throws {
        try db.connection.execute(
            script: """
                CREATE TABLE invitations (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, event_at timestamptz NOT NULL);
                GRANT SELECT (id, event_at), DELETE ON invitations TO \(worker);
                """)
        try db.connection.query(
            """
            INSERT INTO invitations (event_at)
            SELECT now() - g * interval '1 minute' FROM generate_series(1, $1) g
            UNION ALL SELECT now() + g * interval '1 day' FROM generate_series(1, $2) g
            """, count, future)
    }

    let worker = quoteIdentifier(TemporaryPostgres.workerRole)

    static let expireInvitations = """
        [jobs.expire-invitations]
        schedule = "@hourly"
        sql = "DELETE FROM invitations WHERE id IN (SELECT id FROM invitations WHERE event_at < now() LIMIT 1000)"
        repeat_until_zero = true
        """

    @Test("repeat_until_zero deletes 2,500 rows 1,000 at a time, one transaction each, and reports rows = 2500")
    func repeatUntilZero() throws {
        try invitations(past: 2500, future: 3)
        try db.connection.execute(
            script: "CREATE TABLE transactions_seen (xid xid8); GRANT INSERT ON transactions_seen TO \(worker)")
        try db.connection.execute(
            script: """
                CREATE FUNCTION note_transaction() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN INSERT INTO transactions_seen VALUES (pg_current_xact_id()); RETURN NULL; END $$;
                CREATE TRIGGER note_transaction AFTER DELETE ON invitations
                    FOR EACH STATEMENT EXECUTE FUNCTION note_transaction();
                """)
        let stats = try db.runSucceeding("expire-invitations", Self.expireInvitations)
        #expect(stats["rows"] == 2500)
        #expect(try db.count("SELECT count(*) FROM invitations") == 3)
        // 1000 + 1000 + 500 + a last statement that finds nothing: four transactions.
        #expect(try db.count("SELECT count(DISTINCT xid) FROM transactions_seen") == 4)
        #expect(
            try db.count(
                """
                SELECT (stats->>'rows')::int FROM caretaker.job_runs WHERE job = 'expire-invitations' AND status = 'succeeded'
                """) == 2500)
    }

    @Test("without repeat_until_zero the statement runs once")
    func runsOnce() throws {
        try invitations(past: 2500)
        let stats = try db.runSucceeding(
            "expire-invitations",
            Self.expireInvitations.replacingOccurrences(of: "repeat_until_zero = true", with: ""))
        #expect(stats["rows"] == 1000)
        #expect(try db.count("SELECT count(*) FROM invitations") == 1500)
    }

    @Test("dry run reports the rows of one execution and changes nothing")
    func dryRun() throws {
        try invitations(past: 2500)
        let stats = try db.runSucceeding("expire-invitations", Self.expireInvitations, dryRun: true)
        #expect(stats["rows"] == 1000)
        #expect(try db.count("SELECT count(*) FROM invitations") == 2500)
    }

    @Test("max_runtime stops repeating; the next run carries on")
    func maxRuntime() throws {
        try invitations(past: 2500)
        let stats = try db.runSucceeding("expire-invitations", Self.expireInvitations + "\nmax_runtime = \"1ms\"\n")
        #expect(try stats.reported("rows") >= 1000)
        #expect(try stats.reported("rows") < 2500)
        #expect(
            try db.runSucceeding("expire-invitations", Self.expireInvitations).reported("rows") == 2500
                - stats.reported("rows"))
    }

    @Test("a broken statement fails that job only, and job_runs.error records the server's error")
    func brokenStatement() throws {
        try invitations(past: 10)
        let configuration =
            Self.expireInvitations + """

                [jobs.broken]
                schedule = "@hourly"
                sql = "DELETE FROM no_such_table WHERE id = 1"
                """
        let outcome = try db.run("broken", configuration)
        guard case .finished(let runID, let status, _, let error) = outcome else {
            Issue.record("unexpected outcome \(outcome)")
            return
        }
        #expect(status == .failed)
        #expect(error?.contains("no_such_table") == true, "\(error ?? "no error")")
        let recorded = try db.connection.query("SELECT status, error FROM caretaker.job_runs WHERE id = $1", runID)
            .first
        #expect(recorded?["status"] == "failed")
        #expect(
            recorded?["error"]?.contains("relation \"no_such_table\" does not exist") == true,
            "\(recorded?["error"] ?? "")")
        #expect(
            try db.runSucceeding("expire-invitations", configuration)["rows"] == 10,
            "the other operator job still runs")
    }

    @Test("a statement that exceeds statement_timeout fails its run and rolls back")
    func statementTimeout() throws {
        try invitations(past: 10)
        let outcome = try db.run(
            "slow",
            """
            [jobs.slow]
            schedule = "@hourly"
            sql = "DELETE FROM invitations WHERE pg_sleep(1) IS NOT NULL"
            statement_timeout = "200ms"
            """)
        guard case .finished(_, let status, _, let error) = outcome else {
            Issue.record("unexpected outcome \(outcome)")
            return
        }
        #expect(status == .failed)
        #expect(error?.contains("statement timeout") == true, "\(error ?? "no error")")
        #expect(try db.count("SELECT count(*) FROM invitations") == 10)
    }

    // MARK: Validation at load

    /// The configuration error `text` (a `jobs.toml`) raises, if any.
    func loadError(_ text: String) -> ConfigurationError? {
        do {
            _ = try ConfigurationLoader.parse(text, file: "jobs.toml")
            return nil
        } catch {
            return error
        }
    }

    @Test("two statements are refused at load, naming file, line and key")
    func twoStatements() throws {
        let error = loadError(
            """
            [jobs.cleanup]
            schedule = "@hourly"
            sql = "DELETE FROM a; DELETE FROM b"
            """)
        #expect(error?.key == "jobs.cleanup.sql")
        #expect(error?.line == 3)
        #expect(
            error?.description.hasPrefix("jobs.toml:3: jobs.cleanup.sql:") == true, "\(error.map { "\($0)" } ?? "")")
    }

    @Test("a ';' inside a string literal or comment is not a second statement; a trailing ';' is fine")
    func semicolonsInLiterals() throws {
        #expect(
            loadError(
                """
                [jobs.cleanup]
                schedule = "@hourly"
                sql = "DELETE FROM notes WHERE body = 'a;b' /* ; */;"
                """) == nil)
    }

    @Test("repeat_until_zero with a SELECT is refused at load, naming the key")
    func selectWithRepeat() throws {
        let error = loadError(
            """
            [jobs.count-things]
            schedule = "@hourly"
            sql = "SELECT count(*) FROM invitations"
            repeat_until_zero = true
            """)
        #expect(error?.key == "jobs.count-things.repeat_until_zero")
        #expect(error?.line == 4)
        #expect(error?.message.contains("SELECT") == true)
    }

    @Test("a SELECT without repeat_until_zero is accepted")
    func selectOnce() throws {
        #expect(
            loadError(
                """
                [jobs.count-things]
                schedule = "@hourly"
                sql = "SELECT count(*) FROM invitations"
                """) == nil)
    }

    @Test("an operator job needs a schedule and a non-empty statement")
    func requiredKeys() throws {
        #expect(loadError("[jobs.nightly]\nsql = \"DELETE FROM a\"\n")?.key == "jobs.nightly.schedule")
        #expect(loadError("[jobs.nightly]\nschedule = \"@daily\"\nsql = \"  \"\n")?.key == "jobs.nightly.sql")
    }
}
