import CaretakerCore
import CaretakerTestSupport
import Testing

@testable import Postgres

/// `PostgresError` keeps the server's fields that say where (DETAIL, HINT,
/// constraint, schema, table, column) and which statement failed, and never a value.
@Suite struct PostgresErrorTests {
    let db: TestDatabase

    init() throws {
        db = try TestDatabase()
    }

    /// A value shaped like a bcrypt hash: what must never reach an error.
    static let secret = "$2b$12$SECRETsecretSECRETsecretSECRETsecretSECRETsecretSECRE"

    let worker = quoteIdentifier(TemporaryPostgres.workerRole)

    /// `accounts` with one row holding `secret`, a check on `note` and a unique `email`.
    func accounts() throws {
        try db.connection.execute(
            script: """
                CREATE TABLE accounts (id bigint PRIMARY KEY, email text UNIQUE, password_hash text NOT NULL,
                                       note text CHECK (length(note) < 10));
                GRANT SELECT, INSERT, UPDATE ON accounts TO \(worker);
                """)
        try db.connection.query("INSERT INTO accounts VALUES (1, $1, $2, 'ok')", "owner-of-\(Self.secret)", Self.secret)
    }

    func thrown(_ body: () throws -> Void) -> PostgresError? {
        do {
            try body()
            return nil
        } catch {
            return error as? PostgresError
        }
    }

    @Test("a check violation keeps constraint, schema, table and statement; its DETAIL keeps no row values")
    func checkViolation() throws {
        try accounts()
        let error = try #require(
            thrown {
                try db.connection.query("UPDATE accounts SET note = $2 WHERE id = $1", 1, "far too long a note")
            })
        #expect(error.sqlState == SQLState.checkViolation)
        #expect(error.constraint == "accounts_note_check")
        #expect(error.schema == "public" && error.table == "accounts")
        #expect(error.detail == "Failing row contains (…).")
        #expect(error.statement == "UPDATE accounts SET note = $2 WHERE id = $1")
        let text = "\(error)"
        #expect(text.contains("constraint accounts_note_check on table public.accounts"), "\(text)")
        #expect(text.contains("detail: Failing row contains (…)."), "\(text)")
        #expect(text.contains("statement: UPDATE accounts SET note = $2 WHERE id = $1"), "\(text)")
        #expect(!text.contains("SECRET") && !text.contains("far too long"), "\(text)")
    }

    @Test("unique and foreign-key violations name the key's columns, not its values")
    func keyViolations() throws {
        try accounts()
        let unique = try #require(
            thrown {
                try db.connection.query("INSERT INTO accounts VALUES (2, $1, 'x', NULL)", "owner-of-\(Self.secret)")
            })
        #expect(unique.sqlState == SQLState.uniqueViolation)
        #expect(unique.detail == "Key (email)=(…) already exists.")
        #expect(unique.constraint == "accounts_email_key")
        try db.connection.execute(script: "CREATE TABLE logins (account_id bigint REFERENCES accounts, token text)")
        let missing = try #require(
            thrown {
                try db.connection.query("INSERT INTO logins VALUES ($1, 'x')", 424242)
            })
        #expect(missing.sqlState == SQLState.foreignKeyViolation)
        #expect(missing.detail == "Key (account_id)=(…) is not present in table \"accounts\".")
        #expect(!"\(missing)".contains("424242"), "\(missing)")
        try db.connection.query("INSERT INTO logins VALUES (1, 'x')")
        let referenced = try #require(thrown { try db.connection.query("DELETE FROM accounts WHERE id = 1") })
        #expect(referenced.detail == "Key (id)=(…) is still referenced from table \"logins\".")
        let notNull = try #require(
            thrown {
                try db.connection.query("INSERT INTO accounts VALUES (3, $1, NULL, NULL)", Self.secret)
            })
        #expect(notNull.sqlState == SQLState.notNullViolation)
        #expect(notNull.column == "password_hash", "\(notNull)")
        #expect(notNull.detail == "Failing row contains (…).")
        #expect(!"\(notNull)".contains("SECRET"), "\(notNull)")
    }

    @Test("an exclusion conflict keeps both keys' columns and neither's values")
    func exclusionConflict() throws {
        try db.connection.execute(
            script: """
                CREATE TABLE bookings (during tstzrange, EXCLUDE USING gist (during WITH &&));
                INSERT INTO bookings VALUES (tstzrange('2030-01-01', '2030-01-03'));
                """)
        let error = try #require(
            thrown {
                try db.connection.query("INSERT INTO bookings VALUES (tstzrange($1, $2))", "2030-01-02", "2030-01-04")
            })
        #expect(error.detail == "Key (during)=(…) conflicts with existing key (during)=(…).", "\(error)")
        #expect(!"\(error)".contains("2030"), "\(error)")
    }

    @Test("the server's HINT is kept; a data exception hides the input it echoes")
    func hintAndEchoedInput() throws {
        let missing = try #require(thrown { try db.connection.query("SELECT no_such_function($1::int)", 7) })
        #expect(missing.sqlState == SQLState.undefinedFunction)
        #expect(missing.hint?.contains("explicit type casts") == true, "\(missing)")
        #expect("\(missing)".contains("hint: "), "\(missing)")
        let badInput = try #require(thrown { try db.connection.query("SELECT $1::int AS n", Self.secret) })
        #expect(badInput.sqlState?.hasPrefix(SQLState.dataExceptionClass) == true)
        #expect(badInput.message == "invalid input syntax for type integer: \"…\"", "\(badInput)")
        let badJSON = try #require(
            thrown { try db.connection.query("SELECT $1::jsonb AS j", "{\"a\": \(Self.secret)}") })
        #expect(!"\(badJSON)".contains("SECRET"), "\(badJSON)")
    }

    @Test("a pipeline names its failed statement; a script (no statement boundaries known) its first line")
    func statementOfPipelineAndScript() throws {
        let piped = try #require(
            thrown {
                _ = try db.connection.pipeline([
                    .init("SELECT 1"), .init("SELECT 1 / $1::int AS q", [0]), .init("SELECT 2"),
                ])
            })
        #expect(piped.sqlState == SQLState.divisionByZero)
        #expect(piped.statement == "SELECT 1 / $1::int AS q")
        let scripted = try #require(
            thrown {
                try db.connection.execute(script: "\n  CREATE TABLE   dup (x int);\nCREATE TABLE dup (x int);")
            })
        #expect(scripted.statement == "CREATE TABLE dup (x int);", "\(scripted)")
        #expect(scripted.kind == .query && scripted.message.contains("already exists"), "\(scripted)")
    }

    @Test("a statement label stops before literals and after 80 characters")
    func statementLabels() {
        #expect(ServerText.statementLabel("UPDATE t SET a = 'hunter2' WHERE b = 1") == "UPDATE t SET a = …")
        #expect(ServerText.statementLabel("SELECT E'x'") == "SELECT E …")
        #expect(ServerText.statementLabel("DO $body$ BEGIN PERFORM 1; END $body$") == "DO …")
        #expect(ServerText.statementLabel("SELECT $1, $2 FROM t") == "SELECT $1, $2 FROM t")
        let long = "SELECT " + String(repeating: "column_name, ", count: 20)
        #expect(ServerText.statementLabel(long)?.count == 82)
        #expect(ServerText.statementLabel("  \n ") == nil)
    }

    @Test("DETAIL lines of other shapes keep their words, not what they quote")
    func otherDetails() {
        #expect(ServerText.detailWithoutValues("Token \"hunter2\" is invalid.") == "Token \"…\" is invalid.")
        #expect(ServerText.detailWithoutValues("Key (a, b)=(1, 2) is duplicated.") == "Key (a, b)=(…) is duplicated.")
        #expect(
            ServerText.detailWithoutValues("Key (lower(email))=(x) ) already exists. y") == "Key (lower(email))=(…)")
        #expect(
            ServerText.detailWithoutValues(
                "Process 1 waits for ShareLock on transaction 2; blocked by process 3.\n"
                    + "Process 3 waits for ShareLock on transaction 4; blocked by process 1.")
                == "Process 1 waits for ShareLock on transaction 2; blocked by process 3. "
                + "Process 3 waits for ShareLock on transaction 4; blocked by process 1.")
    }

    @Test("a job's failure shows DETAIL, constraint and statement in job_runs.error and the log, and no secret")
    func jobFailure() throws {
        try accounts()
        let output = LineOutput.capturing()
        let outcome = try db.run(
            "annotate",
            """
            [jobs.annotate]
            schedule = "@hourly"
            sql = "UPDATE accounts SET note = repeat('x', 20) WHERE id = 1"
            """, logOutput: output)
        guard case .finished(let runID, .failed, _, _) = outcome else {
            Issue.record("unexpected outcome \(outcome)")
            return
        }
        let error = try #require(
            try db.connection.query("SELECT error FROM caretaker.job_runs WHERE id = $1", runID).first?["error"])
        for part in [
            "SQLSTATE 23514", "constraint accounts_note_check on table public.accounts",
            "detail: Failing row contains (…).", "statement: UPDATE accounts SET note = repeat( …",
        ] {
            #expect(error.contains(part), "\(part) missing from \(error)")
        }
        let finished = try #require(output.lines.first { $0.contains("run finished") })
        #expect(finished.contains("job=annotate") && finished.contains("constraint accounts_note_check"), "\(finished)")
        let everything = error + output.lines.joined(separator: "\n")
        #expect(!everything.contains("SECRET") && !everything.contains("xxxxxxxxxx"), "\(everything)")

        let hinted = try db.run(
            "hinted",
            """
            [jobs.hinted]
            schedule = "@hourly"
            sql = "UPDATE accounts SET note = no_such_function(note)"
            """, logOutput: output)
        guard case .finished(_, .failed, _, let hintedError) = hinted else {
            Issue.record("unexpected outcome \(hinted)")
            return
        }
        #expect(hintedError?.contains("hint: No function matches") == true, "\(hintedError ?? "")")
        #expect(
            output.lines.contains { $0.contains("job=hinted") && $0.contains("hint: No function matches") },
            "\(output.lines)")
    }
}
