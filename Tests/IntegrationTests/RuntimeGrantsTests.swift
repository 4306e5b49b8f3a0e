import CaretakerTestSupport
import Foundation
import Logging
import Postgres
import Testing

@testable import CaretakerConfig
@testable import CaretakerCore
@testable import CaretakerDatabase
@testable import CaretakerJobs

/// `caretaker migrate --grant ROLE`: the runtime role gets what the enabled jobs need and
/// nothing else. Every job test runs as that role (`TestDatabase.run`); these tests show
/// that each grant is needed and that nothing beyond them is granted.
@Suite struct RuntimeGrantsTests {
    static let builtInJobs = BuiltInJob.allCases.map(\.rawValue)
    static let worker = TemporaryPostgres.workerRole

    @Test(
        "a built-in job fails with permission denied when its grants are left out, and runs once they are back",
        arguments: builtInJobs)
    func eachJobNeedsItsGrants(job: String) throws {
        let db = try TestDatabase()
        let mail = "[mail]\ntransport = \"file\"\ndirectory = \"/tmp\"\n"
        let others = Self.builtInJobs.filter { $0 != job }.map { "[jobs.\($0)]\nenabled = false\n" }.joined()
        try db.grantWorker(mail + others + "[jobs.\(job)]\nenabled = false\n")
        let outcome = try db.run(job, mail)
        guard case .finished(_, .failed, _, let error) = outcome else {
            Issue.record("\(job) ran without its grants: \(outcome)")
            return
        }
        #expect(error?.contains("permission denied") == true, "\(error ?? "")")
        // Its own grants alone are enough (another job's must not cover for a missing one).
        try db.grantWorker(mail + others)
        _ = try db.runSucceeding(job, mail)
    }

    @Test(
        "the daemon as the restricted role: slot claims, LISTEN, every built-in job's scheduled run and the alert state succeed"
    )
    func daemonAsWorker() async throws {
        let db = try TestDatabase()
        let spool = NSTemporaryDirectory() + "caretaker-spool-\(db.name)"
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: spool) }
        let conninfo = TemporaryPostgres.shared.workerConninfo(database: db.name).replacingOccurrences(
            of: "\"", with: "\\\"")
        let path = spool + "/jobs.toml"
        try
            ("[database]\nurl = \"\(conninfo)\"\n[mail]\ntransport = \"file\"\ndirectory = \"\(spool)\"\n"
            + "[alerts]\nmail_to = \"ops@example.org\"\n"
            + Self.builtInJobs.map { "[jobs.\($0)]\nschedule = \"@every 1s\"\nstale_after = \"10m\"\n" }.joined())
            .write(toFile: path, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(config: path)
        for job in Self.builtInJobs {
            #expect(
                await daemon.waitForLog(containing: "msg=\"run finished\" job=\(job)", timeout: .seconds(30)) != nil,
                "\(job): \(daemon.log)")
        }
        // [alerts]: the monitor's own connection reads and claims caretaker.job_alerts.
        #expect(
            try await eventually(timeout: .seconds(20)) {
                try db.count("SELECT count(*) FROM caretaker.job_alerts WHERE state = 'healthy'")
                    == Self.builtInJobs.count
            }, "\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(30)) == 0, "\(daemon.log)")
        #expect(daemon.lines(containing: "permission denied").isEmpty, "\(daemon.log)")
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs WHERE status = 'failed'") == 0)
        #expect(
            try db.count("SELECT count(DISTINCT job) FROM caretaker.job_runs WHERE status = 'succeeded'")
                == Self.builtInJobs.count)
    }

    @Test(
        "the role can read no password hash, change no key column the jobs do not lock, and truncate, insert or delete nothing else"
    )
    func nothingElse() throws {
        let db = try TestDatabase()
        try db.connection.query("CREATE TABLE public.app_secrets (id int)")
        func has(_ privilege: String, _ table: String, _ column: String? = nil) throws -> Bool {
            let sql =
                column == nil
                ? "SELECT has_table_privilege($1, $2, $3) AS ok"
                : "SELECT has_column_privilege($1, $2, $4, $3) AS ok"
            let parameters: [any PostgresBindable] =
                column.map { [Self.worker, table, privilege, $0] } ?? [Self.worker, table, privilege]
            return try db.connection.query(sql, parameters).first?.bool("ok") ?? true
        }
        #expect(try has("SELECT", "users", "password_hash") == false)
        #expect(try has("UPDATE", "users", "email") == false)
        #expect(try has("UPDATE", "users", "password_hash") == false)
        #expect(try has("UPDATE", "users", "deleted_at") == false)
        #expect(try has("UPDATE", "users", "id") == false)  // the temporary-password columns suffice to lock
        #expect(try has("UPDATE", "posts", "id") == true)  // to lock posts it deletes
        #expect(try has("UPDATE", "posts", "likes") == false)
        #expect(try has("UPDATE", "sessions", "last_seen_at") == false)
        #expect(try has("SELECT", "posts", "body") == false)
        #expect(try has("SELECT", "password_reset_requests", "email") == true)
        #expect(try has("UPDATE", "sessions", "revoked_at") == true)
        for table in ["users", "communities", "community_members", "pack_members", "community_leader_changes"] {
            #expect(try has("DELETE", table) == false, "DELETE on \(table)")
        }
        for table in ["users", "sessions", "posts", "packs", "password_reset_requests", "caretaker.job_runs"] {
            #expect(try has("TRUNCATE", table) == false, "TRUNCATE on \(table)")
        }
        for table in ["users", "posts", "packs", "sessions", "communities"] {
            #expect(try has("INSERT", table) == false, "INSERT on \(table)")
        }
        #expect(try has("SELECT", "app_secrets") == false)
        #expect(try has("SELECT", "caretaker.schema_migrations", "version") == true)
        #expect(try has("DELETE", "caretaker.schema_migrations") == false)
    }

    @Test("leader-succession alone: it locks the new leader's user row with UPDATE on users.id only")
    func leaderSuccessionAlone() throws {
        let db = try TestDatabase()
        let others = BuiltInJob.allCases.filter { $0.rawValue != LeaderSuccession.name }.map(\.rawValue)
        try db.grantWorker(others.map { "[jobs.\($0)]\nenabled = false\n" }.joined())
        #expect(try db.count("SELECT has_column_privilege($1, 'users', 'id', 'UPDATE')::int", Self.worker) == 1)
        #expect(
            try db.count("SELECT has_column_privilege($1, 'users', 'temp_password_hash', 'UPDATE')::int", Self.worker)
                == 0)
        try db.connection.execute(
            script: """
                INSERT INTO users (email, password_hash) VALUES ('a@example.org', 'x'), ('b@example.org', 'x');
                INSERT INTO communities (name) VALUES ('c');
                INSERT INTO community_members (community_id, user_id) SELECT c.id, u.id FROM communities c, users u;
                """)
        let stats = try db.runSucceeding("leader-succession")
        #expect(stats["leaders_appointed"] == 1)
    }

    @Test(
        "a test's grant for jobs that do not compress leaves the shared worker its SET on wal_compression: the right is the cluster's, and other tests' sweeps use it at the same time"
    )
    func sharedWorkerKeepsParameterRight() throws {
        let db = try TestDatabase()
        try db.grantWorker("[jobs.expire-content]\nenabled = false\n")
        #expect(try db.count("SELECT has_table_privilege($1, 'posts', 'DELETE')::int", Self.worker) == 0)
        #expect(try Self.maySetWALCompression(Self.worker, on: db) == true)
        try db.grantWorker("[worker]\nlow_footprint = true\n")
        #expect(try Self.maySetWALCompression(Self.worker, on: db) == true)
    }

    @Test("granting again after a job is disabled takes its rights away")
    func regrantIsExact() throws {
        let db = try TestDatabase()
        let canRevoke = "SELECT has_column_privilege($1, 'sessions', 'revoked_at', 'UPDATE')::int"
        #expect(try db.count(canRevoke, Self.worker) == 1)
        try db.grantWorker("[jobs.logout-inactive]\nenabled = false\n[jobs.prune]\nenabled = false\n")
        #expect(try db.count(canRevoke, Self.worker) == 0)
        #expect(try db.count("SELECT has_table_privilege($1, 'caretaker.job_runs', 'DELETE')::int", Self.worker) == 0)
    }

    @Test("an app schema whose name needs quoting: migrate, grant, and the jobs run as the role")
    func quotedAppSchema() throws {
        let db = try TestDatabase(migrated: false)
        let schema = #"app "x"; y"#
        let extra = "[mail]\ntransport = \"file\"\ndirectory = \"/tmp\"\n"
        let configuration = try ConfigurationLoader.parse(
            "[database]\nurl = \"\"\napp_schema = \"app \\\"x\\\"; y\"\n" + extra, file: "test.toml")
        #expect(configuration.database.appSchema == schema)
        try Migrator(appSchema: schema).migrate(on: db.connection)
        let grants = RuntimeGrants(appSchema: schema, jobs: configuration.jobs)
        #expect(
            grants.statements(role: Self.worker).first
                == ##"GRANT USAGE ON SCHEMA caretaker, "app ""x""; y" TO "caretaker ""worker""""##)
        try grants.apply(role: Self.worker, on: db.connection)
        let app = quoteIdentifier(schema)
        try db.connection.execute(
            script: """
                INSERT INTO \(app).users (email, password_hash) VALUES ('a@example.org', 'x');
                INSERT INTO \(app).sessions (user_id, last_seen_at) SELECT id, now() - interval '1 hour' FROM \(app).users;
                """)
        let runner = JobRunner(configuration: configuration, mail: nil, logger: Logger(label: "test"))
        let outcome = try runner.run(
            .init(
                job: try #require(configuration.job(named: "logout-inactive")), trigger: .manual,
                dryRun: false), on: db.connectAsWorker())
        guard case .finished(_, .succeeded, let stats, _) = outcome else {
            Issue.record("logout-inactive did not succeed as the worker: \(outcome)")
            return
        }
        #expect(stats["sessions_revoked"] == 1)
    }

    @Test(
        "SET on wal_compression: granted while expire-content compresses its sweep (compress_wal, on by default outside low-footprint mode), revoked when it does not; a grant made without a superuser says how to give it"
    )
    func walCompressionParameter() throws {
        let db = try TestDatabase()
        // Parameter rights are the cluster's: a role of this test's own, not the shared worker.
        let role = "param_\(db.name)"
        let grantor = "grantor_\(db.name)"
        try db.connection.execute(
            script: """
                CREATE ROLE \(quoteIdentifier(role));
                CREATE ROLE \(quoteIdentifier(grantor));
                GRANT USAGE ON SCHEMA public, caretaker TO \(quoteIdentifier(grantor)) WITH GRANT OPTION;
                GRANT ALL ON ALL TABLES IN SCHEMA public, caretaker TO \(quoteIdentifier(grantor)) WITH GRANT OPTION;
                """)
        defer {
            _ = try? db.connection.execute(
                script: """
                    RESET ROLE;
                    DROP OWNED BY \(quoteIdentifier(role)), \(quoteIdentifier(grantor));
                    DROP ROLE \(quoteIdentifier(role)), \(quoteIdentifier(grantor));
                    """)
        }
        func maySet() throws -> Bool? { try Self.maySetWALCompression(role, on: db) }
        #expect(try maySet() == false)
        let compressing = RuntimeGrants(
            appSchema: "public", jobs: try db.configuration("[jobs.expire-content]\ncompress_wal = true\n").jobs)
        #expect(compressing.parameters == ["wal_compression"])
        // This role cannot see standbys either; that note has a test of its own (standbyRight).
        func parameterNotes(_ notes: [String]) -> [String] { notes.filter { !$0.contains("pg_read_all_stats") } }
        #expect(
            try parameterNotes(compressing.apply(role: role, on: db.connection)) == [],
            "a superuser grants it, with no note")
        #expect(try maySet() == true)
        #expect(
            RuntimeGrants(appSchema: "public", jobs: try db.configuration().jobs).parameters == ["wal_compression"],
            "compress_wal is on by default")
        #expect(
            RuntimeGrants(appSchema: "public", jobs: try db.configuration("[worker]\nlow_footprint = true\n").jobs)
                .parameters.isEmpty, "and off by default in low-footprint mode")
        let uncompressed = RuntimeGrants(
            appSchema: "public", jobs: try db.configuration("[jobs.expire-content]\ncompress_wal = false\n").jobs)
        #expect(uncompressed.parameters.isEmpty)
        #expect(try parameterNotes(uncompressed.apply(role: role, on: db.connection)) == [])
        #expect(try maySet() == false, "granting again with compress_wal off revokes it")
        // A schema owner that is no superuser grants the tables, and says what a superuser must add.
        try db.connection.execute(script: "SET ROLE \(quoteIdentifier(grantor))")
        let notes = try parameterNotes(compressing.apply(role: role, on: db.connection))
        try db.connection.execute(script: "RESET ROLE")
        #expect(notes.count == 1)
        #expect(
            notes.first?.contains(
                "\(role) may not set wal_compression (\(grantor) is not a superuser), so the page sweep writes its full page images uncompressed; a superuser can run: GRANT SET ON PARAMETER wal_compression TO \(quoteIdentifier(role))"
            ) == true, "\(notes)")
        #expect(try maySet() == false)
        #expect(try db.count("SELECT has_table_privilege($1, 'caretaker.job_runs', 'INSERT')::int", role) == 1)
        // Once a superuser gave it, the owner's grant has nothing to add. (The other
        // tests grant this parameter to the shared worker at the same time: retried as
        // `apply` retries, on "tuple concurrently updated".)
        try RuntimeGrants.retryingConcurrentCatalogChange {
            try db.connection.execute(script: "GRANT SET ON PARAMETER wal_compression TO \(quoteIdentifier(role))")
        }
        try db.connection.execute(script: "SET ROLE \(quoteIdentifier(grantor))")
        let none = try parameterNotes(compressing.apply(role: role, on: db.connection))
        try db.connection.execute(script: "RESET ROLE")
        #expect(none == [])
        #expect(try maySet() == true)
    }

    /// A role of the test's own (parameter rights are the cluster's), with no rights yet.
    static func createRole(_ role: String, on db: TestDatabase) throws {
        try db.connection.execute(script: "CREATE ROLE \(quoteIdentifier(role))")
    }

    /// Whether `role` may set `wal_compression` (`nil` when the server did not say).
    static func maySetWALCompression(_ role: String, on db: TestDatabase) throws -> Bool? {
        try db.connection.query("SELECT has_parameter_privilege($1, 'wal_compression', 'SET') AS ok", role)
            .first?.bool("ok")
    }

    /// Drops `createRole`'s role and whatever it was granted, parameter rights included.
    static func dropRole(_ role: String, on db: TestDatabase) {
        _ = try? db.connection.execute(
            script: "DROP OWNED BY \(quoteIdentifier(role)); DROP ROLE \(quoteIdentifier(role))")
    }

    @Test(
        "a grant that another session's change of the same parameter's rights beat to the catalog runs again, rather than failing with \"tuple concurrently updated\""
    )
    func concurrentParameterGrants() throws {
        let db = try TestDatabase()
        let role = "concurrent_\(db.name)"
        try Self.createRole(role, on: db)
        defer { Self.dropRole(role, on: db) }
        let grants = RuntimeGrants(appSchema: "public", jobs: try db.configuration().jobs)
        #expect(grants.parameters == ["wal_compression"])
        // Another session (another database's migrate --grant) holds an uncommitted
        // change of the parameter's rights, as a plain GRANT does, without the lock.
        let other = try TemporaryPostgres.shared.connect()
        // A committed grant first, so that the parameter has its catalog row to change.
        try other.query("GRANT SET ON PARAMETER wal_compression TO \(quoteIdentifier(role))")
        try other.query("BEGIN")
        try other.query("REVOKE SET ON PARAMETER wal_compression FROM \(quoteIdentifier(role))")
        let granting = try TemporaryPostgres.shared.connect(database: db.name)
        let pid = try #require(try granting.query("SELECT pg_backend_pid() AS pid").first?.int("pid"))
        let grant = BackgroundThread { try grants.apply(role: role, on: granting) }
        #expect(
            try eventually {
                try db.count("SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'", pid)
                    == 1
            }, "the grant waits for the other session's transaction, then finds the row changed")
        try other.query("COMMIT")
        _ = try grant.value()
        #expect(try Self.maySetWALCompression(role, on: db) == true)
    }

    @Test(
        "max_replica_lag needs pg_read_all_stats: the grant says how to give it while a job keeps the limit and the role lacks the right, and grants nothing of it"
    )
    func standbyRight() throws {
        let db = try TestDatabase()
        let role = "standby_\(db.name)"
        try Self.createRole(role, on: db)
        defer { Self.dropRole(role, on: db) }
        let defaults = RuntimeGrants(appSchema: "public", jobs: try db.configuration().jobs)
        #expect(defaults.watchesStandbys, "every job keeps max_replica_lag by default")
        let notes = try defaults.apply(role: role, on: db.connection)
        #expect(
            notes == [
                """
                \(role) cannot see a standby's replay position, so where a standby streams max_replica_lag is not \
                kept (each run warns); to keep it, run: GRANT pg_read_all_stats TO \(quoteIdentifier(role)) (it \
                also shows the role every session's statistics and query text), or set max_replica_lag = ""
                """
            ], "\(notes)")
        #expect(
            try db.count("SELECT pg_has_role($1, 'pg_read_all_stats', 'USAGE')::int", role) == 0,
            "the grant leaves that right to the operator")
        // With no job keeping the limit there is nothing to say.
        let off = try db.configuration(
            BuiltInJob.allCases.map { "[jobs.\($0.rawValue)]\nmax_replica_lag = \"\"\n" }.joined())
        let unwatched = RuntimeGrants(appSchema: "public", jobs: off.jobs)
        #expect(!unwatched.watchesStandbys)
        #expect(try unwatched.apply(role: role, on: db.connection) == [])
        // Once the operator gave it (here through pg_monitor, which holds it), neither.
        try db.connection.execute(script: "GRANT pg_monitor TO \(quoteIdentifier(role))")
        #expect(try defaults.apply(role: role, on: db.connection) == [])
        try db.connection.execute(script: "REVOKE pg_monitor FROM \(quoteIdentifier(role))")
    }

    @Test("refuses a missing role, a superuser and the owner of the tables, saying why")
    func refusals() throws {
        let db = try TestDatabase()
        let grants = RuntimeGrants(appSchema: "public", jobs: try db.configuration().jobs)
        func reason(_ role: String) -> String {
            do {
                try grants.apply(role: role, on: db.connection)
            } catch {
                return "\(error)"
            }
            return "granted"
        }
        #expect(reason("nobody here").contains(#"role "nobody here": no such role; create it first"#))
        #expect(reason("postgres").contains("it is a superuser"))
        let owner = "owner_\(db.name)"
        try db.connection.execute(
            script: "CREATE ROLE \(quoteIdentifier(owner)); ALTER TABLE users OWNER TO \(quoteIdentifier(owner))")
        defer {
            _ = try? db.connection.execute(
                script: "ALTER TABLE users OWNER TO postgres; DROP ROLE \(quoteIdentifier(owner))")
        }
        #expect(reason(owner).contains("it owns public.users"), "\(reason(owner))")
        // Nothing of the refused grants was applied: the owner of users got no right on
        // the schemas or on the tables it does not own (a successful apply gives it these).
        let given = try db.count(
            """
            SELECT has_schema_privilege($1, 'caretaker', 'USAGE')::int
                   + (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                      WHERE n.nspname IN ('public', 'caretaker') AND c.relkind IN ('r', 'p')
                        AND c.relowner <> (SELECT oid FROM pg_roles WHERE rolname = $1)
                        AND (has_table_privilege($1, c.oid, 'SELECT') OR has_table_privilege($1, c.oid, 'UPDATE')
                             OR has_table_privilege($1, c.oid, 'DELETE') OR has_table_privilege($1, c.oid, 'INSERT')))::int
            """, owner)
        #expect(given == 0, "the refused role was granted \(given) rights")
        // The same check sees a grant (it is not blind): an ordinary role, granted, has them.
        let ordinary = "granted_\(db.name)"
        try db.connection.execute(script: "CREATE ROLE \(quoteIdentifier(ordinary))")
        defer {
            _ = try? db.connection.execute(
                script: "DROP OWNED BY \(quoteIdentifier(ordinary)); DROP ROLE \(quoteIdentifier(ordinary))")
        }
        #expect(reason(ordinary) == "granted")
        #expect(
            try db.count(
                "SELECT has_schema_privilege($1, 'caretaker', 'USAGE')::int + has_table_privilege($1, 'public.posts', 'DELETE')::int",
                ordinary) == 2)
    }
}
