import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

/// The built `caretaker` binary, end to end: exit codes and output.
@Suite struct CLITests {
    /// Writes a `jobs.toml` that connects to `db` as the restricted worker role and returns its path.
    static func workerConfiguration(_ db: TestDatabase) throws -> String {
        let conninfo = TemporaryPostgres.shared.workerConninfo(database: db.name).replacingOccurrences(
            of: "\"", with: "\\\"")
        let path = db.scratchPath("worker.toml")
        try "[database]\nurl = \"\(conninfo)\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("--version prints the version")
    func version() throws {
        let result = try Caretaker.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.contains(caretakerVersion))
    }

    @Test("once, then history as a table and as JSON, with filters")
    func onceAndHistory() throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration()
        let once = try Caretaker.run(["once", "expire-content", "prune", "--config", config])
        #expect(once.status == 0, "\(once.stderr)")
        #expect(once.stderr.contains("msg=\"run finished\" job=expire-content"))
        let table = try Caretaker.run(["history", "--config", config])
        let lines = table.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("ID  JOB") == true, "\(table.stdout)")
        #expect(lines.count == 3)
        let filtered = try Caretaker.run([
            "history", "--job", "prune", "--status", "succeeded", "--limit", "5", "--json", "--config", config,
        ])
        let runs = try JSONSerialization.jsonObject(with: Data(filtered.stdout.utf8)) as? [[String: Any]]
        #expect(runs?.count == 1)
        #expect(runs?.first?["job"] as? String == "prune")
        #expect(runs?.first?["trigger"] as? String == "manual")
        #expect((runs?.first?["stats"] as? [String: Any])?["runs_deleted"] as? Int == 0)
    }

    @Test("an unknown job is a usage error listing the valid ones (64)")
    func unknownJob() throws {
        let db = try TestDatabase()
        let result = try Caretaker.run(["once", "expire-contnet", "--config", db.writeConfiguration()])
        #expect(result.status == 64)
        #expect(result.stderr.contains("valid jobs: expire-content, logout-inactive"))
    }

    @Test("an unknown job prints the usage of its command, not the root's, in caretaker's error style (64)")
    func unknownJobUsage() throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration()
        let once = try Caretaker.run(["once", "nosuchjob", "--config", config])
        #expect(once.status == 64, "\(once.stderr)")
        #expect(
            once.stderr.hasPrefix("caretaker: unknown job \"nosuchjob\"; valid jobs: expire-content"), "\(once.stderr)")
        #expect(once.stderr.contains("Usage: caretaker once "), "\(once.stderr)")
        #expect(
            !once.stderr.contains("SUBCOMMANDS") && !once.stderr.contains("caretaker <subcommand>"), "\(once.stderr)")
        #expect(!once.stderr.contains("Error: "), "\(once.stderr)")
        let history = try Caretaker.run(["history", "--job", "nosuchjob", "--config", config])
        #expect(history.status == 64, "\(history.stderr)")
        #expect(history.stderr.hasPrefix("caretaker: unknown job \"nosuchjob\""), "\(history.stderr)")
        #expect(history.stderr.contains("Usage: caretaker history "), "\(history.stderr)")
        // A configuration that does not load is still a configuration error, not a usage one.
        let broken = db.scratchPath("broken.toml")
        try "[database\n".write(toFile: broken, atomically: true, encoding: .utf8)
        let badConfig = try Caretaker.run(["once", "nosuchjob", "--config", broken])
        #expect(badConfig.status == 78, "\(badConfig.stderr)")
        #expect(badConfig.stderr.hasPrefix("caretaker: configuration error: "), "\(badConfig.stderr)")
    }

    @Test("every error starts caretaker: (the parser's too), and every command's --help lists its exit statuses")
    func oneVoice() throws {
        let flag = try Caretaker.run(["once", "--al"])
        #expect(flag.status == 64)
        #expect(flag.stderr.hasPrefix("caretaker: "), "\(flag.stderr)")
        #expect(!flag.stderr.contains("Error: "), "\(flag.stderr)")
        let command = try Caretaker.run(["nosuchcommand"])
        #expect(command.status == 64)
        #expect(command.stderr.hasPrefix("caretaker: "), "\(command.stderr)")
        for name in ["run", "once", "jobs", "history", "migrate", "check", "status", "dashboard"] {
            let help = try Caretaker.run([name, "--help"])
            #expect(help.status == 0)
            let text = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(text.contains("Exit status: 0 "), "caretaker \(name) --help: \(help.stdout)")
            #expect(text.contains("78 bad configuration"), "caretaker \(name) --help: \(help.stdout)")
            #expect(!text.contains("SPEC"), "caretaker \(name) --help: \(help.stdout)")
        }
    }

    @Test("bad flags are usage errors (64)")
    func badFlag() throws {
        #expect(try Caretaker.run(["once", "--al"]).status == 64)
        #expect(try Caretaker.run(["history", "--limit", "zero"]).status == 64)
    }

    @Test("a configuration typo exits 78 naming file, line and key")
    func configurationTypo() throws {
        let db = try TestDatabase()
        let path = try db.writeConfiguration("[jobs.prune]\nkeep_histroy = \"30d\"\n")
        let result = try Caretaker.run(["once", "prune", "--config", path])
        #expect(result.status == 78)
        #expect(result.stderr.contains("\(path):5: jobs.prune.keep_histroy: unknown key"), "\(result.stderr)")
    }

    @Test("a bad value exits 78 naming the key")
    func badValue() throws {
        let db = try TestDatabase()
        let path = try db.writeConfiguration("[jobs.expire-content]\nschedule = \"*/5 * * *\"\n")
        let result = try Caretaker.run(["jobs", "--config", path])
        #expect(result.status == 78)
        #expect(result.stderr.contains(":5: jobs.expire-content.schedule:"), "\(result.stderr)")
    }

    @Test("an unreachable database exits 69 after connect_timeout")
    func unreachable() throws {
        let path = NSTemporaryDirectory() + "caretaker-unreachable-\(UUID().uuidString).toml"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try """
        [database]
        url = "host=/nonexistent-socket-dir port=5432 user=postgres dbname=x"
        connect_timeout = "2s"
        """.write(toFile: path, atomically: true, encoding: .utf8)
        for command in [["once", "prune"], ["jobs"], ["history"], ["migrate"], ["check"]] {
            let result = try Caretaker.run(command + ["--config", path])
            #expect(result.status == 69, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("database unavailable"))
        }
    }

    @Test("a failing job makes once exit 1 and does not stop the others")
    func failingJob() throws {
        let db = try TestDatabase()
        let path = try db.writeConfiguration(
            """
            [jobs.broken]
            schedule = "@hourly"
            sql = "DELETE FROM no_such_table"
            """)
        let result = try Caretaker.run(["once", "broken", "prune", "--config", path])
        #expect(result.status == 1)
        #expect(
            try db.count("SELECT count(*) FROM caretaker.job_runs WHERE job = 'prune' AND status = 'succeeded'") == 1)
        #expect(
            try db.count(
                "SELECT count(*) FROM caretaker.job_runs WHERE job = 'broken' AND status = 'failed' AND error LIKE '%no_such_table%'"
            ) == 1)
    }

    @Test("once exits 75 when another process is running the job")
    func busy() throws {
        let db = try TestDatabase()
        let holder = try TemporaryPostgres.shared.connect(database: db.name)
        try holder.query("SELECT pg_advisory_lock(caretaker.job_lock_key('prune'))")
        let result = try Caretaker.run(["once", "prune", "--config", db.writeConfiguration()])
        #expect(result.status == 75, "\(result.stdout) \(result.stderr)")
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs") == 0)
    }

    @Test(
        "once names the job, what failed and what to do when its run cannot be recorded (1), and the jobs it did not try"
    )
    func onceBookkeepingDenied() throws {
        let db = try TestDatabase()
        try db.connection.execute(
            script: "REVOKE INSERT ON caretaker.job_runs FROM \(quoteIdentifier(TemporaryPostgres.workerRole))")
        let path = try Self.workerConfiguration(db)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try Caretaker.run(["once", "prune", "expire-content", "--config", path])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "caretaker: database error while recording the run of job prune in caretaker's tables: "
                    + "permission denied for table job_runs (SQLSTATE 42501; statement: INSERT INTO caretaker.job_runs"),
            "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "— the role in [database] url lacks a right: run `caretaker migrate --grant ROLE` as the owner of "
                    + "caretaker's schema; not run: expire-content"), "\(result.stderr)")
        #expect(!result.stderr.contains("Error:"), "\(result.stderr)")
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs") == 0)
    }

    @Test("once: a run whose end cannot be recorded logs how it ended (1); a job that loses its connection exits 69")
    func onceRunEndNotRecorded() throws {
        let db = try TestDatabase()
        try db.connection.execute(
            script: """
                CREATE FUNCTION refuse_end() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'refused by test'; END $$;
                CREATE TRIGGER refuse_end BEFORE UPDATE ON caretaker.job_runs FOR EACH ROW
                WHEN (OLD.status = 'running') EXECUTE FUNCTION refuse_end();
                """)
        let path = try db.writeConfiguration(
            """
            [jobs.tick]
            schedule = "@hourly"
            sql = "SELECT 1"

            [jobs.suicide]
            schedule = "@hourly"
            sql = "SELECT pg_terminate_backend(pg_backend_pid())"
            """)
        let refused = try Caretaker.run(["once", "tick", "--config", path])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(
            refused.stderr.contains("run ended but its end could not be recorded")
                && refused.stderr.contains("job=tick") && refused.stderr.contains("status=succeeded"),
            "\(refused.stderr)")
        #expect(
            refused.stderr.contains(
                "caretaker: database error while recording the run of job tick in caretaker's tables: refused by test"),
            "\(refused.stderr)")

        try db.connection.query("DROP TRIGGER refuse_end ON caretaker.job_runs")
        let lost = try Caretaker.run(["once", "suicide", "tick", "--config", path])
        #expect(lost.status == 69, "\(lost.stderr)")
        #expect(
            lost.stderr.contains("caretaker: database unavailable while running job suicide: ")
                && lost.stderr.hasSuffix("; not run: tick\n"), "\(lost.stderr)")
    }

    @Test(
        "migrate twice, then check is healthy; check names a dropped column and exits 1, or warns (exit 0) when only disabled jobs use it"
    )
    func migrateAndCheck() throws {
        let db = try TestDatabase(migrated: false)
        let path = try db.writeConfiguration()
        #expect(try Caretaker.run(["migrate", "--dry-run", "--config", path]).stdout.contains("would apply"))
        #expect(try Caretaker.run(["migrate", "--config", path]).status == 0)
        let again = try Caretaker.run(["migrate", "--config", path])
        #expect(again.stdout.contains("up to date"))
        let healthy = try Caretaker.run(["check", "--config", path])
        #expect(healthy.status == 0, "\(healthy.stdout)")
        try db.connection.query("ALTER TABLE sessions DROP COLUMN last_seen_at")
        let broken = try Caretaker.run(["check", "--json", "--config", path])
        #expect(broken.status == 1)
        #expect(broken.stdout.contains("public.sessions.last_seen_at is missing"), "\(broken.stdout)")
        // The jobs that rely on it disabled: a warning, exit 0.
        let unused = try db.writeConfiguration(
            "[jobs.logout-inactive]\nenabled = false\n[jobs.leader-succession]\nenabled = false\n")
        let warned = try Caretaker.run(["check", "--json", "--config", unused])
        #expect(warned.status == 0, "\(warned.stdout)")
        #expect(
            warned.stdout.contains(
                #"public.sessions.last_seen_at is missing (expected timestamp with time zone); "#
                    + #"used only by logout-inactive, leader-succession, which are disabled", "warning": true}"#),
            "\(warned.stdout)")
    }

    @Test(
        "migrate gives up after --lock-wait while a transaction holds an app table: exit 75, what to do, nothing applied"
    )
    func migrateLockWait() throws {
        let db = try TestDatabase()
        let path = try db.writeConfiguration()
        try db.connection.query("DELETE FROM caretaker.schema_migrations WHERE version = 10")
        let holder = try TemporaryPostgres.shared.connect(database: db.name)
        try holder.query("BEGIN")
        try holder.query("LOCK TABLE packs IN ROW EXCLUSIVE MODE")
        let gaveUp = try Caretaker.run(["migrate", "--lock-wait", "1s", "--config", path])
        #expect(gaveUp.status == 75, "\(gaveUp.stderr)")
        #expect(
            gaveUp.stderr.hasPrefix(
                "caretaker: migration 10 (pack looks) could not take its locks on the app's tables"),
            "\(gaveUp.stderr)")
        #expect(gaveUp.stderr.contains("pg_stat_activity"), "\(gaveUp.stderr)")
        #expect(try db.count("SELECT count(*) FROM caretaker.schema_migrations WHERE version = 10") == 0)
        try holder.query("COMMIT")
        #expect(try Caretaker.run(["migrate", "--lock-wait", "1s", "--config", path]).status == 0)
        let bad = try Caretaker.run(["migrate", "--lock-wait", "soon", "--config", path])
        #expect(bad.status == 64 && bad.stderr.contains("\"soon\" is not a duration"), "\(bad.stderr)")
    }

    @Test("caretaker dashboard --help names the exit statuses of caretaker-dashboard, which it becomes")
    func dashboardHelpExitStatuses() throws {
        /// The numbers in the help's "Exit status: …." sentence.
        func statuses(_ help: String) -> [Int] {
            let text = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            guard let start = text.range(of: "Exit status:") else { return [] }
            let sentence = text[start.upperBound...].prefix { $0 != "." }
            return sentence.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        }
        let wrapper = try Caretaker.run(["dashboard", "--help"])
        let binary = URL(fileURLWithPath: Caretaker.path).deletingLastPathComponent()
            .appendingPathComponent("caretaker-dashboard").path
        let output = NSTemporaryDirectory() + "caretaker-dashboard-help-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: output) }
        #expect(try ChildProcess.run([binary, "--help"], stdoutPath: output, stderrPath: output + ".err") == 0)
        defer { try? FileManager.default.removeItem(atPath: output + ".err") }
        let own = try String(contentsOfFile: output, encoding: .utf8)
        #expect(statuses(own) == [0, 1, 64, 69, 78], "\(own)")
        #expect(statuses(wrapper.stdout) == statuses(own), "\(wrapper.stdout)")
    }

    @Test("migrate --grant: --dry-run prints the quoted SQL, a superuser is refused (64), the role gets its rights")
    func migrateGrant() throws {
        let db = try TestDatabase()
        let path = try db.writeConfiguration()
        let worker = TemporaryPostgres.workerRole
        let preview = try Caretaker.run(["migrate", "--dry-run", "--grant", worker, "--config", path])
        #expect(preview.status == 0, "\(preview.stderr)")
        #expect(
            preview.stdout.contains("would run, in one transaction (run again, up to 5 times in all,"),
            "\(preview.stdout)")
        #expect(
            preview.stdout.contains(#"REVOKE ALL ON TABLE "public"."users" FROM "caretaker ""worker""";"#),
            "\(preview.stdout)")
        #expect(
            preview.stdout.contains(#"UPDATE ("revoked_at", "revoked_reason"), DELETE ON TABLE "public"."sessions""#),
            "\(preview.stdout)")
        let refused = try Caretaker.run(["migrate", "--grant", "postgres", "--config", path])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains(#"role "postgres": it is a superuser"#), "\(refused.stderr)")
        try db.connection.execute(script: "REVOKE ALL ON public.sessions FROM \(quoteIdentifier(worker))")
        let granted = try Caretaker.run(["migrate", "--grant", worker, "--config", path])
        #expect(granted.status == 0, "\(granted.stderr)")
        #expect(
            granted.stdout.contains("granted \(worker) its rights for expire-content, logout-inactive"),
            "\(granted.stdout)")
        #expect(try db.count("SELECT has_column_privilege($1, 'sessions', 'revoked_at', 'UPDATE')::int", worker) == 1)
    }

    @Test("check warns (exit 0) when connected as a superuser, and not as the restricted role, which sees every column")
    func checkWarnsAboutPrivilegedRole() throws {
        let db = try TestDatabase()
        let superuser = try Caretaker.run(["check", "--config", db.writeConfiguration()])
        #expect(superuser.status == 0, "\(superuser.stdout)")
        #expect(
            superuser.stdout.contains("WARNING") && superuser.stdout.contains("connected as postgres, a superuser"),
            "\(superuser.stdout)")
        let path = try Self.workerConfiguration(db)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let restricted = try Caretaker.run(["check", "--json", "--config", path])
        #expect(restricted.status == 0, "\(restricted.stdout) \(restricted.stderr)")
        #expect(!restricted.stdout.contains("warning"), "\(restricted.stdout)")
        #expect(restricted.stdout.contains("every required column present"), "\(restricted.stdout)")
    }

    @Test("check reports a failed job and a stale one, naming them")
    func checkHealth() throws {
        let db = try TestDatabase()
        let path = try db.writeConfiguration()
        try db.connection.query(
            """
            INSERT INTO caretaker.job_runs (job, trigger, status, started_at, finished_at, error, host, pid)
            VALUES ('expire-content', 'schedule', 'failed', now(), now(), 'boom', 'h', 1),
                   ('prune', 'schedule', 'succeeded', now() - interval '4 days', now() - interval '4 days', NULL, 'h', 1)
            """)
        let result = try Caretaker.run(["check", "--config", path])
        #expect(result.status == 1)
        #expect(
            result.stdout.contains("job expire-content") && result.stdout.contains("last run failed: boom"),
            "\(result.stdout)")
        #expect(result.stdout.contains("last success is older than stale_after (3d)"), "\(result.stdout)")
    }

    @Test(
        "check: a job that has not run yet passes while the schema was migrated less than stale_after ago (0), then fails (1)"
    )
    func checkNewJob() throws {
        let db = try TestDatabase()
        try db.connection.query("UPDATE caretaker.schema_migrations SET applied_at = now() - interval '2 hours'")
        let builtIn = BuiltInJob.allCases.map { "[jobs.\($0.rawValue)]\nenabled = false\n" }.joined()
        let path = try db.writeConfiguration(builtIn + "[jobs.fresh]\nschedule = \"@hourly\"\nsql = \"SELECT 1\"\n")
        let fresh = try Caretaker.run(["check", "--config", path])
        #expect(fresh.status == 0, "\(fresh.stdout)")
        #expect(fresh.stdout.contains("has not run yet"), "\(fresh.stdout)")
        try db.connection.query("UPDATE caretaker.schema_migrations SET applied_at = now() - interval '4 hours'")
        let overdue = try Caretaker.run(["check", "--config", path])
        #expect(overdue.status == 1)
        #expect(
            overdue.stdout.contains("job fresh")
                && overdue.stdout.contains("has never succeeded, and the schema was migrated more than 3h ago"),
            "\(overdue.stdout)")
    }

    @Test("jobs lists each job with its next run")
    func jobsListing() throws {
        let db = try TestDatabase()
        let result = try Caretaker.run(["jobs", "--json", "--config", db.writeConfiguration()])
        #expect(result.status == 0)
        let jobs = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]]
        #expect(
            jobs?.map { $0["job"] as? String } == [
                "expire-content", "logout-inactive", "send-temp-passwords", "leader-succession", "prune",
            ])
        #expect(jobs?.first?["next_run"] as? String != "never")
        // @daily in UTC: the next midnight after the database's now.
        let midnight = try db.connection.query(
            """
            SELECT to_char(date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day', 'YYYY-MM-DD"T"HH24:MI:SS') AS t
            """
        ).first?["t"]
        let prune = jobs?.first { $0["job"] as? String == "prune" }
        #expect(prune?["next_run"] as? String == midnight)
        #expect(prune?["timezone"] as? String == "UTC")
    }
}
