import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Metrics, alerts and pings of `caretaker run` and `once`, against real
/// PostgreSQL, aiosmtpd, Prometheus, promtool and a Python HTTP server.
@Suite(.serialized) struct MonitoringTests {
    static let builtInsOff = DaemonTests.disabledBuiltIns()

    static func mailAndAlerts(_ smtp: TestSMTPServer) -> String {
        "[mail]\nurl = \"\(smtp.url)\"\nfrom = \"caretaker <caretaker@example.org>\"\n\n[alerts]\nmail_to = \"ops@example.org\"\n\n"
    }

    /// The port the daemon's metrics listener got (the config asks for port 0).
    static func metricsPort(_ daemon: DaemonProcess) async throws -> Int {
        let line = try #require(await daemon.waitForLog(containing: "metrics listening")?.first, "log:\n\(daemon.log)")
        let address = try #require(line.split(separator: " ").first { $0.hasPrefix("address=") })
        return try #require(Int(address.split(separator: ":").last ?? ""))
    }

    /// The value of one series line (`name{labels} value`) in an exposition, or nil.
    static func value(_ series: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap {
            Double($0.split(separator: " ").last ?? "")
        }
    }

    @Test(
        "a job failing every run: one alert, /metrics shows it, Prometheus scrapes; fixed and reloaded: one recovery mail"
    )
    func failingJobAlertsOnceAndRecovers() async throws {
        let db = try TestDatabase()
        let smtp = try TestSMTPServer.start()
        let pings = try TestHTTPServer.start()
        let textfile = NSTemporaryDirectory() + "caretaker-\(db.name).prom"
        defer { try? FileManager.default.removeItem(atPath: textfile) }
        func config(brokenSQL: String) -> String {
            Self.mailAndAlerts(smtp) + "[metrics]\nlisten = \"127.0.0.1:0\"\ntextfile = \"\(textfile)\"\n\n"
                + Self.builtInsOff
                + DaemonTests.sqlJob(
                    "broken", sql: brokenSQL, extra: "max_retries = 0\nping_url = \"\(pings.url)/ping/broken\"\n")
                // Three periods of @every 1s are 3 s: a loaded machine could make tick stale for a moment.
                + DaemonTests.sqlJob("tick", sql: "SELECT 1", extra: "stale_after = \"10m\"\n")
        }
        let path = try db.writeConfiguration(config(brokenSQL: "SELECT 1/0"))
        let daemon = try await DaemonTests.started(path)
        let port = try await Self.metricsPort(daemon)

        // However many runs fail, one alert.
        #expect(
            try await eventually(timeout: .seconds(20)) {
                try db.count("SELECT count(*) FROM caretaker.job_runs WHERE job = 'broken' AND status = 'failed'") >= 4
            }, "log:\n\(daemon.log)")
        let alerts = try smtp.waitForMessages(count: 1, timeout: .seconds(10))
        try await Task.sleep(for: .seconds(2))
        #expect(try smtp.messages().count == 1)
        let alert = try #require(alerts.first)
        #expect(alert.recipients == ["ops@example.org"])
        #expect(alert.header("Subject") == "[caretaker] broken is unhealthy")
        #expect(alert.body.contains("Cause: last run failed: "), "\(alert.body)")
        #expect(alert.body.contains("division by zero"))
        #expect(alert.body.contains("caretaker history --job broken"))
        #expect(
            try db.count("SELECT count(*) FROM caretaker.job_alerts WHERE job = 'broken' AND state = 'unhealthy'") == 1)

        // The endpoint, scraped over HTTP.
        #expect(
            try await eventually {
                Self.value(
                    "caretaker_job_runs_total{job=\"broken\",status=\"failed\"}",
                    in: try HTTPGet.fetch(port: port, path: "/metrics").body) ?? 0 >= 3
            })
        let scrape = try HTTPGet.fetch(port: port, path: "/metrics")
        #expect(scrape.status == 200)
        #expect(scrape.headers.contains("Content-Type: text/plain; version=0.0.4"))
        let metrics = scrape.body
        #expect(Self.value("caretaker_job_healthy{job=\"broken\"}", in: metrics) == 0, "\(metrics)")
        #expect(Self.value("caretaker_job_healthy{job=\"tick\"}", in: metrics) == 1)
        #expect(Self.value("caretaker_job_runs_total{job=\"tick\",status=\"succeeded\"}", in: metrics) ?? 0 >= 1)
        #expect(Self.value("caretaker_job_runs_total{job=\"tick\",status=\"failed\"}", in: metrics) == 0)
        #expect(Self.value("caretaker_database_up", in: metrics) == 1)
        #expect(Self.value("caretaker_build_info{version=\"\(caretakerVersion)\"}", in: metrics) == 1)
        #expect(
            Self.value("caretaker_job_last_success_timestamp_seconds{job=\"tick\"}", in: metrics) ?? 0 > 1_700_000_000)
        #expect(Self.value("caretaker_job_last_success_timestamp_seconds{job=\"broken\"}", in: metrics) == nil)
        #expect(
            Self.value("caretaker_job_last_run_timestamp_seconds{job=\"broken\"}", in: metrics) ?? 0 > 1_700_000_000)
        #expect(metrics.contains("caretaker_job_duration_seconds_bucket{job=\"tick\",le=\"+Inf\"}"))
        #expect(!metrics.contains("division"), "an error text is no label")
        let checked = try Promtool.checkMetrics(text: metrics)
        #expect(checked.status == 0, "\(checked.output)\n\(metrics)")
        #expect(try HTTPGet.fetch(port: port, path: "/other").status == 404)
        #expect(try HTTPGet.fetch(port: port, path: "/metrics", method: "POST").status == 405)

        // The textfile, read back.
        let file = try String(contentsOfFile: textfile, encoding: .utf8)
        #expect(Self.value("caretaker_job_healthy{job=\"broken\"}", in: file) == 0)
        let fileChecked = try Promtool.checkMetrics(file: textfile)
        #expect(fileChecked.status == 0, "\(fileChecked.output)")

        // A real Prometheus scrapes it.
        let prometheus = try TestPrometheusServer(targets: ["127.0.0.1:\(port)"])
        #expect(
            try await eventually(timeout: .seconds(30)) {
                prometheus.query("up")["127.0.0.1:\(port)"] == "1"
            }, "prometheus log:\n\(prometheus.log)")
        #expect(
            try await eventually(timeout: .seconds(10)) {
                prometheus.query("caretaker_job_healthy%7Bjob%3D%22broken%22%7D")["127.0.0.1:\(port)"] == "0"
            })

        // Pings: start and fail for each run so far.
        let failedPaths = pings.waitForPaths { $0.contains("/ping/broken/fail") }
        #expect(failedPaths.contains("/ping/broken/start"))
        #expect(!failedPaths.contains("/ping/broken"))

        // Fixed and reloaded: one recovery mail, then nothing more.
        try db.configurationText(config(brokenSQL: "SELECT 1")).write(toFile: path, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        let both = try smtp.waitForMessages(count: 2, timeout: .seconds(20))
        #expect(both.last?.header("Subject") == "[caretaker] broken recovered")
        #expect(both.last?.body.contains("caretaker history --job broken") == true)
        #expect(pings.waitForPaths { $0.contains("/ping/broken") }.contains("/ping/broken"))
        try await Task.sleep(for: .seconds(3))
        #expect(try smtp.messages().count == 2)
        #expect(
            try await eventually {
                Self.value(
                    "caretaker_job_healthy{job=\"broken\"}", in: try HTTPGet.fetch(port: port, path: "/metrics").body)
                    == 1
            })
        await DaemonTests.stop(daemon)
    }

    @Test("two daemons on one database: one alert for the incident")
    func oneAlertAcrossInstances() async throws {
        let db = try TestDatabase()
        let smtp = try TestSMTPServer.start()
        let path = try db.writeConfiguration(
            Self.mailAndAlerts(smtp) + Self.builtInsOff
                + DaemonTests.sqlJob("broken", sql: "SELECT 1/0", extra: "max_retries = 0\n"))
        let first = try await DaemonTests.started(path)
        let second = try await DaemonTests.started(path)
        #expect(
            try await eventually(timeout: .seconds(20)) {
                try db.count(
                    "SELECT count(DISTINCT pid) FROM caretaker.job_runs WHERE job = 'broken' AND status = 'failed'")
                    == 2
                    && db.count("SELECT count(*) FROM caretaker.job_runs WHERE job = 'broken' AND status = 'failed'")
                        >= 6
            }, "both instances ran and failed the job")
        _ = try smtp.waitForMessages(count: 1, timeout: .seconds(10))
        try await Task.sleep(for: .seconds(2))
        #expect(try smtp.messages().count == 1)
        await DaemonTests.stop(first)
        await DaemonTests.stop(second)
    }

    @Test("a job whose first run hangs past stale_after: one alert, though it has no finished run")
    func hungFirstRunAlerts() async throws {
        let db = try TestDatabase()
        let smtp = try TestSMTPServer.start()
        // tick's runs make the daemon look at the health of every job after each run.
        // shutdown_grace: the stop at the end cancels the sleep.
        let path = try db.writeConfiguration(
            "[worker]\nshutdown_grace = \"2s\"\n\n" + Self.mailAndAlerts(smtp) + Self.builtInsOff
                + DaemonTests.sqlJob(
                    "hung", schedule: "@every 1h", sql: "SELECT pg_sleep(60)",
                    extra: "catch_up = true\nstale_after = \"2s\"\nstatement_timeout = \"90s\"\n")
                + DaemonTests.sqlJob("tick", sql: "SELECT 1", extra: "stale_after = \"10m\"\n"))
        // hung's first slot is one that passed before the schema was migrated: catch-up runs it at start.
        try db.connection.query("UPDATE caretaker.schema_migrations SET applied_at = now() - interval '2 hours'")
        let daemon = try await DaemonTests.started(path)
        #expect(
            try await eventually(timeout: .seconds(15)) {
                try db.count("SELECT count(*) FROM caretaker.job_runs WHERE job = 'hung' AND status = 'running'") == 1
            }, "log:\n\(daemon.log)")
        let alerts = try smtp.waitForMessages(count: 1, timeout: .seconds(20))
        let alert = try #require(alerts.first, "log:\n\(daemon.log)")
        #expect(alert.header("Subject") == "[caretaker] hung is unhealthy")
        #expect(alert.body.contains("has never succeeded in the 2s (stale_after)"), "\(alert.body)")
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs WHERE job = 'hung' AND status <> 'running'") == 0)
        await DaemonTests.stop(daemon)
    }

    @Test("low-footprint mode: the textfile after every run, no extra connection; the listener works there too")
    func lowFootprintTextfile() async throws {
        let db = try TestDatabase()
        let textfile = NSTemporaryDirectory() + "caretaker-\(db.name).prom"
        defer { try? FileManager.default.removeItem(atPath: textfile) }
        let path = try db.writeConfiguration(
            "[metrics]\nlisten = \"127.0.0.1:0\"\ntextfile = \"\(textfile)\"\n\n"
                + Self.builtInsOff + DaemonTests.sqlJob("tick", sql: "SELECT 1", extra: "stale_after = \"10m\"\n"))
        // The unit's UMask=0077, inherited for the moment of the spawn only.
        let previousMask = umask(0o077)
        let spawned = Result { try DaemonProcess(config: path, lowFootprint: true) }
        umask(previousMask)
        let daemon = try spawned.get()
        let port = try await Self.metricsPort(daemon)
        #expect(
            try await eventually(timeout: .seconds(15)) {
                let text = (try? String(contentsOfFile: textfile, encoding: .utf8)) ?? ""
                return Self.value("caretaker_job_runs_total{job=\"tick\",status=\"succeeded\"}", in: text) ?? 0 >= 2
            })
        let file = try String(contentsOfFile: textfile, encoding: .utf8)
        #expect(Self.value("caretaker_job_healthy{job=\"tick\"}", in: file) == 1)
        #expect(try Promtool.checkMetrics(file: textfile).status == 0)
        let mode = try FileManager.default.attributesOfItem(atPath: textfile)[.posixPermissions] as? Int
        #expect(mode == 0o644, "node_exporter must be able to read it whatever caretaker's umask")
        // No temporary file is left beside it.
        let folder = (textfile as NSString).deletingLastPathComponent
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".prom.tmp") }.isEmpty)
        #expect(
            Self.value("caretaker_job_healthy{job=\"tick\"}", in: try HTTPGet.fetch(port: port, path: "/metrics").body)
                == 1)
        #expect(
            try db.count(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'caretaker/monitor'"
            ) == 0)
        await DaemonTests.stop(daemon)
    }

    @Test(
        "a job added long after migrate is healthy until its grace since the daemon saw it; enabled again by a reload, anew"
    )
    func newJobGraceFromTheDaemon() async throws {
        let db = try TestDatabase()
        try db.connection.query("UPDATE caretaker.schema_migrations SET applied_at = now() - interval '30 days'")
        // tick's runs make the monitor read the history every second; yearly has no slot for weeks, so no row.
        func config(yearlyEnabled: Bool) -> String {
            "[metrics]\nlisten = \"127.0.0.1:0\"\n\n" + Self.builtInsOff
                + DaemonTests.sqlJob("tick", sql: "SELECT 1", extra: "stale_after = \"10m\"\n")
                + DaemonTests.sqlJob(
                    "yearly", schedule: "0 0 1 1 *", sql: "SELECT 1",
                    extra: "stale_after = \"15s\"\nenabled = \(yearlyEnabled)\n")
        }
        let path = try db.writeConfiguration(config(yearlyEnabled: true))
        let daemon = try await DaemonTests.started(path)
        let port = try await Self.metricsPort(daemon)
        func yearlyHealthy() throws -> Double? {
            Self.value(
                "caretaker_job_healthy{job=\"yearly\"}", in: try HTTPGet.fetch(port: port, path: "/metrics").body)
        }
        #expect(try await eventually(timeout: .seconds(10)) { try yearlyHealthy() != nil }, "log:\n\(daemon.log)")
        #expect(try yearlyHealthy() == 1, "not run yet, though the schema was migrated 30 days ago")
        #expect(try await eventually(timeout: .seconds(60)) { try yearlyHealthy() == 0 }, "15 s after the start")

        try db.configurationText(config(yearlyEnabled: false)).write(toFile: path, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(try await eventually(timeout: .seconds(20)) { try yearlyHealthy() == nil }, "disabled: no series")
        try db.configurationText(config(yearlyEnabled: true)).write(toFile: path, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(try await eventually(timeout: .seconds(20)) { try yearlyHealthy() != nil })
        #expect(try yearlyHealthy() == 1, "enabled again: its grace starts at the reload")
        await DaemonTests.stop(daemon)
    }

    @Test(
        "skipped slots are counted by reason: the missed-while-down row by its missed_slots, a slow job's skips one each"
    )
    func skippedSlotsCounted() async throws {
        let db = try TestDatabase()
        let textfile = NSTemporaryDirectory() + "caretaker-\(db.name).prom"
        defer { try? FileManager.default.removeItem(atPath: textfile) }
        // nightly last ran three days ago: the daemon's start records the two midnights nobody ran in one row.
        try db.connection.query(
            """
            INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, finished_at, host, pid)
            VALUES ('nightly', 'schedule', 'succeeded',
                    date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '3 days',
                    now() - interval '3 days', now() - interval '3 days', 'old-host', 1)
            """)
        // A slow job on a fast schedule skips slots: its previous run is still going.
        let path = try db.writeConfiguration(
            "[metrics]\ntextfile = \"\(textfile)\"\n\n" + Self.builtInsOff
                + DaemonTests.sqlJob("slow", sql: "SELECT pg_sleep(2.5)")
                + DaemonTests.sqlJob("nightly", schedule: "0 0 * * *", sql: "SELECT 1"))
        let daemon = try await DaemonTests.started(path)
        #expect(
            try await eventually(timeout: .seconds(20)) {
                let text = (try? String(contentsOfFile: textfile, encoding: .utf8)) ?? ""
                return Self.value(
                    "caretaker_job_skipped_slots_total{job=\"nightly\",reason=\"missed_while_no_worker_ran\"}", in: text
                ) == 2
                    && Self.value(
                        "caretaker_job_skipped_slots_total{job=\"slow\",reason=\"previous_run_still_going\"}", in: text)
                        ?? 0 >= 1
            }, "\((try? String(contentsOfFile: textfile, encoding: .utf8)) ?? "")\n\(daemon.log)")
        #expect(
            try db.count(
                "SELECT (stats->>'missed_slots')::int FROM caretaker.job_runs WHERE job = 'nightly' AND status = 'skipped'"
            ) == 2)
        #expect(try Promtool.checkMetrics(file: textfile).status == 0)
        await DaemonTests.stop(daemon, within: .seconds(15))
    }

    @Test("once pings start and success, start and fail; a dead ping URL neither fails nor delays the run")
    func oncePings() throws {
        let db = try TestDatabase()
        let pings = try TestHTTPServer.start()
        let path = try db.writeConfiguration(
            Self.builtInsOff
                + DaemonTests.sqlJob("good", sql: "SELECT 1", extra: "ping_url = \"\(pings.url)/good/\"\n")
                + DaemonTests.sqlJob("bad", sql: "SELECT 1/0", extra: "ping_url = \"\(pings.url)/bad\"\n"))
        #expect(try Caretaker.run(["once", "good", "--config", path]).status == 0)
        #expect(pings.paths == ["/good/start", "/good"])
        #expect(try Caretaker.run(["once", "bad", "--config", path]).status == 1)
        #expect(pings.paths == ["/good/start", "/good", "/bad/start", "/bad/fail"])
        #expect(try Caretaker.run(["once", "good", "--dry-run", "--config", path]).status == 0)
        #expect(pings.paths.count == 4, "a dry run does not ping")

        // Nobody listens on this port: the run still succeeds, the failure is logged without the URL's path.
        let dead = try TemporaryPostgres.freePort()
        let deadPath = try db.writeConfiguration(
            Self.builtInsOff
                + DaemonTests.sqlJob(
                    "good", sql: "SELECT 1", extra: "ping_url = \"http://127.0.0.1:\(dead)/secret-uuid\"\n"))
        let result = try Caretaker.run(["once", "good", "--config", deadPath])
        #expect(result.status == 0)
        #expect(result.stderr.contains("msg=\"ping failed\""), "\(result.stderr)")
        #expect(!result.stderr.contains("secret-uuid"))
    }

    @Test("a ping endpoint that hangs neither delays nor fails the daemon's runs")
    func hangingPingEndpoint() async throws {
        let db = try TestDatabase()
        let hanging = try TestHTTPServer.start(delay: .seconds(60))
        let path = try db.writeConfiguration(
            Self.builtInsOff
                + DaemonTests.sqlJob("tick", sql: "SELECT 1", extra: "ping_url = \"\(hanging.url)/tick\"\n"))
        let daemon = try await DaemonTests.started(path)
        // The first ping hangs past its 5 s timeout; meanwhile runs keep coming, each on its slot.
        _ = hanging.waitForPaths { !$0.isEmpty }
        #expect(
            try await eventually(timeout: .seconds(20)) {
                try db.count("SELECT count(*) FROM caretaker.job_runs WHERE job = 'tick' AND status = 'succeeded'") >= 4
            })
        #expect(hanging.paths.count < 4, "pings queue one after another (\(hanging.paths))")
        // A run that waited for the ping would last its 5 s timeout and fail or hold the
        // next slots; a slot skipped behind a run that a loaded machine slowed is not that.
        let held = try db.connection.query(
            """
            SELECT id, status, slot, finished_at - started_at AS took, error FROM caretaker.job_runs
            WHERE job = 'tick' AND (status NOT IN ('succeeded', 'skipped') OR finished_at - started_at >= interval '5 seconds')
            """
        ).rows
        #expect(held.isEmpty, "\(held.map(\.values))")
        #expect(
            try await eventually(timeout: .seconds(20)) {
                !daemon.lines(containing: "msg=\"ping failed\"", "job=tick").isEmpty
            })
        // Two pings a second, one answered (timed out) per 5 s: the queue fills up and later pings are dropped.
        #expect(
            try await eventually(timeout: .seconds(30)) {
                !daemon.lines(containing: "msg=\"ping dropped: earlier pings are still waiting for an answer\"").isEmpty
            })
        // Shutdown waits for queued pings a little longer than one ping's timeout, no more.
        await DaemonTests.stop(daemon, within: .seconds(20))
    }

    @Test(
        "a metrics address already in use stops nothing: jobs run, the error is logged once, the bind is retried"
    )
    func listenAddressTaken() async throws {
        let db = try TestDatabase()
        var taken: TestHTTPServer? = try TestHTTPServer.start()
        let port = try #require(taken?.port)
        let path = try db.writeConfiguration(
            "[metrics]\nlisten = \"127.0.0.1:\(port)\"\n\n" + Self.builtInsOff
                + DaemonTests.sqlJob("tick", sql: "SELECT 1"))
        let daemon = try await DaemonTests.started(path)
        #expect(
            try await eventually(timeout: .seconds(20)) {
                try db.count("SELECT count(*) FROM caretaker.job_runs WHERE job = 'tick' AND status = 'succeeded'") >= 2
            }, "log:\n\(daemon.log)")
        #expect(
            daemon.lines(containing: "cannot listen on 127.0.0.1:\(port) ([metrics] listen): Address already in use")
                .count == 1, "\(daemon.log)")
        // The port comes free: within the retry interval the same process serves it.
        taken = nil
        #expect(
            try await eventually(timeout: .seconds(40)) {
                (try? HTTPGet.fetch(port: port, path: "/metrics").body.contains("caretaker_build_info")) == true
            }, "log:\n\(daemon.log)")
        #expect(!daemon.lines(containing: "msg=\"metrics listening\"").isEmpty)
        #expect(
            daemon.lines(containing: "cannot listen on 127.0.0.1:\(port)").count == 1, "logged once, not per retry")
        await DaemonTests.stop(daemon, within: .seconds(20))
    }

    @Test("an invalid metrics address is a configuration error: exit 78 at start and from check --config-only")
    func listenAddressInvalid() async throws {
        let db = try TestDatabase()
        let path = try db.writeConfiguration("[metrics]\nlisten = \"localhost:9187\"\n\n" + Self.builtInsOff)
        let daemon = try DaemonProcess(config: path)
        #expect(await daemon.waitForExit(timeout: .seconds(10)) == 78)
        #expect(daemon.log.contains("metrics.listen"), "\(daemon.log)")
        let check = try Caretaker.run(["check", "--config-only", "--config", path])
        #expect(check.status == 78, "\(check.stderr)")
        #expect(check.stderr.contains("metrics.listen"), "\(check.stderr)")
    }

    @Test("the example alerting rules in docs/monitoring.md pass promtool check rules")
    func exampleRules() throws {
        let readme = try String(
            contentsOf: SystemdUnitTests.repository.appendingPathComponent("docs/monitoring.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "```yaml\ngroups:\n"))
        let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
        let rules = String(readme[readme.index(start.lowerBound, offsetBy: 8)..<end.lowerBound])
        for name in ["CaretakerJobFailed", "CaretakerJobStale", "CaretakerSlotsSkipped"] {
            #expect(rules.contains(name))
        }
        let file = NSTemporaryDirectory() + "caretaker-rules-\(UUID().uuidString).yml"
        try rules.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let checked = try Promtool.checkRules(file: file)
        #expect(checked.status == 0, "\(checked.output)")
        #expect(checked.output.contains("SUCCESS: 3 rules found"), "\(checked.output)")
    }
}
