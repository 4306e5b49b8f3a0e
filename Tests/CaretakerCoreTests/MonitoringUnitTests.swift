import Foundation
import Testing

@testable import CaretakerConfig
@testable import CaretakerCore
@testable import CaretakerDatabase
@testable import CaretakerJobs
@testable import CaretakerMonitoring

/// The decisions and formats of `Monitoring/`, apart from the network and the database.
@Suite struct MonitoringUnitTests {
    // MARK: Alert policy

    @Test(
        "alert policy: one alert on becoming unhealthy, nothing while it stays, one recovery, nothing on first healthy sight"
    )
    func alertPolicy() {
        let bad = AlertPolicy.Condition.unhealthy(cause: "last run failed: boom")
        #expect(AlertPolicy.decide(stored: nil, now: .healthy) == .remember)
        #expect(AlertPolicy.decide(stored: nil, now: bad) == .alert(cause: "last run failed: boom"))
        #expect(AlertPolicy.decide(stored: .healthy, now: bad) == .alert(cause: "last run failed: boom"))
        #expect(AlertPolicy.decide(stored: .unhealthy, now: bad) == .nothing)
        #expect(
            AlertPolicy.decide(stored: .unhealthy, now: .unhealthy(cause: "stale")) == .nothing,
            "a new cause is the same incident")
        #expect(AlertPolicy.decide(stored: .unhealthy, now: .healthy) == .recover)
        #expect(AlertPolicy.decide(stored: .healthy, now: .healthy) == .nothing)
        #expect(AlertPolicy.stored(after: .nothing) == nil)
        #expect(AlertPolicy.stored(after: .remember) == .healthy)
        #expect(AlertPolicy.stored(after: .recover) == .healthy)
        #expect(AlertPolicy.stored(after: .alert(cause: "x")) == .unhealthy)
    }

    @Test("a job's condition is check's rule, before its first finished run too")
    func condition() {
        func job(healthy: Bool, lastRun: Double?) -> HistoryReadings.Job {
            HistoryReadings.Job(
                name: "j",
                health: JobHealth(
                    job: "j", healthy: healthy, reason: healthy ? "ok" : "last run failed: x",
                    lastStatus: nil, lastSuccessAt: nil),
                lastSuccess: nil, lastRun: lastRun)
        }
        #expect(AlertPolicy.condition(of: job(healthy: true, lastRun: 1)) == .healthy)
        #expect(AlertPolicy.condition(of: job(healthy: false, lastRun: 1)) == .unhealthy(cause: "last run failed: x"))
        // Past its grace without a finished run (a first run that hangs): an incident.
        #expect(AlertPolicy.condition(of: job(healthy: false, lastRun: nil)) == .unhealthy(cause: "last run failed: x"))
        #expect(AlertPolicy.condition(of: job(healthy: true, lastRun: nil)) == .healthy)
        #expect(AlertPolicy.decide(stored: nil, now: nil) == .nothing)
        #expect(AlertPolicy.decide(stored: .unhealthy, now: nil) == .nothing)
    }

    @Test("alert and recovery texts name job, cause, last error and the history command")
    func alertText() {
        // 2026-11-25 15:00:00.75 UTC: the mail shows whole seconds.
        let run = RunRecord(
            id: 42, job: "broken", trigger: .schedule, status: .failed, slot: nil, attempt: 1,
            startedAt: Date(timeIntervalSince1970: 1_795_618_800.75), finishedAt: nil, dryRun: false, counters: [],
            stats: "{}", error: "division by zero", host: "pi4", pid: 811, backendPID: nil)
        let alert = AlertMessage.alert(job: "broken", cause: "last run failed: division by zero", lastRun: run)
        #expect(alert.subject == "[caretaker] broken is unhealthy")
        #expect(alert.body.contains("Cause: last run failed: division by zero"))
        #expect(alert.body.contains("Last run: #42 failed, started 2026-11-25 15:00:00 UTC on pi4 (pid 811)"))
        #expect(alert.body.contains("Last error: division by zero"))
        #expect(alert.body.contains("caretaker history --job broken"))
        #expect(AlertMessage.alert(job: "new", cause: "stale", lastRun: nil).body.contains("Last run: none recorded"))
        let recovery = AlertMessage.recovery(job: "broken", unhealthySince: "2026-11-25 15:00:00 UTC")
        #expect(recovery.subject == "[caretaker] broken recovered")
        #expect(recovery.body.contains("unhealthy since 2026-11-25 15:00:00 UTC"))
    }

    // MARK: Listener

    @Test(
        "listen addresses: IPv4 and bracketed IPv6 literals with a port; names and junk are refused",
        arguments: [
            ("127.0.0.1:9187", "127.0.0.1:9187"), ("0.0.0.0:0", "0.0.0.0:0"), ("[::1]:9187", "[::1]:9187"),
            ("localhost:9187", nil), ("127.0.0.1", nil), ("127.0.0.1:99999", nil), (":9187", nil),
            ("[::1]9187", nil), ("::1:9187", nil), ("127.0.0.1:+80", nil), ("127.0.0.1:", nil),
        ] as [(String, String?)])
    func listenAddress(text: String, expected: String?) {
        #expect(ListenAddress(metrics: text)?.description == expected)
    }

    @Test(
        "the responder: 200 with the text format for GET and HEAD /metrics, 404 elsewhere, 405 for other methods, 400 for junk"
    )
    func responses() {
        func respond(_ head: String) -> String {
            String(decoding: MetricsHTTPServer.response(to: Array(head.utf8)) { Array("up 1\n".utf8) }, as: UTF8.self)
        }
        let ok = respond("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(ok.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(ok.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"))
        #expect(ok.contains("Content-Length: 5\r\n"))
        #expect(ok.hasSuffix("\r\n\r\nup 1\n"))
        #expect(respond("GET /metrics?name[]=x HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 200"))
        let head = respond("HEAD /metrics HTTP/1.1\r\n\r\n")
        #expect(head.hasPrefix("HTTP/1.1 200") && head.hasSuffix("\r\n\r\n"))
        #expect(respond("GET / HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 404"))
        #expect(respond("GET /metrics/x HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 404"))
        let post = respond("POST /metrics HTTP/1.1\r\n\r\n")
        #expect(post.hasPrefix("HTTP/1.1 405") && post.contains("Allow: GET, HEAD\r\n"))
        #expect(respond("garbage\r\n\r\n").hasPrefix("HTTP/1.1 400"))
    }

    @Test("a silent client is dropped after the request timeout; the next one is served")
    func silentClient() throws {
        let server = try MetricsHTTPServer(ListenAddress(metrics: "127.0.0.1:0")!)
        let silent = try Self.connect(port: server.port)
        defer { close(silent) }
        let started = ContinuousClock.now
        server.serveOne { Array("up 1\n".utf8) }
        #expect(ContinuousClock.now - started >= .milliseconds(Int(MetricsHTTPServer.requestTimeoutMilliseconds) - 100))
        let client = try Self.connect(port: server.port)
        defer { close(client) }
        let request = Array("GET /metrics HTTP/1.1\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(client, $0.baseAddress, $0.count, 0) }
        server.serveOne { Array("up 1\n".utf8) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(client, &buffer, buffer.count, 0)
        #expect(String(decoding: buffer[..<max(0, count)], as: UTF8.self).hasSuffix("up 1\n"))
    }

    @Test("a taken port is a clear error naming the address")
    func portTaken() throws {
        let first = try MetricsHTTPServer(ListenAddress(metrics: "127.0.0.1:0")!)
        #expect(throws: MonitoringError.self) {
            try MetricsHTTPServer(ListenAddress(metrics: "127.0.0.1:\(first.port)")!)
        }
        do {
            _ = try MetricsHTTPServer(ListenAddress(metrics: "127.0.0.1:\(first.port)")!)
        } catch {
            #expect(
                error.description
                    == "cannot listen on 127.0.0.1:\(first.port) ([metrics] listen): Address already in use")
        }
    }

    /// The loopback interface has an IPv6 address (`::1`) on this machine.
    static let hasIPv6Loopback =
        (try? String(contentsOfFile: "/proc/net/if_inet6", encoding: .utf8))?
        .contains("00000000000000000000000000000001") ?? false

    @Test(
        "an IPv6 address binds: the kernel's port for :0, the address in use for a second server",
        .enabled(if: hasIPv6Loopback))
    func ipv6Listen() throws {
        let first = try MetricsHTTPServer(ListenAddress(metrics: "[::1]:0")!)
        #expect(first.port > 0)
        #expect(first.boundAddress == "[::1]:\(first.port)")
        do {
            _ = try MetricsHTTPServer(ListenAddress(metrics: "[::1]:\(first.port)")!)
            Issue.record("a second server bound [::1]:\(first.port)")
        } catch {
            #expect(
                error.description == "cannot listen on [::1]:\(first.port) ([metrics] listen): Address already in use")
        }
    }

    static func connect(port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(result == 0)
        return fd
    }

    // MARK: Metrics, pings, textfile

    @Test("the exposition: every series with HELP and TYPE, counters from zero, gauges of jobs gone are dropped")
    func exposition() {
        let metrics = CaretakerMetrics(version: "1.2.3")
        metrics.declare(jobs: ["a", "b"])
        metrics.recordRun(
            job: "a", status: .failed, stats: JobStats([("rows", 3), ("none", 0)]),
            declared: [.count("rows"), .count("none")], duration: 0.2)
        metrics.recordSkipped([.init(job: "a", reason: "missed while no worker ran", slots: 7)])
        func job(_ name: String, healthy: Bool) -> HistoryReadings.Job {
            .init(
                name: name,
                health: JobHealth(job: name, healthy: healthy, reason: "", lastStatus: nil, lastSuccessAt: nil),
                lastSuccess: healthy ? 1_700_000_000 : nil, lastRun: 1_700_000_100)
        }
        metrics.update(HistoryReadings(jobs: [job("a", healthy: false), job("b", healthy: true)]))
        var text = String(decoding: metrics.exposition(), as: UTF8.self)
        for line in [
            "caretaker_build_info{version=\"1.2.3\"} 1.0", "caretaker_database_up 1.0",
            "caretaker_job_runs_total{job=\"a\",status=\"failed\"} 1",
            "caretaker_job_runs_total{job=\"b\",status=\"failed\"} 0",
            "caretaker_job_stat_total{job=\"a\",stat=\"rows\"} 3",
            "caretaker_job_skipped_slots_total{job=\"a\",reason=\"missed_while_no_worker_ran\"} 7",
            "caretaker_job_healthy{job=\"a\"} 0.0", "caretaker_job_healthy{job=\"b\"} 1.0",
            "caretaker_job_last_success_timestamp_seconds{job=\"b\"} 1700000000.0",
            "caretaker_job_duration_seconds_bucket{job=\"a\",le=\"0.25\"} 1",
            "caretaker_job_duration_seconds_count{job=\"a\"} 1",
            "# TYPE caretaker_job_duration_seconds histogram", "# TYPE caretaker_job_runs_total counter",
            "# HELP caretaker_job_healthy 1 when the job is healthy by the rule of `caretaker check`, else 0.",
        ] {
            #expect(text.contains(line + "\n"), "\(line)\n---\n\(text)")
        }
        #expect(!text.contains("stat=\"none\""), "a counter that stayed zero makes no series")
        #expect(
            !text.contains("caretaker_job_last_success_timestamp_seconds{job=\"a\"}"), "never succeeded: no timestamp")
        metrics.update(HistoryReadings(jobs: [job("b", healthy: true)]))
        metrics.databaseUnavailable()
        text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(!text.contains("caretaker_job_healthy{job=\"a\"}"))
        #expect(text.contains("caretaker_database_up 0.0\n"))
    }

    @Test(
        "skip reasons become short labels",
        arguments: [
            (JobRunner.SkipReason.missedWhileDown.text, "missed_while_no_worker_ran"),
            (JobRunner.SkipReason.previousRunStillGoing.text, "previous_run_still_going"),
            (JobRunner.SkipReason.noFreePlace.text, "no_free_place"), ("", "other"),
        ])
    func skipLabels(text: String, label: String) {
        #expect(CaretakerMetrics.skipReasonLabel(text) == label)
    }

    @Test("ping URLs: /start, bare, /fail, a trailing slash ignored; logs show the host only")
    func pingURLs() {
        #expect(Pinger.url("https://hc-ping.com/abc", .start) == "https://hc-ping.com/abc/start")
        #expect(Pinger.url("https://hc-ping.com/abc/", .success) == "https://hc-ping.com/abc")
        #expect(Pinger.url("https://hc-ping.com/abc", .fail) == "https://hc-ping.com/abc/fail")
        #expect(Pinger.redacted("https://user:pw@hc-ping.com/uuid?x=1") == "https://hc-ping.com/…")
        #expect(Pinger.redacted("nonsense") == "(invalid URL)")
    }

    @Test("the textfile is replaced whole; an unwritable place is an error naming the file")
    func textfile() throws {
        let directory = NSTemporaryDirectory() + "caretaker-textfile-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/caretaker.prom"
        try TextfileWriter.write(Array("a 1\n".utf8), to: path)
        try TextfileWriter.write(Array("b 2\n".utf8), to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "b 2\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["caretaker.prom"])
        #expect(throws: MonitoringError.self) {
            try TextfileWriter.write([], to: directory + "/missing/caretaker.prom")
        }
    }

    @Test("a job is watched from the start, or from the reload that adds or enables it; disabled, it starts anew")
    func jobWatch() throws {
        func jobs(_ enabled: [String: Bool]) throws -> Configuration {
            try ConfigurationLoader.parse(
                enabled.map { "[jobs.\($0.key)]\nschedule = \"@hourly\"\nsql = \"SELECT 1\"\nenabled = \($0.value)\n" }
                    .joined(), file: "jobs.toml")
        }
        let start = ContinuousClock.now
        var watch = JobWatch(try jobs(["old": true, "off": false]), now: start)
        #expect(watch.watchedFor(at: start + .seconds(10))["old"] == .seconds(10))
        #expect(watch.watchedFor(at: start)["off"] == nil)
        watch.reload(try jobs(["old": true, "off": true, "new": true]), now: start + .seconds(60))
        let later = watch.watchedFor(at: start + .seconds(100))
        #expect(later["old"] == .seconds(100), "kept across the reload")
        #expect(
            later["off"] == .seconds(40) && later["new"] == .seconds(40), "from the reload that enabled or added it")
        watch.reload(try jobs(["old": false, "off": true]), now: start + .seconds(200))
        watch.reload(try jobs(["old": true, "off": true]), now: start + .seconds(300))
        let again = watch.watchedFor(at: start + .seconds(300))
        #expect(again["old"] == .zero && again["new"] == nil && again["off"] == .seconds(240), "\(again)")
    }

    @Test("ages for people")
    func ages() {
        #expect(StatusReport.age(0.4) == "0s")
        #expect(StatusReport.age(59.9) == "59s")
        #expect(StatusReport.age(60) == "1m")
        #expect(StatusReport.age(3600) == "1h")
        #expect(StatusReport.age(3600 + 12 * 60 + 5) == "1h12m")
        #expect(StatusReport.age(86400 * 5 + 10) == "5d")
        #expect(StatusReport.age(-3) == "0s")
    }

    // MARK: Configuration

    @Test("[metrics], [alerts] and ping_url: defaults off, values read")
    func configuration() throws {
        let defaults = try ConfigurationLoader.parse("", file: "jobs.toml")
        #expect(defaults.metrics == MetricsOptions())
        #expect(defaults.metrics.listen.isEmpty && defaults.metrics.textfile.isEmpty && defaults.alerts.mailTo.isEmpty)
        #expect(defaults.jobs.allSatisfy { $0.pingURL.isEmpty })
        let set = try ConfigurationLoader.parse(
            """
            [metrics]
            listen = "[::1]:9187"
            textfile = "/var/lib/prometheus/node-exporter/caretaker.prom"
            [alerts]
            mail_to = "ops@example.org"
            [jobs.prune]
            ping_url = "https://hc-ping.com/x"
            """, file: "jobs.toml")
        #expect(set.metrics.listen == "[::1]:9187")
        #expect(set.metrics.textfile == "/var/lib/prometheus/node-exporter/caretaker.prom")
        #expect(set.alerts.mailTo == "ops@example.org")
        #expect(set.job(named: "prune")?.pingURL == "https://hc-ping.com/x")
    }

    @Test(
        "bad monitoring values are configuration errors naming line and key",
        arguments: [
            ("[metrics]\nlisten = \"localhost:9187\"\n", "metrics.listen", "must be IP:PORT"),
            ("[metrics]\ntextfile = \"caretaker.prom\"\n", "metrics.textfile", "must be an absolute file path"),
            ("[metrics]\nport = 9187\n", "metrics.port", "unknown key"),
            ("[alerts]\nmail_to = \"ops@example.org, dev@example.org\"\n", "alerts.mail_to", "is not one mail address"),
            (
                "[jobs.prune]\nping_url = \"hc-ping.com/x\"\n", "jobs.prune.ping_url",
                "must start with http:// or https://"
            ),
        ])
    func badValues(text: String, key: String, message: String) {
        do {
            _ = try ConfigurationLoader.parse(text, file: "jobs.toml")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.key == key, "\(error)")
            #expect(error.line == 2, "\(error)")
            #expect(error.message.contains(message), "\(error)")
        }
    }
}
