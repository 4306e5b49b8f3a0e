import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// No secret ever leaves caretaker: a database password, an SMTP password and the
/// temporary passwords it mails are set to recognisable strings, every job and the
/// daemon run, and everything they leave behind is searched for them — log lines,
/// command output (`history --json`, `check --json`, `jobs`), error messages (a
/// refused SMTP login, an unreachable or refusing database) and every row of every
/// table in the database (`caretaker.job_runs`, `password_reset_requests.last_error`, …).
///
/// The database password is real: the suite's role must authenticate with SCRAM
/// (one `pg_hba.conf` line for that role only, on the shared test cluster), so a
/// successful run proves the password reached libpq.
@Suite final class SecretsTests {
    /// A name and the strings that must not appear (the secret and encodings of it).
    struct Secret: Sendable {
        let name: String
        let forms: [String]

        init(_ name: String, _ value: String, extraForms: [String] = []) {
            self.name = name
            self.forms = [value] + extraForms
        }
    }

    /// Something caretaker wrote or stored, under a label for the failure message.
    struct Captured {
        let label: String
        let text: String
    }

    // MARK: The role with a real password

    /// A superuser role that must log in with its password, created once per test process.
    struct SecretRole: Sendable {
        let name: String
        let password: String

        static let shared: Result<SecretRole, SetupError> = {
            do { return .success(try SecretRole()) } catch {
                return .failure(SetupError(description: "cannot set up the password role: \(error)"))
            }
        }()

        private init() throws {
            let server = TemporaryPostgres.shared
            name = "caretaker_secret_\(getpid())"
            password = "db-SECRET-\(Self.token())"
            let admin = try server.connect()
            try admin.query("CREATE ROLE \(name) LOGIN SUPERUSER PASSWORD '\(password)'")
            // Only this role needs its password; everything else keeps `trust`.
            let hba = server.directory + "/data/pg_hba.conf"
            let rules = try String(contentsOfFile: hba, encoding: .utf8)
            try ("local all \(name) scram-sha-256\n" + rules).write(toFile: hba, atomically: false, encoding: .utf8)
            try admin.query("SELECT pg_reload_conf()")
            // The reload is asynchronous: wait until a wrong password is refused.
            let refused = eventually {
                (try? Connection(.init(conninfo: conninfo(database: "postgres"), password: "not-the-password"))) == nil
            }
            guard refused else { throw SetupError(description: "pg_hba.conf reload did not take effect") }
        }

        func conninfo(database: String) -> String {
            "host=\(TemporaryPostgres.shared.directory) port=5432 user=\(name) dbname=\(database)"
        }

        static func token() -> String {
            String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12)).lowercased()
        }
    }

    struct SetupError: Error, CustomStringConvertible {
        let description: String
    }

    let db: TestDatabase
    let role: SecretRole
    /// Holds the password files and the systemd credentials directory.
    let directory: String
    let smtpUser = "mailer"
    let smtpPassword = "smtp-SECRET-\(SecretRole.token())"
    let wrongSMTPPassword = "wrong-smtp-SECRET-\(SecretRole.token())"
    let wrongDatabasePassword = "wrong-db-SECRET-\(SecretRole.token())"

    init() throws {
        db = try TestDatabase()
        role = try SecretRole.shared.get()
        directory = NSTemporaryDirectory() + "caretaker-secrets-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/credentials", withIntermediateDirectories: true)
        try write("db-password", role.password + "\n")
        try write("smtp-password", smtpPassword + "\n")
        try write("wrong-smtp-password", wrongSMTPPassword)
        try write("wrong-db-password", wrongDatabasePassword)
        try write("credentials/db-password", role.password + "\n")
        try write("credentials/smtp-password", smtpPassword)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func write(_ name: String, _ text: String) throws {
        let path = directory + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
    }

    // MARK: Helpers

    /// The secrets every test checks for, plus the temporary passwords it has read.
    func secrets(temporaryPasswords: [String] = []) -> [Secret] {
        // AUTH PLAIN sends base64("\0user\0password"), AUTH LOGIN base64("password").
        func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }
        return [
            Secret("database password", role.password),
            Secret("wrong database password", wrongDatabasePassword),
            Secret(
                "SMTP password", smtpPassword,
                extraForms: [base64(smtpPassword), base64("\0\(smtpUser)\0\(smtpPassword)")]),
            Secret(
                "wrong SMTP password", wrongSMTPPassword,
                extraForms: [base64(wrongSMTPPassword), base64("\0\(smtpUser)\0\(wrongSMTPPassword)")]),
        ] + temporaryPasswords.enumerated().map { Secret("temporary password #\($0.offset + 1)", $0.element) }
    }

    /// Fails naming the place and the secret for every secret found in a captured text.
    func expectNoSecrets(
        in captured: [Captured], _ secrets: [Secret], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for item in captured {
            for secret in secrets {
                for form in secret.forms where item.text.contains(form) {
                    Issue.record(
                        "the \(secret.name) appears in \(item.label):\n\(item.text.prefix(4000))",
                        sourceLocation: sourceLocation)
                }
            }
        }
    }

    /// A `jobs.toml` for this database as the password role, with `databaseExtra` in `[database]`;
    /// `fast` puts every job on an `@every 1s` schedule (for the daemon).
    func configuration(
        url: String? = nil, databaseExtra: String = "", mail: String, fast: Bool = false
    ) throws -> String {
        let every = fast ? "@every 1s" : nil
        let jobs = ["expire-content", "logout-inactive", "leader-succession", "prune"].map { name in
            every.map { "[jobs.\(name)]\nschedule = \"\($0)\"\n" } ?? ""
        }.joined()
        let text = """
            [database]
            url = "\(url ?? role.conninfo(database: db.name))"
            connect_timeout = "2s"
            \(databaseExtra)

            \(mail)

            [jobs.send-temp-passwords]
            bcrypt_cost = 4
            schedule = "\(every ?? "@every 1m")"

            [jobs.touch-users]
            schedule = "\(every ?? "@hourly")"
            sql = "UPDATE users SET display_name = display_name WHERE id < 0"

            \(jobs)
            """
        let path = directory + "/jobs-\(UUID().uuidString).toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func mailSection(_ server: TestSMTPServer, passwordFile: String?) -> String {
        """
        [mail]
        url = "\(server.url)"
        username = "\(smtpUser)"
        # The test server listens on loopback without TLS.
        allow_plaintext_auth = true
        \(passwordFile.map { "password_file = \"\($0)\"" } ?? "")
        from = "Community <no-reply@example.org>"
        """
    }

    /// Runs the binary and returns what it printed, under a label.
    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (Caretaker.Result, [Captured]) {
        let result = try Caretaker.run(arguments, environment: environment)
        let label = "caretaker \(arguments.filter { !$0.hasSuffix(".toml") }.joined(separator: " "))"
        return (
            result,
            [
                Captured(label: label + " (stdout)", text: result.stdout),
                Captured(label: label + " (stderr)", text: result.stderr),
            ]
        )
    }

    /// Users, a pending reset request, and something for every other job to do.
    func seed() throws {
        try db.connection.execute(
            script: """
                INSERT INTO users (email, display_name, password_hash) VALUES
                    ('alice@example.org', 'Alice', 'h'), ('bob@example.org', 'Bob', 'h'), ('carol@example.org', 'Carol', 'h');
                INSERT INTO sessions (user_id, last_seen_at) SELECT id, now() - interval '1 hour' FROM users;
                INSERT INTO packs (name, created_at) VALUES ('old pack', now() - interval '3 days');
                INSERT INTO posts (pack_id, title, created_at) SELECT id, 'old post', now() - interval '3 days' FROM packs;
                INSERT INTO communities (name) VALUES ('leaderless');
                INSERT INTO community_members (community_id, user_id) SELECT c.id, u.id FROM communities c, users u;
                """)
    }

    func request(_ email: String) throws {
        try db.connection.query("INSERT INTO password_reset_requests (email) VALUES ($1)", email)
    }

    /// Every row of every table of the app and caretaker schemas, as JSON text, one capture per table.
    func databaseContents() throws -> [Captured] {
        let tables = try db.connection.query(
            """
            SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) AS name
            FROM information_schema.tables
            WHERE table_schema IN ('public', 'caretaker') AND table_type = 'BASE TABLE' ORDER BY 1
            """
        ).rows.compactMap { $0["name"] }
        var captured: [Captured] = []
        for table in tables {
            let rows =
                try db.connection.query("SELECT coalesce(json_agg(t)::text, '') AS rows FROM \(table) t").first?["rows"]
                ?? ""
            captured.append(Captured(label: "table \(table)", text: rows))
        }
        // The columns the brief names, as the server renders them.
        let runs =
            try db.connection.query("SELECT string_agg(r::text, E'\\n') AS text FROM caretaker.job_runs r").first?[
                "text"] ?? ""
        captured.append(Captured(label: "caretaker.job_runs (every column as text)", text: runs))
        return captured
    }

    /// The temporary password in the line `Temporary password: <pw>` of a message.
    func temporaryPassword(in mail: ReceivedMail) throws -> String {
        let line = try #require(
            mail.body.components(separatedBy: "\r\n").first { $0.hasPrefix("Temporary password: ") })
        return String(line.dropFirst("Temporary password: ".count))
    }

    func daemonEnvironment(_ extra: [String: String]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        for name in [
            "CARETAKER_CONFIG", "JOURNAL_STREAM", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID",
            "CREDENTIALS_DIRECTORY", "CARETAKER_SMTP_PASSWORD", "PGPASSWORD",
        ] {
            env[name] = nil
        }
        return env.merging(extra) { _, new in new }
    }

    // MARK: One-shot runs

    @Test("once --all, history, check and jobs with every password set leak none of them")
    func oneShotRuns() async throws {
        try seed()
        let server = try TestSMTPServer.start(.init(requiredLogin: (smtpUser, smtpPassword)))
        defer { server.stop() }
        var captured: [Captured] = []
        var temporaryPasswords: [String] = []

        // 1. Passwords from `password_file` keys.
        let fromFiles = try configuration(
            databaseExtra: "password_file = \"\(directory)/db-password\"",
            mail: mailSection(server, passwordFile: directory + "/smtp-password"))
        try request("alice@example.org")
        let (first, output1) = try run(["once", "--all", "--config", fromFiles])
        captured += output1
        #expect(first.status == 0, "\(first.stderr)")
        let mail1 = try #require(try server.waitForMessages(count: 1, timeout: .seconds(10)).first)
        #expect(mail1.login == smtpUser)
        temporaryPasswords.append(try temporaryPassword(in: mail1))
        #expect(
            try db.count("SELECT count(*) FROM caretaker.job_runs WHERE status = 'succeeded'") == 6,
            "every job ran: \(first.stderr)")
        #expect(
            try db.count("SELECT count(*) FROM posts") == 0
                && db.count("SELECT count(*) FROM sessions WHERE revoked_at IS NULL") == 0,
            "the jobs did their work")

        // 2. Passwords from systemd credentials ($CREDENTIALS_DIRECTORY/db-password, smtp-password).
        let fromCredentials = try configuration(mail: mailSection(server, passwordFile: nil))
        let credentials = ["CREDENTIALS_DIRECTORY": directory + "/credentials"]
        try request("bob@example.org")
        let (second, output2) = try run(["once", "--all", "--config", fromCredentials], environment: credentials)
        captured += output2
        #expect(second.status == 0, "\(second.stderr)")
        let mails = try server.waitForMessages(count: 2, timeout: .seconds(10))
        temporaryPasswords.append(try temporaryPassword(in: try #require(mails.last)))

        // 3. Passwords from the environment: $CARETAKER_SMTP_PASSWORD, and libpq's own $PGPASSWORD.
        try db.connection.query("INSERT INTO users (email, password_hash) VALUES ('dave@example.org', 'h')")
        try request("dave@example.org")
        let (fromEnvironment, output3) = try run(
            ["once", "send-temp-passwords", "--log-format", "json", "--config", fromCredentials],
            environment: ["CARETAKER_SMTP_PASSWORD": smtpPassword, "PGPASSWORD": role.password])
        captured += output3
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        let mails3 = try server.waitForMessages(count: 3, timeout: .seconds(10))
        temporaryPasswords.append(try temporaryPassword(in: try #require(mails3.last)))

        // 4. The wrong SMTP password: the failure is recorded, the password is not.
        let wrongMail = try configuration(
            databaseExtra: "password_file = \"\(directory)/db-password\"",
            mail: mailSection(server, passwordFile: directory + "/wrong-smtp-password"))
        try request("carol@example.org")
        let (third, output4) = try run(["once", "send-temp-passwords", "--config", wrongMail])
        captured += output4
        #expect(third.status == 0 || third.status == 1, "\(third.stderr)")
        let lastError = try db.connection.query(
            "SELECT last_error FROM password_reset_requests WHERE email = 'carol@example.org'"
        ).first?["last_error"]
        #expect(lastError?.contains("refused the login") == true, "the failure is named: \(lastError ?? "nil")")
        #expect(try server.messages().count == 3, "no mail without the right login")
        captured.append(Captured(label: "password_reset_requests.last_error", text: lastError ?? ""))

        // 5. What operators and scripts read afterwards.
        for command in [
            ["history", "--json"], ["history"], ["check", "--json"], ["check"], ["jobs", "--json"], ["jobs"],
        ] {
            let (result, output) = try run(command + ["--config", fromFiles])
            #expect(result.status == 0 || command[0] == "check", "\(command): \(result.stderr)")
            captured += output
        }
        let (dryRun, output5) = try run(
            ["once", "--all", "--dry-run", "--log-format", "json", "--config", fromCredentials],
            environment: credentials)
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        captured += output5
        captured += try databaseContents()

        #expect(
            temporaryPasswords.count == 3 && Set(temporaryPasswords).count == 3
                && temporaryPasswords.allSatisfy { $0.count >= 12 })
        expectNoSecrets(in: captured, secrets(temporaryPasswords: temporaryPasswords))
    }

    // MARK: Failing database connections

    @Test("a refused or unreachable database exits 69 without echoing any password")
    func databaseErrors() throws {
        let socket = TemporaryPostgres.shared.directory
        let mail = "[mail]\ntransport = \"file\"\ndirectory = \"\(directory)/mail\""
        let password = role.password
        // (url, extra [database] keys, what the message must say)
        let setups: [(String, String, String)] = [
            // The server refuses the wrong password (SCRAM): libpq names the user, not the password.
            (
                role.conninfo(database: db.name), "password_file = \"\(directory)/wrong-db-password\"",
                "password authentication failed"
            ),
            (
                "\(role.conninfo(database: db.name)) password=\(wrongDatabasePassword)", "",
                "password authentication failed"
            ),
            // Nothing listens there.
            (
                "host=/nonexistent-caretaker-socket port=5432 user=\(role.name) password=\(password) dbname=x",
                "password_file = \"\(directory)/db-password\"", "No such file or directory"
            ),
            (
                "postgresql://\(role.name):\(password)@/x?host=/nonexistent-caretaker-socket", "",
                "No such file or directory"
            ),
            // URIs libpq cannot parse, and whose text it would quote back.
            ("postgresql://\(role.name):\(password)@[::1/x", "", "IPv6 host address"),
            ("postgresql://\(role.name):\(password)%zz@localhost/x", "", "percent-encoded"),
            ("postgresql://\(role.name)@[::1/x?password=\(password)", "", "IPv6 host address"),
            ("host=\(socket) user=\(role.name) password='\(password)", "", "unterminated quoted string"),
        ]
        var captured: [Captured] = []
        for (index, (url, extra, says)) in setups.enumerated() {
            let path = try configuration(url: url, databaseExtra: extra, mail: mail)
            for command in [["once", "--all"], ["check", "--json"], ["history", "--json"], ["jobs"], ["migrate"]] {
                let (result, output) = try run(command + ["--config", path])
                #expect(result.status == 69, "setup \(index) \(command): \(result.stderr)")
                #expect(
                    result.stderr.contains("database unavailable") && result.stderr.contains(says),
                    "setup \(index) \(command): \(result.stderr)")
                captured += output.map { Captured(label: "setup \(index): \($0.label)", text: $0.text) }
            }
        }
        expectNoSecrets(in: captured, secrets())
    }

    // MARK: The daemon

    @Test("the daemon mails a temporary password and runs every job without logging a secret")
    func daemon() async throws {
        try seed()
        let server = try TestSMTPServer.start(.init(requiredLogin: (smtpUser, smtpPassword)))
        defer { server.stop() }
        // The database password from the systemd credential, the SMTP one from password_file.
        let configPath = try configuration(
            mail: mailSection(server, passwordFile: directory + "/smtp-password"), fast: true)
        let log = directory + "/daemon.log"
        let pid = try ChildProcess.spawn(
            [Caretaker.path, "run", "--config", configPath], stdoutPath: log, stderrPath: log,
            environment: daemonEnvironment(["CREDENTIALS_DIRECTORY": directory + "/credentials"]))
        var exited: Int32?
        defer {
            if exited == nil {
                kill(pid, SIGKILL)
                _ = ChildProcess.wait(pid)
            }
        }

        try request("alice@example.org")
        let sent = try await eventually(timeout: .seconds(30)) {
            try db.count("SELECT count(*) FROM password_reset_requests WHERE status = 'sent'") == 1
        }
        #expect(sent, "the request was not sent: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        let everyJobRan = try await eventually(timeout: .seconds(30)) {
            try db.count("SELECT count(DISTINCT job) FROM caretaker.job_runs WHERE status = 'succeeded'") == 6
        }
        #expect(everyJobRan, "not every job ran under the daemon")
        kill(pid, SIGTERM)
        exited = await ChildProcess.exitStatus(of: pid, within: .seconds(30))
        #expect(exited == 0, "caretaker run exited \(String(describing: exited)) after SIGTERM")

        let mail = try #require(try server.waitForMessages(count: 1, timeout: .seconds(5)).first)
        let temporary = try temporaryPassword(in: mail)
        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(text.contains("temporary password sent"), "\(text)")
        var captured = [Captured(label: "the daemon's log", text: text)]
        for command in [["history", "--json"], ["check", "--json"]] {
            captured += try run(command + ["--config", configPath]).1
        }
        captured += try databaseContents()
        expectNoSecrets(in: captured, secrets(temporaryPasswords: [temporary]))
    }

    @Test("the daemon retrying an unreachable database does not log the password in its conninfo")
    func daemonWaitingForTheDatabase() async throws {
        // A URI libpq cannot parse and quotes back in its message, plus a password file.
        let path = try configuration(
            url: "postgresql://\(role.name):\(role.password)@[::1/x",
            databaseExtra: "password_file = \"\(directory)/db-password\"",
            mail: "[mail]\ntransport = \"file\"\ndirectory = \"\(directory)/mail\"")
        let log = directory + "/daemon-waiting.log"
        let pid = try ChildProcess.spawn(
            [Caretaker.path, "run", "--config", path], stdoutPath: log, stderrPath: log,
            environment: daemonEnvironment([:]))
        var exited: Int32?
        defer {
            if exited == nil {
                kill(pid, SIGKILL)
                _ = ChildProcess.wait(pid)
            }
        }
        let retried = try await eventually(timeout: .seconds(20)) {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.components(separatedBy: "database unavailable").count > 2
        }
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(retried, "expected two logged connection attempts: \(text)")
        kill(pid, SIGTERM)
        exited = await ChildProcess.exitStatus(of: pid, within: .seconds(30))
        #expect(exited == 0, "caretaker run exited \(String(describing: exited)) after SIGTERM")
        let final = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        expectNoSecrets(in: [Captured(label: "the waiting daemon's log", text: final)], secrets())
    }
}
