import Foundation
import Testing

@testable import CaretakerConfig
@testable import CaretakerCore
@testable import CaretakerJobs

@Suite struct ConfigurationTests {
    func parse(_ text: String, lowFootprint: Bool? = nil) throws -> Configuration {
        try ConfigurationLoader.parse(text, file: "jobs.toml", lowFootprint: lowFootprint)
    }

    func error(_ text: String) -> ConfigurationError? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error as? ConfigurationError
        }
    }

    @Test("an empty file gives the documented defaults")
    func defaults() throws {
        let configuration = try parse("")
        #expect(configuration.database.appSchema == "public")
        #expect(configuration.database.connectTimeout == .seconds(10))
        #expect(configuration.worker.maxConcurrentJobs == 2)
        #expect(configuration.worker.shutdownGrace == .seconds(20))
        #expect(configuration.worker.batchPause == .zero)
        #expect(
            configuration.jobNames == [
                "expire-content", "logout-inactive", "send-temp-passwords", "leader-succession", "prune",
            ])
        let expire = try #require(configuration.job(named: "expire-content"))
        #expect(expire.schedule.text == "*/5 * * * *")
        #expect(expire.statementTimeout == .seconds(30))
        #expect(expire.lockTimeout == .seconds(2))
        #expect(expire.maxRuntime == .seconds(300))
        #expect(expire.batchSize == 1000)
        #expect(expire.catchUp && expire.maxRetries == 3 && expire.enabled)
        guard let settings = expire.settings(as: ExpireContentSettings.self) else {
            Issue.record("wrong settings")
            return
        }
        #expect(settings.minLifetime == .seconds(86400) && settings.maxLifetime == .seconds(172_800))
        #expect(settings.postFullPopularity == 100 && settings.packFullPopularity == 100)
        guard let mail = configuration.job(named: "send-temp-passwords")?.settings(as: SendTempPasswordsSettings.self)
        else {
            Issue.record("wrong settings")
            return
        }
        #expect(mail.bcryptCost == 12 && mail.maxPerHour == 3 && mail.tempPasswordLength == 16 && mail.maxAttempts == 5)
        #expect(configuration.job(named: "prune")?.schedule.text == "@daily")
    }

    @Test("the annotated jobs.toml at the repository root is valid and states the defaults")
    func annotatedFile() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("jobs.toml").path
        let annotated = try ConfigurationLoader.load(path: path)
        let defaults = try parse("")
        #expect(annotated.dashboard.listen == defaults.dashboard.listen && annotated.dashboard.username.isEmpty)
        // Its [metrics] comment says no listener by default: the value agrees.
        #expect(annotated.metrics.listen == defaults.metrics.listen && annotated.metrics.listen.isEmpty)
        #expect(annotated.metrics.textfile.isEmpty && annotated.alerts.mailTo.isEmpty)
        for (left, right) in zip(annotated.jobs, defaults.jobs) {
            #expect(left.name == right.name)
            #expect(left.schedule == right.schedule)
            #expect(left.batchSize == right.batchSize)
            #expect(left.maxWALRate == right.maxWALRate && left.maxCommitSlowdown == right.maxCommitSlowdown)
            #expect(left.checkpointSpacing == right.checkpointSpacing, "\(left.name)")
            #expect(left.maxReplicaLag == right.maxReplicaLag && left.synchronousCommit == right.synchronousCommit)
        }
        if let annotatedExpiry = annotated.job(named: "expire-content")?.settings(as: ExpireContentSettings.self),
            let defaultExpiry = defaults.job(named: "expire-content")?.settings(as: ExpireContentSettings.self)
        {
            #expect(annotatedExpiry.compressWAL == defaultExpiry.compressWAL)
            #expect(annotatedExpiry.pruneSweptPages == defaultExpiry.pruneSweptPages)
        } else {
            Issue.record("expire-content has no settings of its own")
        }
        // The Pi's drop-in runs the packaged file with --low-footprint: the mode's own
        // defaults must not be overridden by values the file spells out.
        let pi = try ConfigurationLoader.load(path: path, lowFootprint: true)
        let piDefaults = try parse("", lowFootprint: true)
        #expect(pi.worker.batchPause == piDefaults.worker.batchPause)
        for (left, right) in zip(pi.jobs, piDefaults.jobs) {
            #expect(left.batchSize == right.batchSize && left.batchPause == right.batchPause, "\(left.name)")
            #expect(left.maxWALRate == right.maxWALRate, "\(left.name)")
            #expect(left.waitForVacuum == right.waitForVacuum, "\(left.name)")
        }
        guard let expiry = pi.job(named: "expire-content")?.settings(as: ExpireContentSettings.self),
            let mail = pi.job(named: "send-temp-passwords")?.settings(as: SendTempPasswordsSettings.self)
        else {
            Issue.record("wrong settings")
            return
        }
        #expect(!expiry.compressWAL && mail.bcryptCost == 10)
    }

    @Test("low-footprint mode changes the defaults it should, and the flag wins over the file")
    func lowFootprint() throws {
        let configuration = try parse("[worker]\nmax_concurrent_jobs = 4\n", lowFootprint: true)
        #expect(configuration.worker.lowFootprint)
        #expect(configuration.worker.maxConcurrentJobs == 1)
        #expect(configuration.worker.batchPause == .milliseconds(100))
        #expect(configuration.job(named: "expire-content")?.batchSize == 200)
        #expect(configuration.job(named: "expire-content")?.maxWALRate == 16 << 20)
        // Only the backlog job waits for a running vacuum, and only in this mode.
        #expect(configuration.job(named: "expire-content")?.waitForVacuum == true)
        #expect(configuration.job(named: "prune")?.waitForVacuum == false)
        #expect(try parse("").job(named: "expire-content")?.waitForVacuum == false)
        guard let mail = configuration.job(named: "send-temp-passwords")?.settings(as: SendTempPasswordsSettings.self)
        else {
            Issue.record("wrong settings")
            return
        }
        #expect(mail.bcryptCost == 10)
        guard let expiry = configuration.job(named: "expire-content")?.settings(as: ExpireContentSettings.self) else {
            Issue.record("wrong settings")
            return
        }
        #expect(!expiry.compressWAL, "no compressed full page images by default in low-footprint mode")
        let explicit = try parse(
            "[worker]\nlow_footprint = true\nbatch_pause = \"5ms\"\n[jobs.prune]\nbatch_size = 50\nwait_for_vacuum = true\n"
                + "[jobs.expire-content]\ncompress_wal = true\nprune_swept_pages = true\nwait_for_vacuum = false\n")
        #expect(explicit.worker.batchPause == .milliseconds(5))
        #expect(explicit.job(named: "expire-content")?.waitForVacuum == false)
        #expect(explicit.job(named: "prune")?.waitForVacuum == true)
        #expect(explicit.job(named: "prune")?.batchSize == 50)
        guard let compressing = explicit.job(named: "expire-content")?.settings(as: ExpireContentSettings.self) else {
            Issue.record("wrong settings")
            return
        }
        #expect(compressing.compressWAL && compressing.pruneSweptPages)
    }

    @Test("expire-content spares the app by default: a WAL budget, a replica lag limit, no wait for the WAL flush")
    func sparingTheApp() throws {
        let defaults = try parse("")
        let expire = try #require(defaults.job(named: "expire-content"))
        #expect(expire.maxWALRate == 384 << 20)
        #expect(expire.maxCommitSlowdown == 100)
        #expect(expire.maxReplicaLag == .seconds(5))
        #expect(expire.checkpointSpacing == .scaled)
        #expect(expire.maxBusyShare == 80)
        #expect(!expire.synchronousCommit)
        guard let expiry = expire.settings(as: ExpireContentSettings.self) else {
            Issue.record("wrong settings")
            return
        }
        // Compressed full page images, where the role may set wal_compression (off in low-footprint mode).
        #expect(expiry.compressWAL && !expiry.pruneSweptPages)
        // Jobs whose lost commit would not be redone harmlessly keep durable commits.
        let mail = try #require(defaults.job(named: "send-temp-passwords"))
        #expect(mail.synchronousCommit && mail.maxWALRate == 384 << 20 && mail.maxReplicaLag == .seconds(5))
        // A rest after each batch would delay the mails: only the backlog job has one by default.
        #expect(mail.maxBusyShare == nil && defaults.job(named: "prune")?.maxBusyShare == nil)
        let tuned = try parse(
            """
            [jobs.expire-content]
            max_wal_rate = "512kB/s"
            max_replica_lag = "1500ms"
            max_commit_slowdown = "200%"
            checkpoint_spacing = "3500ms"
            synchronous_commit = true
            max_busy_share = ""
            [jobs.prune]
            max_wal_rate = ""
            max_replica_lag = ""
            max_commit_slowdown = ""
            checkpoint_spacing = ""
            max_busy_share = "100%"
            [jobs.logout-inactive]
            max_busy_share = "1%"
            """)
        let tunedExpire = try #require(tuned.job(named: "expire-content"))
        #expect(tunedExpire.maxWALRate == 512 * 1024 && tunedExpire.maxReplicaLag == .milliseconds(1500))
        #expect(tunedExpire.maxCommitSlowdown == 200)
        #expect(tuned.job(named: "prune")?.maxCommitSlowdown == nil)
        #expect(tunedExpire.synchronousCommit)
        let off = try #require(tuned.job(named: "prune"))
        #expect(off.maxWALRate == nil && off.maxReplicaLag == nil && off.checkpointSpacing == nil)
        #expect(tunedExpire.checkpointSpacing == .every(.milliseconds(3500)))
        #expect(tunedExpire.maxBusyShare == nil && off.maxBusyShare == 100)
        #expect(tuned.job(named: "logout-inactive")?.maxBusyShare == 1)
        #expect(
            try parse("[jobs.expire-content]\ncheckpoint_spacing = \"auto\"\n").job(named: "expire-content")?
                .checkpointSpacing == .scaled)
        for bad in ["0s", "soon", "Auto"] {
            #expect(throws: ConfigurationError.self, "\(bad)") {
                try parse("[jobs.expire-content]\ncheckpoint_spacing = \"\(bad)\"\n")
            }
        }
    }

    @Test("a busy share outside 1…100 % is refused with the range it takes", arguments: ["0%", "101%", "55"])
    func badBusyShare(text: String) throws {
        let found = try #require(error("[jobs.expire-content]\nmax_busy_share = \"\(text)\"\n"))
        #expect(found.description.contains("use a whole number from 1 to 100 and"), "\(found)")
    }

    @Test(
        "byte rates: whole numbers of B, kB, MB or GB per second, nothing else",
        arguments: [("1B/s", Int64(1)), ("512kB/s", 524_288), ("64MB/s", 67_108_864), ("2GB/s", 2_147_483_648)])
    func rates(text: String, bytes: Int64) {
        #expect(ByteRateText.parse(text) == bytes)
        #expect(ByteRateText.format(bytes) == text)
    }

    @Test(
        "a rate that is not one is refused",
        arguments: [
            "64MB", "64 MB/s", "1.5MB/s", "-1MB/s", "64mb/s", "/s", "MB/s",
            "99999999999GB/s",
        ])
    func badRates(text: String) {
        #expect(ByteRateText.parse(text) == nil)
    }

    @Test(
        "errors name the line and the key",
        arguments: [
            ("[jobs.prune]\nkeep_histroy = \"1d\"\n", 2, "jobs.prune.keep_histroy"),
            ("[worker]\ntimezone = \"Mars/Olympus\"\n", 2, "worker.timezone"),
            ("[jobs.expire-content]\nmin_lifetime = 5\n", 2, "jobs.expire-content.min_lifetime"),
            ("[jobs.expire-content]\nmax_lifetime = \"1h\"\n", 2, "jobs.expire-content.max_lifetime"),
            ("\n[jobs.mystery]\nschedule = \"@daily\"\n", 2, "jobs.mystery"),
            ("[jobs.x]\nschedule = \"@daily\"\nsql = \"DELETE FROM a; DELETE FROM b\"\n", 3, "jobs.x.sql"),
            (
                "[jobs.x]\nschedule = \"@daily\"\nsql = \"SELECT 1\"\nrepeat_until_zero = true\n", 4,
                "jobs.x.repeat_until_zero"
            ),
            (
                "[jobs.x]\nschedule = \"@daily\"\nsql = \"WITH t AS (SELECT updated_at FROM s) SELECT * FROM t\"\nrepeat_until_zero = true\n",
                4, "jobs.x.repeat_until_zero"
            ),
            ("[jobs.prune]\nschedule = \"0 0 31 2 *\"\n", 2, "jobs.prune.schedule"),
            ("[mail]\ntransport = \"file\"\n", 1, "mail.directory"),
            (
                "[jobs.send-temp-passwords]\ntemp_password_length = 100\n", 2,
                "jobs.send-temp-passwords.temp_password_length"
            ),
            ("[database]\nurl = 5\n", 2, "database.url"),
            ("[jobs.expire-content]\nmax_wal_rate = \"64MB\"\n", 2, "jobs.expire-content.max_wal_rate"),
            ("[jobs.expire-content]\nmax_wal_rate = \"0MB/s\"\n", 2, "jobs.expire-content.max_wal_rate"),
            ("[jobs.expire-content]\nmax_commit_slowdown = \"50\"\n", 2, "jobs.expire-content.max_commit_slowdown"),
            ("[jobs.expire-content]\nmax_commit_slowdown = \"0%\"\n", 2, "jobs.expire-content.max_commit_slowdown"),
            ("[jobs.expire-content]\nmax_commit_slowdown = 50\n", 2, "jobs.expire-content.max_commit_slowdown"),
            ("[jobs.expire-content]\nmax_busy_share = \"0%\"\n", 2, "jobs.expire-content.max_busy_share"),
            ("[jobs.expire-content]\nmax_busy_share = \"101%\"\n", 2, "jobs.expire-content.max_busy_share"),
            ("[jobs.prune]\nmax_busy_share = \"0.5\"\n", 2, "jobs.prune.max_busy_share"),
            ("[jobs.expire-content]\n\nmax_replica_lag = \"soon\"\n", 3, "jobs.expire-content.max_replica_lag"),
            ("[jobs.expire-content]\nsynchronous_commit = \"off\"\n", 2, "jobs.expire-content.synchronous_commit"),
            ("[jobs.expire-content]\nwait_for_vacuum = \"yes\"\n", 2, "jobs.expire-content.wait_for_vacuum"),
        ])
    func errors(text: String, line: Int, key: String) throws {
        let found = try #require(error(text))
        #expect(found.line == line, "\(found)")
        #expect(found.key == key, "\(found)")
        #expect(found.description.hasPrefix("jobs.toml:\(line): \(key): "), "\(found)")
    }

    @Test("a semicolon inside a string, a comment or a dollar-quoted body is not a second statement")
    func singleStatement() throws {
        let configuration = try parse(
            """
            [jobs.x]
            schedule = "@hourly"
            sql = '''
            DELETE FROM notes WHERE body = 'a;b' -- ; here
              AND tag <> $t$;$t$ /* ; */
            '''
            repeat_until_zero = true
            """)
        guard case .sql(let settings)? = configuration.job(named: "x")?.settings else {
            Issue.record("no sql job")
            return
        }
        #expect(settings.repeatUntilZero)
    }

    @Test("the config file is found in SPEC's order")
    func location() {
        #expect(
            ConfigurationLoader.locate(explicit: "/a.toml", environment: ["CARETAKER_CONFIG": "/b.toml"]) == "/a.toml")
        #expect(ConfigurationLoader.locate(explicit: nil, environment: ["CARETAKER_CONFIG": "/b.toml"]) == "/b.toml")
    }

    @Test("a mail template is parsed and filled in one pass")
    func template() throws {
        let template = try MailTemplate.parse("Subject: Hi {{name}}\n\nTemporary password: {{password}}\n").get()
        let (subject, body) = template.render(name: "{{password}}", password: "pw-1", expiresAt: "x", appName: "y")
        #expect(subject == "Hi {{password}}")
        #expect(body.contains("Temporary password: pw-1"))
        #expect(throws: TemplateProblem.self) { try MailTemplate.parse("Subject: x\n\nno placeholder").get() }
        #expect(MailTemplate.default.body.contains("Temporary password: {{password}}"))
        #expect(MailTemplate.default.subject == "Your temporary password")
    }
}

@Suite struct DashboardConfigurationTests {
    @Test("[dashboard] defaults to loopback without authentication")
    func defaults() throws {
        let dashboard = try ConfigurationLoader.parse("", file: "jobs.toml").dashboard
        #expect(dashboard.listen == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(dashboard.username.isEmpty && dashboard.passwordFile.isEmpty)
        let set = try ConfigurationLoader.parse(
            "[dashboard]\nlisten = \"[::1]:9090\"\nusername = \"ops\"\npassword_file = \"/etc/caretaker/dashboard.pw\"\n",
            file: "jobs.toml"
        ).dashboard
        #expect(set.listen == ListenAddress(host: "::1", port: 9090))
        #expect(set.username == "ops" && set.passwordFile == "/etc/caretaker/dashboard.pw")
    }

    @Test(
        "[dashboard] errors name the line and the key",
        arguments: [
            ("[dashboard]\nlisten = \"8080\"\n", "dashboard.listen"),
            ("[dashboard]\nusername = \"a:b\"\n", "dashboard.username"),
            ("[dashboard]\npassword_file = \"/x\"\n", "dashboard.password_file"),
            ("[dashboard]\npasword_file = \"/x\"\n", "dashboard.pasword_file"),
        ])
    func errors(text: String, key: String) {
        do {
            _ = try ConfigurationLoader.parse(text, file: "jobs.toml")
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.key == key)
            #expect(error.line == 2)
        }
    }
}
