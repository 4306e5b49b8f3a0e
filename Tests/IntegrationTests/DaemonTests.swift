import CaretakerCore
import CaretakerTestSupport
import Foundation
import Logging
import Postgres
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `caretaker run` as real processes receiving real signals, against real PostgreSQL
/// (SPEC §4 and §5). Each test has a database of its own; the outage test has a
/// cluster of its own, so stopping it disturbs nobody.
@Suite(.serialized) struct DaemonTests {
    // MARK: Configuration helpers

    static let builtInJobs = BuiltInJob.allCases.map(\.rawValue)

    /// `[jobs.X] enabled = false` for every built-in job but `keep`.
    static func disabledBuiltIns(except keep: Set<String> = []) -> String {
        builtInJobs.filter { !keep.contains($0) }.map { "[jobs.\($0)]\nenabled = false\n" }.joined(separator: "\n")
    }

    /// An operator SQL job.
    static func sqlJob(_ name: String, schedule: String = "@every 1s", sql: String, extra: String = "") -> String {
        "\n[jobs.\(name)]\nschedule = \"\(schedule)\"\nsql = \"\(sql)\"\n\(extra)"
    }

    /// The database's clock, in seconds since the epoch.
    static func now(_ db: TestDatabase) throws -> Double {
        try db.connection.query("SELECT extract(epoch FROM clock_timestamp())::float8 AS now").first!.double("now")!
    }

    /// Stops a daemon with SIGTERM and expects a clean exit.
    static func stop(
        _ daemon: DaemonProcess, within timeout: Duration = .seconds(10),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        daemon.signal(SIGTERM)
        let status = await daemon.waitForExit(timeout: timeout)
        #expect(
            status == 0, "exit status \(String(describing: status)); log:\n\(daemon.log)",
            sourceLocation: sourceLocation)
    }

    /// Starts a daemon and waits until it says `ready`.
    static func started(
        _ config: String, lowFootprint: Bool = false, environment: [String: String] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> DaemonProcess {
        let daemon = try DaemonProcess(config: config, lowFootprint: lowFootprint, environment: environment)
        try #require(
            await daemon.waitForLog(containing: "msg=ready") != nil, "no ready line; log:\n\(daemon.log)",
            sourceLocation: sourceLocation)
        return daemon
    }

    /// Runs of `job` that overlap in time (pairs), skipped slots aside.
    static func overlappingRuns(_ db: TestDatabase, job: String? = nil) throws -> Int {
        try db.count(
            """
            SELECT count(*) FROM caretaker.job_runs a JOIN caretaker.job_runs b ON a.id < b.id
            WHERE ($1::text IS NULL OR (a.job = $1 AND b.job = $1))
              AND a.status <> 'skipped' AND b.status <> 'skipped'
              AND tstzrange(a.started_at, coalesce(a.finished_at, 'infinity')) && tstzrange(b.started_at, coalesce(b.finished_at, 'infinity'))
            """, job)
    }

    /// Connections of caretaker daemons to this test's database (the tests' own are `caretaker-tests`).
    static func daemonConnections(_ db: TestDatabase) throws -> Int {
        try db.count(
            """
            SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND (application_name = 'caretaker' OR application_name LIKE 'caretaker/%')
            """)
    }

    // MARK: 1. Each slot once across instances

    @Test("three instances, an @every 1s job, ten seconds: one run per slot, none early, none overlapping")
    func threeInstances() async throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration(
            Self.disabledBuiltIns() + Self.sqlJob("tick", sql: "SELECT pg_sleep(0.2)"))
        var daemons: [DaemonProcess] = []
        for _ in 0..<3 { daemons.append(try DaemonProcess(config: config)) }
        for daemon in daemons {
            try #require(await daemon.waitForLog(containing: "msg=ready") != nil, "\(daemon.log)")
        }
        let from = try Self.now(db)
        try await Task.sleep(for: .seconds(10))  // the observation window, not a wait for an event
        let stopping = try Self.now(db)
        for daemon in daemons { await Self.stop(daemon) }

        let duplicated = try db.connection.query(
            """
            SELECT slot, count(*) FROM caretaker.job_runs WHERE job = 'tick' GROUP BY slot HAVING count(*) > 1
            """)
        #expect(duplicated.rows.isEmpty, "slots run more than once: \(duplicated.rows.map(\.values))")
        #expect(try Self.overlappingRuns(db, job: "tick") == 0)
        let covered = try db.count(
            """
            SELECT count(DISTINCT slot) FROM caretaker.job_runs
            WHERE job = 'tick' AND status = 'succeeded' AND slot >= to_timestamp($1::float8)
            """, from)
        #expect(covered >= 8, "only \(covered) slots ran in ten seconds")
        #expect(
            try db.count("SELECT count(*) FROM caretaker.job_runs WHERE started_at < slot") == 0,
            "a slot started before it was due on the database clock")
        // A run in flight at SIGTERM may end `interrupted`; a slot that came due while a run
        // was still going, or that found no connection before the next slot came (a slow
        // start-up on a loaded machine), is `skipped`; any other run succeeded.
        let odd = try db.connection.query(
            """
            SELECT id, trigger, status, error FROM caretaker.job_runs s
            WHERE slot IS NULL OR NOT (
                status = 'succeeded'
                OR status = 'interrupted' AND finished_at > to_timestamp($1::float8)
                OR status = 'skipped' AND error LIKE '%free place%'
                OR status = 'skipped' AND EXISTS (
                    SELECT 1 FROM caretaker.job_runs r
                    WHERE r.status <> 'skipped' AND s.slot > coalesce(r.slot, r.started_at) AND s.slot <= r.finished_at))
            """, stopping
        ).rows
        #expect(odd.isEmpty, "\(odd.map(\.values))")
        #expect(
            try db.count(
                """
                SELECT count(*) FROM caretaker.job_slots s
                WHERE NOT EXISTS (SELECT 1 FROM caretaker.job_runs r WHERE r.job = s.job AND r.slot = s.slot)
                """) == 0, "a claimed slot has no run")
        #expect(
            try db.count("SELECT count(DISTINCT pid) FROM caretaker.job_runs") >= 2,
            "one instance ran every slot: the others never competed")
    }

    @Test("a slot still in the future on the database clock is neither claimed nor run, nor recorded skipped")
    func slotNotDueYet() throws {
        let db = try TestDatabase()
        let configuration = try db.configuration(Self.disabledBuiltIns() + Self.sqlJob("tick", sql: "SELECT 1"))
        let job = try #require(configuration.job(named: "tick"))
        let runner = JobRunner(configuration: configuration, mail: nil, logger: Logger(label: "test"))
        let connection = try TemporaryPostgres.shared.connect(database: db.name)
        // As if the scheduler's estimate of the database clock ran ahead: by a minute, so
        // that the slot is still to come when the runner claims it, however long the
        // connection and the run's start take on a loaded machine (at 200 ms ahead, a
        // loaded run claimed it due and ran it).
        let soon = Date(timeIntervalSince1970: try Self.now(db) + 60)
        let run = try runner.run(JobRunner.Request(job: job, trigger: .schedule, slot: soon), on: connection)
        guard case .slotNotDue = run else {
            Issue.record("a slot not due yet was not answered as such: \(run)")
            return
        }
        let skip = try runner.recordSkippedSlot(job: job, slot: soon, reason: .noFreePlace, on: connection)
        guard case .slotNotDue = skip else {
            Issue.record("a slot not due yet was not answered as such when recording it skipped: \(skip)")
            return
        }
        #expect(try db.count("SELECT count(*) FROM caretaker.job_slots") == 0)
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs") == 0)
        // Once due, the same slot runs.
        let past = Date(timeIntervalSince1970: try Self.now(db) - 0.001)
        let outcome = try runner.run(JobRunner.Request(job: job, trigger: .schedule, slot: past), on: connection)
        guard case .finished(_, .succeeded, _, _) = outcome else {
            Issue.record("a due slot did not run: \(outcome)")
            return
        }
    }

    // MARK: 2. Slower than its period

    /// Two normal instances (the idle one may record the skip); one low-footprint
    /// instance, which records the skips after the run gives its only connection back.
    @Test(
        "a job slower than its period: slots due while it runs are recorded once each as skipped",
        arguments: [false, true])
    func slowJobSkipsSlots(lowFootprint: Bool) async throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration(
            Self.disabledBuiltIns() + Self.sqlJob("slow", sql: "SELECT pg_sleep(2.5)"))
        var daemons = [try await Self.started(config, lowFootprint: lowFootprint)]
        if !lowFootprint { daemons.append(try await Self.started(config)) }
        // Two full periods of run-skip-skip.
        #expect(
            try await eventually(timeout: .seconds(12)) {
                try db.count("SELECT count(*) FROM caretaker.job_runs WHERE status = 'succeeded'") >= 2
            })
        for daemon in daemons { await Self.stop(daemon) }

        let skipped = try db.count("SELECT count(*) FROM caretaker.job_runs WHERE status = 'skipped'")
        #expect(skipped >= 2)
        #expect(
            try db.connection.query(
                """
                SELECT slot FROM caretaker.job_runs GROUP BY slot HAVING count(*) > 1
                """
            ).rows.isEmpty, "a slot was recorded twice")
        // A slot that came due after a run's end, but before the scheduler had handled
        // that end, runs after all; when the next slot is due by then too (the end handled
        // a second late on a loaded machine), the newer one runs and the older is
        // recorded skipped for want of a place (Scheduler.queueSlot). Any other skip
        // needs a run going when its slot came.
        let unexplained = try db.connection.query(
            """
            SELECT id, slot, error FROM caretaker.job_runs s
            WHERE s.status = 'skipped' AND s.error NOT LIKE '%free place%' AND NOT EXISTS (
                SELECT 1 FROM caretaker.job_runs r
                WHERE r.status <> 'skipped' AND s.slot > coalesce(r.slot, r.started_at) AND s.slot <= r.finished_at)
            """
        ).rows
        #expect(
            unexplained.isEmpty,
            "a slot was recorded skipped although no run was going when it came due: \(unexplained.map(\.values))")
        // Every slot from the first to the last one recorded is in the history: run or skipped.
        let span = try db.connection.query(
            """
            SELECT count(DISTINCT slot) AS recorded,
                   round(extract(epoch FROM max(slot) - min(slot)))::int + 1 AS due
            FROM caretaker.job_runs
            """
        ).first!
        #expect(span.int("recorded") == span.int("due"), "slots missing from the history: \(span.values)")
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs WHERE status = 'skipped' AND error IS NULL") == 0)
    }

    // MARK: 3. SIGTERM

    @Test("SIGTERM during a batch: the batch commits, the run is interrupted, exit 0 within shutdown_grace")
    func sigtermDuringBatch() async throws {
        let db = try TestDatabase()
        try db.connection.execute(
            script: "CREATE TABLE work (id int PRIMARY KEY); INSERT INTO work SELECT generate_series(1, 100)")
        let config = try db.writeConfiguration(
            "[worker]\nshutdown_grace = \"30s\"\n\n" + Self.disabledBuiltIns()
                + Self.sqlJob(
                    "drain",
                    sql:
                        "WITH pause AS (SELECT pg_sleep(0.3)) DELETE FROM work WHERE id = (SELECT min(id) FROM work, pause)",
                    extra: "repeat_until_zero = true\n"))
        let daemon = try await Self.started(config)
        try #require(await daemon.waitForLog(containing: "msg=\"run started\" job=drain") != nil, "\(daemon.log)")
        try #require(try await eventually { try db.count("SELECT count(*) FROM work") <= 98 })
        let signalled = ContinuousClock.now
        daemon.signal(SIGTERM)
        let status = await daemon.waitForExit(timeout: .seconds(60))
        let took = ContinuousClock.now - signalled
        #expect(status == 0, "\(daemon.log)")
        // A run that waited for the grace would take 30 s; one that ends after its 0.3 s
        // batch takes well under a third of that even on a loaded machine.
        #expect(took < .seconds(10), "a 0.3 s batch should end the run long before the 30 s grace, took \(took)")
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs WHERE status = 'running'") == 0)
        let run = try #require(
            try db.connection.query(
                """
                SELECT status, (stats->>'rows')::int AS rows, error FROM caretaker.job_runs
                WHERE job = 'drain' AND status <> 'skipped' ORDER BY id LIMIT 1
                """
            ).first)
        #expect(run["status"] == "interrupted")
        let remaining = try db.count("SELECT count(*) FROM work")
        #expect(run.int("rows") == 100 - remaining, "every committed batch is counted, the one in flight too")
        #expect(remaining > 0, "the run went on to the end instead of stopping")
        #expect(daemon.lines(containing: "msg=\"shutdown requested\" signal=SIGTERM").count == 1)
        #expect(daemon.lines(containing: "msg=stopped").count == 1)
    }

    @Test("SIGTERM while a statement outlasts shutdown_grace: it is cancelled, the run interrupted, exit 0 in time")
    func sigtermCancelsAfterGrace() async throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration(
            "[worker]\nshutdown_grace = \"2s\"\n\n" + Self.disabledBuiltIns()
                + Self.sqlJob(
                    "stuck", schedule: "@every 1m", sql: "SELECT pg_sleep(30)", extra: "statement_timeout = \"1m\"\n"))
        // It ran before, so it catches up on the current minute's slot at once.
        try db.connection.query(
            """
            INSERT INTO caretaker.job_runs (job, trigger, status, started_at, finished_at, host, pid)
            VALUES ('stuck', 'manual', 'succeeded', now() - interval '1 day', now() - interval '1 day', 'h', 1)
            """)
        let daemon = try await Self.started(config)
        try #require(await daemon.waitForLog(containing: "msg=\"run started\" job=stuck") != nil, "\(daemon.log)")
        let signalled = ContinuousClock.now
        daemon.signal(SIGTERM)
        let status = await daemon.waitForExit(timeout: .seconds(40))
        let took = ContinuousClock.now - signalled
        #expect(status == 0, "\(daemon.log)")
        // Cancelled at the 2 s grace, not left to its 30 s: 10 s leaves room for a loaded machine.
        #expect(took < .seconds(10), "took \(took), shutdown_grace is 2s and the statement sleeps 30 s")
        #expect(took > .seconds(1), "the statement cannot have ended by itself; took \(took)")
        let run = try #require(
            try db.connection.query(
                """
                SELECT status, error FROM caretaker.job_runs WHERE job = 'stuck' AND trigger = 'catch-up'
                """
            ).first)
        #expect(run["status"] == "interrupted", "\(daemon.log)")
        #expect(run["error"]?.contains("shutdown") == true)
        #expect(daemon.lines(containing: "cancelling running statements").count == 1)
    }

    // MARK: 4. kill -9

    @Test("kill -9 during a run: the next instance marks it interrupted at start-up")
    func killNineDuringRun() async throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration(
            Self.disabledBuiltIns()
                + Self.sqlJob(
                    "long", schedule: "@every 1s", sql: "SELECT pg_sleep(60)", extra: "statement_timeout = \"2m\"\n"))
        let first = try await Self.started(config)
        try #require(await first.waitForLog(containing: "msg=\"run started\" job=long") != nil, "\(first.log)")
        let run = try #require(
            try db.connection.query(
                """
                SELECT id, backend_pid FROM caretaker.job_runs WHERE job = 'long' AND status = 'running'
                """
            ).first)
        let runID = try #require(run.int64("id"))
        first.kill9()
        // The server notices the vanished client within a second (client_connection_check_interval),
        // not when the 60 s statement ends, and the run's advisory lock goes with the backend.
        #expect(
            try await eventually(timeout: .seconds(5)) {
                try db.count("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", run.int("backend_pid")) == 0
            }, "the dead worker's backend still runs its statement")
        #expect(
            try db.count("SELECT count(*) FROM caretaker.job_runs WHERE id = $1 AND status = 'running'", runID) == 1,
            "nobody should have touched the row yet")
        let second = try await Self.started(config)
        // Marked before `ready`, without waiting for any timeout.
        let row = try #require(
            try db.connection.query("SELECT status, error FROM caretaker.job_runs WHERE id = $1", runID).first)
        #expect(row["status"] == "interrupted")
        #expect(row["error"]?.contains("died") == true)
        #expect(
            second.lines(containing: "marked runs of dead processes interrupted", "runs=1").count == 1, "\(second.log)")
        second.kill9()
    }

    // MARK: 5. Database outage

    @Test(
        "the database stopped for several seconds: the daemon retries, logs it, keeps the watchdog fed, and carries on")
    func databaseOutage() async throws {
        let server = try TemporaryPostgres()
        defer { try? server.stop() }
        try server.connect().query("CREATE DATABASE outage")
        try Migrator(appSchema: "public").migrate(on: server.connect(database: "outage"))
        // The test cluster commits asynchronously and the outage is an immediate stop: a
        // checkpoint keeps the last migration's row, which the daemon waits for, from
        // being lost in it.
        try server.connect().query("CHECKPOINT")
        let path = NSTemporaryDirectory() + "caretaker-outage-\(UUID().uuidString).toml"
        let mailbox = NSTemporaryDirectory() + "caretaker-mail-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: mailbox, withIntermediateDirectories: true)
        try
            ("[database]\nurl = \"\(server.conninfo(database: "outage"))\"\nconnect_timeout = \"2s\"\n\n"
            + Self.mailConfig(mailbox) + Self.disabledBuiltIns(except: ["send-temp-passwords"])
            + Self.sqlJob("tick", sql: "SELECT 1"))
            .write(toFile: path, atomically: true, encoding: .utf8)
        defer {
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: mailbox)
        }
        let notify = try NotifySocket()
        let daemon = try await Self.started(
            path, environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"])
        try #require(await daemon.waitForLog(containing: "msg=\"run finished\" job=tick") != nil, "\(daemon.log)")

        try server.stop()
        let stopped = ContinuousClock.now
        #expect(await daemon.waitForLog(containing: "lost the scheduler's database connection") != nil, "\(daemon.log)")
        // Attempts 1, 2 and 3 come about 0, 1 and 3 seconds after the loss.
        #expect(await daemon.waitForLog(containing: "attempt=3", timeout: .seconds(10)) != nil, "\(daemon.log)")
        let retries = daemon.lines(containing: "database unavailable; retrying")
        #expect(retries.count >= 3)
        #expect(retries.contains { $0.contains("retry_in_ms=2000") }, "backoff doubles: \(retries)")
        try server.start()
        let restarted = ContinuousClock.now
        #expect(
            await daemon.waitForLog(containing: "database reachable again", timeout: .seconds(15)) != nil,
            "\(daemon.log)")
        let runsBefore = daemon.lines(containing: "msg=\"run finished\" job=tick").count
        #expect(
            await daemon.waitForLog(containing: "msg=\"run finished\" job=tick", count: runsBefore + 2) != nil,
            "the job did not run again after the database came back: \(daemon.log)")
        #expect(!daemon.hasExited)
        // NOTIFYs sent while it was disconnected are lost: a job that listens runs once to pick
        // up their work (trigger=notify, or a scheduled run that came due meanwhile covers it).
        #expect(
            try await eventually(timeout: .seconds(5)) {
                let lines = daemon.logLines
                guard let back = lines.firstIndex(where: { $0.contains("database reachable again") }) else {
                    return false
                }
                return lines[back...].contains { $0.contains("msg=\"run started\" job=send-temp-passwords") }
            }, "\(daemon.log)")

        // systemd would have killed a daemon whose pings stopped for WATCHDOG_USEC (1 s) during the outage.
        let pings = notify.messages.filter {
            $0.text.contains("WATCHDOG=1") && $0.receivedAt > stopped && $0.receivedAt < restarted
        }
        #expect(pings.count >= 4, "\(pings.count) watchdog pings during the outage")
        let gaps = zip(pings, pings.dropFirst()).map { $1.receivedAt - $0.receivedAt }
        #expect(gaps.allSatisfy { $0 < .seconds(1) }, "the watchdog starved: gaps \(gaps)")
        await Self.stop(daemon)
        let connection = try server.connect(database: "outage")
        #expect(
            try connection.query("SELECT count(*) AS n FROM caretaker.job_runs WHERE status = 'running'").first?.int(
                "n") == 0)
    }

    @Test(
        "started while the database is unreachable: retries with backoff (low-footprint too), SIGTERM still works",
        arguments: [false, true])
    func startsWithoutDatabase(lowFootprint: Bool) async throws {
        let path = NSTemporaryDirectory() + "caretaker-nodb-\(UUID().uuidString).toml"
        try """
        [database]
        url = "host=/nonexistent-socket-dir port=5432 user=postgres dbname=x"
        connect_timeout = "2s"
        """.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let daemon = try DaemonProcess(config: path, lowFootprint: lowFootprint)
        let retries = await daemon.waitForLog(
            containing: "database unavailable; retrying", count: 2, timeout: .seconds(5))
        let second = retries.map { $0[1] } ?? ""
        #expect(second.contains("attempt=2") && second.contains("retry_in_ms=2000"), "\(daemon.log)")
        #expect(daemon.lines(containing: "msg=ready").isEmpty)
        await Self.stop(daemon, within: .seconds(2))
    }

    // MARK: 6. SIGHUP

    @Test("SIGHUP with a broken jobs.toml keeps the old configuration; with a valid one applies it")
    func reload() async throws {
        let db = try TestDatabase()
        let tick = Self.disabledBuiltIns() + Self.sqlJob("tick", sql: "SELECT 1")
        let config = try db.writeConfiguration(tick)
        let daemon = try await Self.started(config)
        try #require(await daemon.waitForLog(containing: "msg=\"run finished\" job=tick") != nil, "\(daemon.log)")

        _ = try db.writeConfiguration(tick + "bogus_key = 1\n")
        daemon.signal(SIGHUP)
        let failure = try #require(await daemon.waitForLog(containing: "configuration reload failed"), "\(daemon.log)")
        #expect(failure.first?.contains("jobs.tick.bogus_key") == true, "the log should say why: \(failure)")
        let lastBefore = try db.count("SELECT max(id) FROM caretaker.job_runs")
        #expect(
            try await eventually(timeout: .seconds(5)) {
                try db.count(
                    "SELECT count(*) FROM caretaker.job_runs WHERE job = 'tick' AND status = 'succeeded' AND id > $1",
                    lastBefore) >= 2
            }, "the job stopped after the failed reload")

        // The new file drops tick, adds tock, and enables a job that listens for NOTIFY.
        let mailbox = NSTemporaryDirectory() + "caretaker-mail-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: mailbox, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: mailbox) }
        _ = try db.writeConfiguration(
            Self.mailConfig(mailbox) + Self.disabledBuiltIns(except: ["send-temp-passwords"])
                + Self.sqlJob("tock", sql: "SELECT 2"))
        daemon.signal(SIGHUP)
        #expect(await daemon.waitForLog(containing: "msg=\"configuration reloaded\"") != nil, "\(daemon.log)")
        let reloadedAt = try Self.now(db)
        #expect(
            try await eventually(timeout: .seconds(5)) {
                try db.count("SELECT count(*) FROM caretaker.job_runs WHERE job = 'tock' AND status = 'succeeded'") >= 2
            }, "the new job does not run: \(daemon.log)")
        #expect(
            try db.count(
                "SELECT count(*) FROM caretaker.job_runs WHERE job = 'tick' AND started_at > to_timestamp($1::float8)",
                reloadedAt) == 0, "the removed job still runs")
        try Self.resetRequest(db)
        #expect(
            try await eventually(timeout: .seconds(15)) {
                try db.count(
                    "SELECT count(*) FROM caretaker.job_runs WHERE job = 'send-temp-passwords' AND trigger = 'notify'")
                    >= 1
            }, "the newly enabled job does not LISTEN: \(daemon.log)")
        await Self.stop(daemon)
    }

    // MARK: 7. systemd notifications

    @Test("READY=1, a steady WATCHDOG=1 while jobs run, STOPPING=1 on SIGTERM, on a test NOTIFY_SOCKET")
    func systemdNotify() async throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration(
            Self.disabledBuiltIns()
                + Self.sqlJob("tick", sql: "SELECT pg_sleep(0.3)")
                + Self.sqlJob("slow", schedule: "@every 2s", sql: "SELECT pg_sleep(6)"))
        let notify = try NotifySocket()
        // WATCHDOG_USEC of 1 s: a ping every 0.5 s.
        let daemon = try DaemonProcess(
            config: config, environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"])
        let ready = try #require(await notify.waitFor("READY=1"), "\(daemon.log)")
        #expect(ready.text.contains("STATUS="))
        // Runs starting and finishing, slots skipped, and a 6 s run from start to end.
        #expect(await daemon.waitForLog(containing: "msg=\"run finished\" job=tick", count: 3) != nil, "\(daemon.log)")
        #expect(await daemon.waitForLog(containing: "status=skipped") != nil, "\(daemon.log)")
        #expect(
            await daemon.waitForLog(containing: "msg=\"run finished\" job=slow", timeout: .seconds(30)) != nil,
            "\(daemon.log)")
        let pings = notify.messages.filter { $0.text == "WATCHDOG=1" && $0.receivedAt > ready.receivedAt }
        #expect(pings.count >= 6, "\(pings.count) pings")
        // Pings that waited for a run would leave a gap of about the run's 6 s; every gap
        // stays under half that (six pings' worth: room for a loaded machine).
        let gaps = zip(pings, pings.dropFirst()).map { $1.receivedAt - $0.receivedAt }
        #expect(gaps.allSatisfy { $0 < .seconds(3) }, "longest gap \(gaps.max() ?? .zero): the pings waited for a run")
        daemon.signal(SIGTERM)
        #expect(await notify.waitFor("STOPPING=1") != nil)
        // A slow run may be in its 6 s statement (shutdown_grace is 20 s).
        #expect(await daemon.waitForExit(timeout: .seconds(40)) == 0)
    }

    // MARK: 8. Catch-up

    @Test("after downtime across a slot, one catch-up run, however many slots were missed and instances start")
    func catchUpOnce() async throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration(
            Self.disabledBuiltIns() + Self.sqlJob("nightly", schedule: "0 0 * * *", sql: "SELECT 1"))
        // It last ran three days ago: three midnights passed while nobody was running.
        try db.connection.query(
            """
            INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, finished_at, host, pid)
            VALUES ('nightly', 'schedule', 'succeeded',
                    date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '3 days',
                    now() - interval '3 days', now() - interval '3 days', 'old-host', 1)
            """)
        let first = try DaemonProcess(config: config)
        let second = try DaemonProcess(config: config)
        for daemon in [first, second] {
            try #require(await daemon.waitForLog(containing: "msg=ready") != nil, "\(daemon.log)")
        }
        #expect(
            try await eventually {
                try db.count(
                    "SELECT count(*) FROM caretaker.job_runs WHERE trigger = 'catch-up' AND status = 'succeeded'") == 1
            })
        try await Task.sleep(for: .milliseconds(500))  // room for a second catch-up to show, should there be one
        await Self.stop(first)
        await Self.stop(second)
        // A restart within the same day finds the slot taken.
        let third = try await Self.started(config)
        try await Task.sleep(for: .milliseconds(500))
        await Self.stop(third)

        let midnight = "date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
        let runs = try db.connection.query(
            """
            SELECT trigger, status, slot = \(midnight) AS latest_midnight
            FROM caretaker.job_runs WHERE host <> 'old-host' AND status <> 'skipped'
            """
        ).rows
        #expect(runs.count == 1, "\(runs.map(\.values))")
        #expect(runs.first?["trigger"] == "catch-up")
        #expect(runs.first?.bool("latest_midnight") == true, "the catch-up is for the latest missed slot")
        // The two midnights before it nobody ran: one row says so, with their number, the first and the last.
        let missed = try db.connection.query(
            """
            SELECT error, (stats->>'missed_slots')::int AS missed,
                   (stats->>'first_missed')::timestamptz = \(midnight) - interval '2 days' AS first_right,
                   (stats->>'last_missed')::timestamptz = \(midnight) - interval '1 day' AS last_right
            FROM caretaker.job_runs WHERE host <> 'old-host' AND status = 'skipped'
            """
        ).rows
        #expect(missed.count == 1, "\(missed.map(\.values))")
        #expect(missed.first?["error"] == "missed while no worker ran")
        #expect(missed.first?.int("missed") == 2)
        #expect(
            missed.first?.bool("first_right") == true && missed.first?.bool("last_right") == true,
            "\(missed.map(\.values))")
    }

    // MARK: 9. NOTIFY

    static func mailConfig(_ directory: String, schedule: String = "@every 1m") -> String {
        """
        [mail]
        transport = "file"
        directory = "\(directory)"
        from = "Community <no-reply@example.org>"

        [jobs.send-temp-passwords]
        schedule = "\(schedule)"
        bcrypt_cost = 4

        """
    }

    /// Inserts a user and a reset request for them; returns the request's id.
    @discardableResult
    static func resetRequest(_ db: TestDatabase) throws -> Int64 {
        try db.connection.query("INSERT INTO users (email, password_hash) VALUES ('ann@example.org', 'h')")
        return try db.connection.query(
            """
            INSERT INTO password_reset_requests (email) VALUES ('ann@example.org') RETURNING id
            """
        ).first!.int64("id")!
    }

    /// The NOTIFY arrives while the daemon waits in a query of its own (its deadline
    /// query, held up by a lock on `sessions`): libpq reads it along with that query's
    /// result, where poll(2) no longer sees it, and the daemon must still act on it.
    @Test("a reset request NOTIFYs the daemon, which runs send-temp-passwords at once, even mid-query")
    func notifyRunsTheJob() async throws {
        let db = try TestDatabase()
        let mailbox = NSTemporaryDirectory() + "caretaker-mail-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: mailbox, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: mailbox) }
        // No catch-up: when this test runs in a later clock hour than the template database
        // was migrated in, a catch-up run of logout-inactive would wait for the lock below
        // itself (as caretaker/logout-inactive), and no deadline query would be asked.
        let config = try db.writeConfiguration(
            Self.mailConfig(mailbox, schedule: "@hourly") + "catch_up = false\n\n"
                + "[jobs.logout-inactive]\nschedule = \"@hourly\"\ncatch_up = false\n\n"
                + Self.disabledBuiltIns(except: ["send-temp-passwords", "logout-inactive"]))
        let locker = try TemporaryPostgres.shared.connect(database: db.name)
        try locker.query("BEGIN")
        try locker.query("LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE")
        let daemon = try DaemonProcess(config: config)
        try #require(
            try await eventually(timeout: .seconds(4)) {
                try db.count(
                    """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND application_name = 'caretaker' AND wait_event_type = 'Lock'
                    """) == 1
            }, "the daemon's deadline query did not wait for the lock: \(daemon.log)")
        let id = try Self.resetRequest(db)
        // The NOTIFY waits at the server while the daemon's query is blocked; it goes out with the result.
        try await Task.sleep(for: .seconds(1))
        try locker.query("ROLLBACK")
        // Without the NOTIFY the job would run at the next hour; seconds tell the two apart
        // with room for a loaded machine.
        #expect(
            try await eventually(timeout: .seconds(20)) {
                try db.count(
                    "SELECT count(*) FROM caretaker.job_runs WHERE job = 'send-temp-passwords' AND trigger = 'notify'")
                    >= 1
            }, "no notify-triggered run: \(daemon.log)")
        #expect(
            try await eventually(timeout: .seconds(20)) {
                try db.count("SELECT count(*) FROM password_reset_requests WHERE id = $1 AND status = 'sent'", id) == 1
            }, "\(daemon.log)")
        #expect(
            try db.count(
                """
                SELECT count(*) FROM password_reset_requests r
                WHERE id = $1 AND sent_at - requested_at < interval '30 seconds'
                """, id) == 1)
        #expect(
            (try FileManager.default.contentsOfDirectory(atPath: mailbox)).filter { $0.hasSuffix(".eml") }.count == 1)
        await Self.stop(daemon)
    }

    @Test("low-footprint mode does not LISTEN: a reset request waits for the schedule")
    func lowFootprintDoesNotListen() async throws {
        let db = try TestDatabase()
        let mailbox = NSTemporaryDirectory() + "caretaker-mail-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: mailbox, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: mailbox) }
        let config = try db.writeConfiguration(
            Self.mailConfig(mailbox) + Self.disabledBuiltIns(except: ["send-temp-passwords"]))
        let daemon = try await Self.started(config, lowFootprint: true)
        try Self.resetRequest(db)
        try await Task.sleep(for: .seconds(2))  // what the normal mode does within 2 s must not happen here
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs WHERE trigger = 'notify'") == 0, "\(daemon.log)")
        await Self.stop(daemon)
    }

    // MARK: 10. Low-footprint mode

    /// With systemd's watchdog on (a ping every second), the pings are the only wake-ups,
    /// and they do not keep the connection open.
    @Test("low-footprint: no connection while idle, and no wake-ups either", arguments: [false, true])
    func lowFootprintIdle(watchdog: Bool) async throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration(
            "[worker]\nidle_disconnect = \"1s\"\n\n" + Self.disabledBuiltIns()
                + Self.sqlJob("tick", schedule: "@every 10s", sql: "SELECT 1"))
        let notify = try NotifySocket()
        let environment = watchdog ? ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "2000000"] : [:]
        let daemon = try await Self.started(config, lowFootprint: true, environment: environment)
        // After a scheduled run (not the catch-up at start) the next slot is 10 s away. Watch
        // from there until just before that slot; when this test process was too slow to
        // see the run in time (a loaded machine), watch after the next one instead.
        let scheduled = "trigger=schedule status=succeeded"
        var samples: [Int] = []
        var switches = 0
        var pings = 0
        var runs = 0
        for _ in 1...3 {
            runs += 1
            try #require(
                await daemon.waitForLog(containing: scheduled, count: runs, timeout: .seconds(15)) != nil,
                "\(daemon.log)")
            #expect(
                try await eventually(timeout: .seconds(10)) { try Self.daemonConnections(db) == 0 },
                "the connection stayed open after the run")
            // The scheduler hands its idle memory back after closing the connection; what
            // that costs (a page read back in is a switch) is not the idle wake-ups judged here.
            try await Self.schedulerAsleep(daemon)
            let nextSlot = (try Self.now(db) / 10).rounded(.up) * 10
            guard try nextSlot - Self.now(db) > 2.5 else { continue }
            // /proc/PID/status counts the main thread's switches: the scheduler's.
            let switchesBefore = try daemon.statistics.status("voluntary_ctxt_switches")
            let windowStart = ContinuousClock.now
            while try Self.now(db) < nextSlot - 0.5 {
                samples.append(try Self.daemonConnections(db))
                try await Task.sleep(for: .milliseconds(100))
            }
            switches = try daemon.statistics.status("voluntary_ctxt_switches") - switchesBefore
            pings = notify.messages.filter { $0.text == "WATCHDOG=1" && $0.receivedAt > windowStart }.count
            break
        }
        #expect(samples.count >= 10, "no idle window long enough to judge: \(samples.count) samples")
        #expect(samples.allSatisfy { $0 == 0 }, "connections while idle: \(samples)")
        #expect(!watchdog || pings >= 2, "\(pings) watchdog pings in the idle window")
        #expect(switches <= pings + 2, "the idle scheduler woke \(switches) times for \(pings) watchdog pings")
        // It connects again for the next run.
        #expect(
            await daemon.waitForLog(containing: scheduled, count: runs + 1, timeout: .seconds(15)) != nil,
            "\(daemon.log)")
        await Self.stop(daemon)
    }

    /// Waits (at most 3 s) until the daemon's main thread has not switched for 300 ms:
    /// it sleeps. A scheduler that keeps waking goes on to be judged as it is.
    static func schedulerAsleep(_ daemon: DaemonProcess) async throws {
        let deadline = ContinuousClock.now + .seconds(3)
        var last = try daemon.statistics.status("voluntary_ctxt_switches")
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(300))
            let now = try daemon.statistics.status("voluntary_ctxt_switches")
            if now == last { return }
            last = now
        }
    }

    /// Without `IdleMemory`, both daemons keep every page of code and shared library
    /// they have touched (about the same RSS); with it, the low-footprint one keeps a fraction.
    @Test("low-footprint: idle, it hands its code pages back; its jobs run as before when it wakes")
    func lowFootprintHandsMemoryBack() async throws {
        let db = try TestDatabase()
        let worker = "[worker]\nidle_disconnect = \"1s\"\n\n" + Self.disabledBuiltIns()
        let config = try db.writeConfiguration(
            worker
                + Self.sqlJob(
                    "tick", schedule: "0 0 1 1 *", sql: "SELECT 1",
                    extra: "catch_up = false\n"))
        let low = try await Self.started(config, lowFootprint: true)
        let normal = try await Self.started(config)
        try await Task.sleep(for: .seconds(2))
        let lowKiB = try low.statistics.status("VmRSS")
        let normalKiB = try normal.statistics.status("VmRSS")
        #expect(lowKiB * 2 < normalKiB, "idle resident memory: low-footprint \(lowKiB) KiB, normal \(normalKiB) KiB")
        _ = try db.writeConfiguration(worker + Self.sqlJob("tick", sql: "SELECT 1"))
        low.signal(SIGHUP)
        #expect(
            await low.waitForLog(containing: "trigger=schedule status=succeeded", count: 2, timeout: .seconds(10))
                != nil,
            "\(low.log)")
        await Self.stop(normal)
        await Self.stop(low)
    }

    @Test(
        "low-footprint: one job at a time on one connection, batch_pause between batches, no spinning while a job waits"
    )
    func lowFootprintOneAtATime() async throws {
        let db = try TestDatabase()
        try db.connection.execute(
            script: """
                CREATE TABLE work (id int PRIMARY KEY); INSERT INTO work SELECT generate_series(1, 5);
                CREATE TABLE deleted (id int, at timestamptz)
                """)
        let config = try db.writeConfiguration(
            "[worker]\nbatch_pause = \"300ms\"\n\n" + Self.disabledBuiltIns()
                + Self.sqlJob("alpha", schedule: "@every 2s", sql: "SELECT pg_sleep(1)")
                + Self.sqlJob(
                    "drain", schedule: "@every 2s",
                    sql:
                        "WITH d AS (DELETE FROM work WHERE id = (SELECT min(id) FROM work) RETURNING id) INSERT INTO deleted SELECT id, clock_timestamp() FROM d",
                    extra: "repeat_until_zero = true\n"))
        let daemon = try await Self.started(config, lowFootprint: true)
        let cpuBefore = try #require(daemon.cpuTime)
        var connections: [Int] = []
        let done = try await eventually(timeout: .seconds(12)) {
            connections.append(try Self.daemonConnections(db))
            return try db.count(
                "SELECT count(*) FROM caretaker.job_runs WHERE job = 'drain' AND status = 'succeeded' AND (stats->>'rows')::int = 5"
            ) == 1
                && daemon.lines(containing: "msg=\"run finished\" job=alpha").count >= 2
        }
        let cpu = try #require(daemon.cpuTime) - cpuBefore
        await Self.stop(daemon)
        #expect(done, "\(daemon.log)")
        #expect(try Self.overlappingRuns(db) == 0, "two jobs ran at the same time")
        #expect(connections.max() ?? 0 <= 1, "more than one connection: \(connections)")
        #expect(connections.contains(1), "never saw the daemon's connection: the sampling is broken")
        let gaps = try db.connection.query(
            """
            SELECT extract(epoch FROM at - lag(at) OVER (ORDER BY at))::float8 AS gap FROM deleted ORDER BY at
            """
        ).rows.compactMap { $0.double("gap") }
        #expect(gaps.count == 4)
        #expect(gaps.allSatisfy { $0 >= 0.29 }, "batches closer than batch_pause: \(gaps)")
        // drain waits about a second per slot for alpha to finish: a scheduler polling for a free place burns that.
        #expect(cpu < .milliseconds(500), "\(cpu) of CPU in a few seconds of mostly waiting: the scheduler spins")
    }

    // MARK: 11. logout-inactive deadlines

    @Test("logout-inactive revokes a session right after its idle deadline, not at the next slot")
    func logoutAtDeadline() async throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration(
            "[jobs.logout-inactive]\nschedule = \"@every 1m\"\nidle_timeout = \"3s\"\n\n"
                + Self.disabledBuiltIns(except: ["logout-inactive"]))
        let daemon = try await Self.started(config)
        // The session starts after the daemon is up: it has to notice it by itself.
        let session = try db.connection.query(
            """
            WITH u AS (INSERT INTO users (email, password_hash) VALUES ('bo@example.org', 'h') RETURNING id)
            INSERT INTO sessions (user_id, last_seen_at) SELECT id, now() FROM u RETURNING id
            """
        ).first!["id"]!
        #expect(
            try await eventually(timeout: .seconds(30)) {
                try db.count("SELECT count(*) FROM sessions WHERE id = $1::uuid AND revoked_at IS NOT NULL", session)
                    == 1
            }, "\(daemon.log)")
        // Well before the next slot (up to a minute away; the deadline run below is what proves
        // it was not a slot), with room for a loaded machine.
        let row = try #require(
            try db.connection.query(
                """
                SELECT revoked_at - last_seen_at < interval '20 s' AS prompt, revoked_at - last_seen_at >= interval '3 s' AS not_early,
                       revoked_reason FROM sessions WHERE id = $1::uuid
                """, session
            ).first)
        #expect(row.bool("prompt") == true)
        #expect(row.bool("not_early") == true)
        #expect(row["revoked_reason"] == "inactivity")
        #expect(
            try db.count(
                """
                SELECT count(*) FROM caretaker.job_runs
                WHERE job = 'logout-inactive' AND trigger = 'deadline' AND (stats->>'sessions_revoked')::int = 1
                """) == 1, "the session was not revoked by a deadline run")
        await Self.stop(daemon)
    }

    /// The app holds an idle session locked, or every revocation fails: the deadline
    /// query keeps saying "due", and the runs follow the retry rules instead of looping.
    @Test(
        "logout-inactive with its work stuck: a handful of runs in 15 s, at most 1 + max_retries before the next slot",
        arguments: ["locked", "failing"])
    func stuckDeadlineDoesNotSpin(cause: String) async throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration(
            "[jobs.logout-inactive]\nschedule = \"@hourly\"\nmax_retries = 3\n\n"
                + Self.disabledBuiltIns(except: ["logout-inactive"]))
        let session = try db.connection.query(
            """
            WITH u AS (INSERT INTO users (email, password_hash) VALUES ('cy@example.org', 'h') RETURNING id)
            INSERT INTO sessions (user_id, last_seen_at) SELECT id, now() - interval '11 minutes' FROM u RETURNING id
            """
        ).first!["id"]!
        let locker = try TemporaryPostgres.shared.connect(database: db.name)
        if cause == "locked" {
            // Held for 20 s, as the app would in a longer transaction.
            try locker.query("BEGIN")
            try locker.query("SELECT 1 FROM sessions WHERE id = $1::uuid FOR UPDATE", session)
        } else {
            // Every revocation fails (a schema the job does not expect; a CHECK or trigger on one
            // row would only make that session "blocked", the run itself succeeding).
            try db.connection.query("ALTER TABLE sessions RENAME COLUMN revoked_reason TO revoked_why")
        }
        let startedAt = try Self.now(db)
        let daemon = try await Self.started(config)
        try await Task.sleep(for: .seconds(15))
        let runs = try db.connection.query(
            """
            SELECT trigger, status, attempt, started_at < date_trunc('hour', to_timestamp($1::float8)) + interval '1 hour' AS before_slot
            FROM caretaker.job_runs WHERE job = 'logout-inactive' ORDER BY id
            """, startedAt
        ).rows
        await Self.stop(daemon)
        if cause == "locked" { try locker.query("ROLLBACK") }
        #expect(runs.count >= 1 && runs.count <= 5, "\(runs.count) runs in 15 s: \(daemon.log)")
        #expect(runs.filter { $0.bool("before_slot") == true }.count <= 1 + 3)
        // The first run is the deadline wake-up (or a catch-up, when the test template's schema predates the hour).
        #expect(["deadline", "catch-up"].contains(runs.first?["trigger"] ?? ""), "\(runs.map(\.values))")
        #expect(
            runs.dropFirst().allSatisfy { $0["trigger"] == "retry" || $0["trigger"] == "schedule" },
            "\(runs.map(\.values))")
        if cause == "failing" {
            #expect(runs.allSatisfy { $0["status"] == "failed" }, "\(runs.map(\.values))")
        }
        #expect(
            daemon.lines(containing: "msg=\"retry planned\"").filter { $0.contains("attempt=2") }.count == 1,
            "\(daemon.log)")
    }

    /// An operator's `LOCK TABLE caretaker.job_slots` for 14 s: the scheduler's own
    /// statements (claims of skipped slots) time out, are logged and retried, and
    /// the watchdog is fed throughout; afterwards runs carry on.
    @Test(
        "a lock on caretaker's tables: the scheduler's statements time out and are retried, the watchdog keeps being fed"
    )
    func bookkeepingStatementsTimeOut() async throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration(Self.disabledBuiltIns() + Self.sqlJob("slow", sql: "SELECT pg_sleep(2)"))
        let notify = try NotifySocket()
        let daemon = try DaemonProcess(
            config: config, environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "10000000"])
        let ready = try #require(await notify.waitFor("READY=1"), "\(daemon.log)")
        try #require(await daemon.waitForLog(containing: "status=skipped") != nil, "\(daemon.log)")
        let locker = try TemporaryPostgres.shared.connect(database: db.name)
        try locker.query("BEGIN")
        try locker.query("LOCK TABLE caretaker.job_slots IN ACCESS EXCLUSIVE MODE")
        let locked = ContinuousClock.now
        try await Task.sleep(for: .seconds(14))
        try locker.query("ROLLBACK")
        let unlocked = ContinuousClock.now
        let finishedBefore = daemon.lines(containing: "msg=\"run finished\" job=slow").count
        #expect(
            await daemon.waitForLog(
                containing: "msg=\"run finished\" job=slow", count: finishedBefore + 1,
                timeout: .seconds(15)) != nil, "runs did not carry on: \(daemon.log)")
        #expect(!daemon.lines(containing: "the scheduler's statement timed out; retrying").isEmpty, "\(daemon.log)")
        // READY=1, then pings until 6 s after the lock: no gap as long as WATCHDOG_USEC.
        try await Task.sleep(until: unlocked + .seconds(6))
        let alive =
            [ready.receivedAt]
            + notify.messages.filter { $0.text.contains("WATCHDOG=1") }.map(\.receivedAt)
            .filter { $0 < unlocked + .seconds(6) }
        let gaps = zip(alive, alive.dropFirst()).map { $1 - $0 }
        #expect(
            alive.filter { $0 > locked && $0 < unlocked }.count >= 2,
            "\(alive.map { $0 - locked }) watchdog pings from the lock's start (lifted after \(unlocked - locked))")
        #expect(gaps.allSatisfy { $0 < .seconds(10) }, "the watchdog starved: gaps \(gaps)")
        await Self.stop(daemon)
    }
}
