import CaretakerCore
import CaretakerTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A broken `jobs.toml` stops every command with exit 78 and one line naming the
/// file, the line and the key — before any connection to the database is tried
/// (the configured database does not exist).
@Suite struct BadConfigTests {
    /// One broken file. The offending line is marked with `# <-` (or given as `line`
    /// where a comment cannot go, e.g. inside an unterminated string).
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let toml: String
        /// The dotted key the message names; "" for TOML syntax errors.
        let key: String
        /// A fragment of the explanation.
        let says: String
        var line: Int? = nil
        /// What the marked line becomes in the repaired file (`casesAreMinimal`); nil removes it.
        var fix: String? = nil

        var testDescription: String { name }

        /// The line the message must name: `line`, else the line marked `# <-`, else 0 (not on one line).
        var expectedLine: Int {
            if let line { return line }
            let lines = toml.components(separatedBy: "\n")
            return (lines.firstIndex { $0.contains("# <-") } ?? -1) + 1
        }
    }

    /// An unreachable database: a configuration error must win before any connection attempt.
    static let header = """
        [database]
        url = "host=/nonexistent-caretaker-socket port=5432 dbname=never connect_timeout=1"
        connect_timeout = "1s"

        """

    static let cases: [Case] = [
        Case(
            name: "TOML syntax: unterminated string",
            toml: header + "[worker]\ntimezone = \"UTC\n", key: "", says: "TOML syntax error", line: 5),
        Case(
            name: "TOML syntax: key without value",
            toml: header + "[jobs.prune]\nschedule =   # <-\n", key: "", says: "expected a value"),
        Case(
            name: "TOML syntax: duplicate key",
            toml: header + "[mail]\nfrom = \"a@example.org\"\nfrom = \"b@example.org\"   # <-\n", key: "",
            says: "TOML syntax error"),
        Case(
            name: "unknown top-level table",
            toml: header + "[workers]   # <-\ntimezone = \"UTC\"\n", key: "workers",
            says: "unknown key in the top level"),
        Case(
            name: "unknown key in [database]",
            toml: header.replacingOccurrences(of: "connect_timeout = \"1s\"", with: "conect_timeout = \"1s\"   # <-"),
            key: "database.conect_timeout", says: "unknown key in [database]; valid keys: app_schema, connect_timeout"),
        Case(
            name: "unknown key in [worker]",
            toml: header + "[worker]\nmax_concurrent = 2   # <-\n", key: "worker.max_concurrent",
            says: "unknown key in [worker]"),
        Case(
            name: "unknown key in [mail]",
            toml: header + "[mail]\nsender = \"a@example.org\"   # <-\n", key: "mail.sender",
            says: "unknown key in [mail]"),
        Case(
            name: "unknown key in [jobs.expire-content]",
            toml: header + "[jobs.expire-content]\nmin_lifetme = \"1h\"   # <-\n",
            key: "jobs.expire-content.min_lifetme", says: "unknown key"),
        Case(
            name: "unknown key in [jobs.logout-inactive]",
            toml: header + "[jobs.logout-inactive]\nidle = \"5m\"   # <-\n", key: "jobs.logout-inactive.idle",
            says: "unknown key"),
        Case(
            name: "unknown key in [jobs.send-temp-passwords]",
            toml: header + "[jobs.send-temp-passwords]\nschedule = \"@every 1m\"\nmax_per_day = 3   # <-\n",
            key: "jobs.send-temp-passwords.max_per_day", says: "unknown key"),
        Case(
            name: "unknown key in [jobs.leader-succession]",
            toml: header + "[jobs.leader-succession]\nleader_inactive = \"90d\"   # <-\n",
            key: "jobs.leader-succession.leader_inactive", says: "unknown key"),
        Case(
            name: "unknown key in [jobs.prune]",
            toml: header + "[jobs.prune]\nkeep_history = \"30d\"\nkeep_sessions = \"30d\"   # <-\n",
            key: "jobs.prune.keep_sessions", says: "unknown key"),
        Case(
            name: "unknown key in an operator job",
            toml: header + "[jobs.clean]\nsql = \"DELETE FROM t\"\nschedule = \"@hourly\"\nrepeat = true   # <-\n",
            key: "jobs.clean.repeat", says: "unknown key"),
        Case(
            name: "wrong type: a string for an integer",
            toml: header + "[worker]\nmax_concurrent_jobs = \"2\"   # <-\n", key: "worker.max_concurrent_jobs",
            says: "expected an integer, found string"),
        Case(
            name: "wrong type: a string for a boolean",
            toml: header + "[worker]\nlow_footprint = \"yes\"   # <-\n", key: "worker.low_footprint",
            says: "expected true or false"),
        Case(
            name: "wrong type: a number for a duration",
            toml: header + "[jobs.logout-inactive]\nidle_timeout = 600   # <-\n",
            key: "jobs.logout-inactive.idle_timeout", says: "expected a duration string"),
        Case(
            name: "wrong type: a job that is not a table",
            toml: header + "[jobs]\nprune = \"daily\"   # <-\n", key: "jobs.prune", says: "expected a table"),
        Case(
            name: "integer out of range",
            toml: header + "[jobs.send-temp-passwords]\ntemp_password_length = 8   # <-\n",
            key: "jobs.send-temp-passwords.temp_password_length", says: "8 is out of range (12…"),
        Case(
            name: "bad duration",
            toml: header + "[worker]\nshutdown_grace = \"20 s\"   # <-\n", key: "worker.shutdown_grace",
            says: "\"20 s\" is not a duration"),
        Case(
            name: "duration below the minimum",
            toml: header + "[jobs.prune]\nkeep_history = \"10m\"   # <-\n", key: "jobs.prune.keep_history",
            says: "must be at least 1h"),
        Case(
            name: "bad schedule: four fields",
            toml: header + "[jobs.expire-content]\nschedule = \"*/5 * * *\"   # <-\n",
            key: "jobs.expire-content.schedule", says: "it has 4 fields"),
        Case(
            name: "bad schedule: value out of range",
            toml: header + "[jobs.leader-succession]\nschedule = \"75 * * * *\"   # <-\n",
            key: "jobs.leader-succession.schedule", says: "minute field: 75 is out of range"),
        Case(
            name: "bad schedule: @every below a second",
            toml: header + "[jobs.logout-inactive]\nschedule = \"@every 500ms\"   # <-\n",
            key: "jobs.logout-inactive.schedule", says: "at least 1s"),
        Case(
            name: "bad worker timezone",
            toml: header + "[worker]\ntimezone = \"Europe/Berln\"   # <-\n", key: "worker.timezone",
            says: "not an IANA time zone name"),
        Case(
            name: "bad job timezone",
            toml: header + "[jobs.prune]\ntimezone = \"Mars/Olympus\"   # <-\n", key: "jobs.prune.timezone",
            says: "not an IANA time zone name"),
        Case(
            name: "unknown job without sql (a typo of a built-in)",
            toml: header + "[jobs.expire-contnet]   # <-\nschedule = \"*/5 * * * *\"\n",
            key: "jobs.expire-contnet", says: "unknown job; the built-in jobs are expire-content"),
        Case(
            name: "operator job without a schedule",
            toml: header + "[jobs.clean]   # <-\nsql = \"DELETE FROM t\"\n", key: "jobs.clean.schedule",
            says: "is required for an operator job"),
        Case(
            name: "two SQL statements",
            toml: header + "[jobs.clean]\nschedule = \"@hourly\"\nsql = \"DELETE FROM a; DELETE FROM b\"   # <-\n",
            key: "jobs.clean.sql", says: "must be a single statement", fix: "sql = \"DELETE FROM a\""),
        Case(
            name: "repeat_until_zero on a SELECT",
            toml: header
                + "[jobs.report]\nschedule = \"@hourly\"\nsql = \"SELECT count(*) FROM posts\"\nrepeat_until_zero = true   # <-\n",
            key: "jobs.report.repeat_until_zero", says: "needs a statement that changes rows"),
        Case(
            name: "template_file missing",
            toml: header + "[jobs.send-temp-passwords]\ntemplate_file = \"no-such-template.txt\"   # <-\n",
            key: "jobs.send-temp-passwords.template_file", says: "cannot read"),
        Case(
            name: "min_lifetime > max_lifetime",
            toml: header + "[jobs.expire-content]\nmin_lifetime = \"48h\"\nmax_lifetime = \"24h\"   # <-\n",
            key: "jobs.expire-content.max_lifetime", says: "must not be shorter than min_lifetime"),
        Case(
            name: "min_lifetime > the default max_lifetime (error at the table header)",
            toml: header + "[jobs.expire-content]   # <-\nmin_lifetime = \"72h\"\n",
            key: "jobs.expire-content.max_lifetime", says: "must not be shorter than min_lifetime"),
        Case(
            name: "bad log_format",
            toml: header + "[worker]\nlog_format = \"text\"   # <-\n", key: "worker.log_format",
            says: "must be \"logfmt\" or \"json\""),
        Case(
            name: "mail transport file without a directory",
            toml: header + "[mail]\ntransport = \"file\"\ndirectory = \"\"   # <-\n", key: "mail.directory",
            says: "is required when transport = \"file\"",
            fix: "directory = \"/tmp\""),
        Case(
            name: "mail url that is not smtp",
            toml: header + "[mail]\nurl = \"http://mail.example.org\"   # <-\n", key: "mail.url",
            says: "must start with smtp:// or smtps://"),
        Case(
            name: "a NUL byte in operator SQL (libpq would run only the part before it)",
            toml: header
                + "[jobs.clean]\nschedule = \"@hourly\"\nsql = \"DELETE FROM invitations\\u0000 WHERE event_at < now()\"   # <-\n",
            key: "jobs.clean.sql", says: "contains a NUL byte",
            fix: "sql = \"DELETE FROM invitations WHERE event_at < now()\""),
        Case(
            name: "a NUL byte in a job's timezone",
            toml: header + "[jobs.prune]\ntimezone = \"UTC\\u0000\"   # <-\n",
            key: "jobs.prune.timezone", says: "contains a NUL byte", fix: "timezone = \"UTC\""),
        Case(
            name: "a NUL byte in a duration",
            toml: header + "[jobs.prune]\nkeep_history = \"30d\\u0000\"   # <-\n", key: "jobs.prune.keep_history",
            says: "contains a NUL byte",
            fix: "keep_history = \"30d\""),
        Case(
            name: "statement_timeout beyond what PostgreSQL accepts",
            toml: header + "[jobs.prune]\nstatement_timeout = \"25d\"   # <-\n", key: "jobs.prune.statement_timeout",
            says: "must be at most 2147483647ms", fix: "statement_timeout = \"24d\""),
        Case(
            name: "lock_timeout beyond what PostgreSQL accepts",
            toml: header + "[jobs.prune]\nlock_timeout = \"30d\"   # <-\n", key: "jobs.prune.lock_timeout",
            says: "must be at most 2147483647ms", fix: "lock_timeout = \"1d\""),
        Case(
            name: "mail.from that is not an RFC 5322 address",
            toml: header + "[mail]\nfrom = \"Community <no-reply@>\"   # <-\n", key: "mail.from",
            says: "is not one address", fix: "from = \"Community <no-reply@example.org>\""),
        Case(
            name: "mail.from with two addresses",
            toml: header + "[mail]\nfrom = \"a@example.org, b@example.org\"   # <-\n", key: "mail.from",
            says: "is not one address", fix: "from = \"a@example.org\""),
        Case(
            name: "smtp:// with a username and no STARTTLS",
            toml: header + "[mail]\nurl = \"smtp://mail.example.org:587\"\nusername = \"mailer\"   # <-\n",
            key: "mail.username",
            says: "would send the SMTP password in clear text", fix: "starttls = true"),
        Case(
            name: "a line break in a quoted key is shown escaped, on one line",
            toml: header + "[jobs.prune]\n\"keep\\nhistory\" = \"30d\"   # <-\n", key: "jobs.prune.keep\\nhistory",
            says: "unknown key"),
    ]

    /// Writes `toml` to a fresh file and returns its path.
    static func write(_ toml: String, name: String = "jobs.toml") throws -> String {
        let directory = NSTemporaryDirectory() + "caretaker-badconfig-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/" + name
        try toml.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Removes the directory `write` made for `path`.
    static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path)
    }

    /// The commands that read the configuration, in turn: every one must refuse a broken file the same way.
    static let commands: [[String]] = [["check"], ["once", "--all"], ["jobs"], ["history"], ["migrate"]]

    @Test("a broken jobs.toml exits 78 with file:line: key and nothing else", arguments: zip(cases.indices, cases))
    func brokenFile(index: Int, broken: Case) throws {
        let path = try Self.write(broken.toml)
        defer { Self.remove(path) }
        let command = Self.commands[index % Self.commands.count]
        let result = try Caretaker.run(command + ["--config", path])
        let place =
            broken.key.isEmpty ? "\(path):\(broken.expectedLine): " : "\(path):\(broken.expectedLine): \(broken.key): "
        #expect(result.status == 78, "\(command) exited \(result.status): \(result.stderr)")
        #expect(
            result.stderr.hasPrefix("caretaker: configuration error: \(place)"),
            "expected \(place) in: \(result.stderr)")
        #expect(result.stderr.contains(broken.says), "expected \"\(broken.says)\" in: \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "one line only: \(result.stderr)")
        #expect(!result.stderr.contains("database unavailable"), "a configuration error must come before connecting")
        #expect(result.stdout.isEmpty, "\(result.stdout)")
    }

    @Test("each file in the table is broken only where it says: repaired there, it loads")
    func casesAreMinimal() throws {
        // Sanity check of the table itself: without the marked line (or with it fixed) the
        // file is valid, so each case tests the error it names rather than an earlier one.
        for broken in Self.cases where broken.expectedLine > 0 && broken.key != "jobs.expire-content.max_lifetime" {
            var lines = broken.toml.components(separatedBy: "\n")
            let index = broken.expectedLine - 1
            if lines[index].hasPrefix("[") {
                // A header marks a table-level error: drop the whole table.
                var end = index + 1
                while end < lines.count, !lines[end].hasPrefix("[") { end += 1 }
                lines.removeSubrange(index..<end)
            } else if let fix = broken.fix {
                lines[index] = fix
            } else {
                lines.remove(at: index)
            }
            let text = lines.joined(separator: "\n")
            #expect(throws: Never.self, "\(broken.name): still broken without line \(broken.expectedLine)") {
                _ = try ConfigurationLoader.parse(text, file: "fixed.toml")
            }
        }
    }

    @Test("a missing configuration file exits 78 naming it")
    func missingFile() throws {
        let path = NSTemporaryDirectory() + "caretaker-no-such-\(UUID().uuidString)/jobs.toml"
        let result = try Caretaker.run(["check", "--config", path])
        #expect(result.status == 78)
        #expect(result.stderr.contains("\(path): cannot read the configuration file"), "\(result.stderr)")
    }

    /// Reading a FIFO would wait for a writer forever (and a device might never end).
    @Test("a FIFO as jobs.toml or as template_file is refused at once, naming it")
    func fifo() throws {
        let path = try Self.write(Self.header + "[jobs.send-temp-passwords]\ntemplate_file = \"pipe\"\n")
        defer { Self.remove(path) }
        let pipe = URL(fileURLWithPath: path).deletingLastPathComponent().path + "/pipe"
        try #require(mkfifo(pipe, 0o600) == 0)
        let template = try Caretaker.run(["check", "--config", path])
        #expect(template.status == 78)
        #expect(
            template.stderr.contains("template_file") && template.stderr.contains("not a regular file"),
            "\(template.stderr)")
        let config = try Caretaker.run(["check", "--config", pipe])
        #expect(config.status == 78)
        #expect(
            config.stderr.contains("\(pipe): cannot read the configuration file")
                && config.stderr.contains("not a regular file"),
            "\(config.stderr)")
    }

    @Test("the file comes from $CARETAKER_CONFIG when --config is not given")
    func fromEnvironment() throws {
        let path = try Self.write(Self.header + "[worker]\ntimezone = \"Nowhere/Special\"\n")
        defer { Self.remove(path) }
        let result = try Caretaker.run(["jobs"], environment: ["CARETAKER_CONFIG": path])
        #expect(result.status == 78)
        #expect(result.stderr.contains("\(path):5: worker.timezone:"), "\(result.stderr)")
    }

    @Test("the daemon fails fast on a broken file instead of waiting for the database")
    func daemonFailsFast() async throws {
        let path = try Self.write(Self.header + "[jobs.prune]\nschedule = \"@every 0s\"\n")
        defer { Self.remove(path) }
        let (status, stderr) = try await Self.runDaemon(config: path)
        #expect(status == 78, "\(stderr)")
        #expect(stderr.contains("\(path):5: jobs.prune.schedule: invalid schedule \"@every 0s\""), "\(stderr)")
    }

    /// The daemon reads the database password once at start (and again on SIGHUP), not
    /// on every connection: an unreadable file stops the start instead of every connect.
    @Test("the daemon refuses to start when database.password_file cannot be read")
    func daemonNeedsItsPasswordFile() async throws {
        let missing = "/nonexistent-caretaker-dir/db-password"
        let path = try Self.write(
            Self.header.replacing(
                "connect_timeout = \"1s\"\n",
                with: "connect_timeout = \"1s\"\npassword_file = \"\(missing)\"\n"))
        defer { Self.remove(path) }
        let (status, stderr) = try await Self.runDaemon(config: path)
        #expect(status == 78, "\(stderr)")
        #expect(stderr.contains("cannot read database.password_file \(missing)"), "\(stderr)")
    }

    /// Runs `caretaker run` on `path`, which must refuse to start: its exit status and stderr.
    static func runDaemon(config path: String) async throws -> (status: Int32, stderr: String) {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let pid = try ChildProcess.spawn(
            [Caretaker.path, "run", "--config", path],
            stdoutPath: directory + "/out", stderrPath: directory + "/err")
        let status = try #require(
            await ChildProcess.exitStatus(of: pid, within: .seconds(20)), "caretaker run kept running")
        return (status, try String(contentsOfFile: directory + "/err", encoding: .utf8))
    }
}
