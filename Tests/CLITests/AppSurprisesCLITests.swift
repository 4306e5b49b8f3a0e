import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The commands against a streaming standby, and configuration that must stop
/// `once` with exit 78 before it touches anything.
@Suite struct AppSurprisesCLITests {
    /// A migrated database, as the standby has replayed it, with a `jobs.toml` pointing at the standby.
    static func standbyConfiguration(_ test: String = #function) throws -> (TestDatabase, String) {
        let db = try TestDatabase(test)
        _ = try db.runSucceeding("prune")
        let standby = try TemporaryPostgres.shared.standbyConninfo(database: db.name)
        // Wait until the standby has replayed the run too.
        _ = try eventually(timeout: .seconds(30)) {
            let connection = try Postgres.Connection(.init(conninfo: standby))
            return try connection.query("SELECT count(*) AS n FROM caretaker.job_runs").first?.int("n") == 1
        }
        let path = db.scratchPath("standby.toml")
        try "[database]\nurl = \"\(standby)\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        return (db, path)
    }

    @Test("against a standby: check exits 1 naming it, once and migrate exit 69, history and jobs read it")
    func standbyCommands() throws {
        let (_, path) = try Self.standbyConfiguration()
        let check = try Caretaker.run(["check", "--config", path])
        #expect(check.status == 1, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("the database is a standby (in recovery)"), "\(check.stdout)")
        for command in [["once", "prune"], ["once", "--all"], ["migrate"]] {
            let result = try Caretaker.run(command + ["--config", path])
            #expect(result.status == 69, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("the database is a standby (in recovery)"), "\(command): \(result.stderr)")
            #expect(result.stderr.contains("target_session_attrs=read-write"), "\(command): \(result.stderr)")
        }
        let history = try Caretaker.run(["history", "--config", path])
        #expect(history.status == 0, "\(history.stderr)")
        #expect(history.stdout.contains("prune"), "\(history.stdout)")
        #expect(history.stderr.contains("the database is a standby"), "\(history.stderr)")
        let jobs = try Caretaker.run(["jobs", "--config", path])
        #expect(jobs.status == 0, "\(jobs.stderr)")
        #expect(jobs.stdout.contains("succeeded at"), "\(jobs.stdout)")
    }

    @Test("the daemon on a standby waits and says why")
    func standbyDaemon() async throws {
        let (_, path) = try Self.standbyConfiguration()
        let daemon = try DaemonProcess(config: path)
        defer { daemon.kill9() }
        let lines = await daemon.waitForLog(containing: "the database is a standby", timeout: .seconds(30))
        #expect(lines?.first?.contains("database unavailable; retrying") == true, "\(daemon.log)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(30)) == 0)
    }

    @Test("a NUL byte in operator SQL: once exits 78 and deletes nothing (it used to delete every row)")
    func nulInSQL() throws {
        let db = try TestDatabase()
        try db.connection.execute(
            script: """
                CREATE TABLE invitations (id serial PRIMARY KEY, event_at timestamptz NOT NULL);
                INSERT INTO invitations (event_at) SELECT now() + g * interval '1 day' FROM generate_series(1, 10) g;
                """)
        let path = try db.writeConfiguration(
            """
            [jobs.old-invitations]
            schedule = "@daily"
            sql = "DELETE FROM invitations\\u0000 WHERE event_at < now()"
            """)
        let result = try Caretaker.run(["once", "old-invitations", "--config", path])
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains("\(path):6: jobs.old-invitations.sql: contains a NUL byte"), "\(result.stderr)")
        #expect(try db.count("SELECT count(*) FROM invitations") == 10)
    }

    @Test("a NUL byte in a secret file exits 78 naming the key and the file")
    func nulInSecret() throws {
        let db = try TestDatabase()
        let secret = db.scratchPath("secret")
        try "hunter\u{0}two\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let path = db.scratchPath("secret.toml")
        try "[database]\nurl = \"\(db.conninfo)\"\npassword_file = \"\(secret)\"\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        let result = try Caretaker.run(["once", "prune", "--config", path])
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains("database.password_file \(secret) contains a NUL byte"), "\(result.stderr)")
        #expect(!result.stderr.contains("hunter"), "the secret leaked: \(result.stderr)")
    }

    @Test(
        "broken mail configuration stops once with 78 naming the key",
        arguments: [
            ("password_file = \"/nonexistent/smtp-password\"\nstarttls = true", "mail.password_file"),
            ("url = \"smtp://mail example.org\"", "mail.url"),
        ])
    func brokenMail(keys: String, names key: String) throws {
        let db = try TestDatabase()
        let path = try db.writeConfiguration("[mail]\n\(keys)\n")
        let result = try Caretaker.run(["once", "send-temp-passwords", "--config", path])
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains("configuration error: ") && result.stderr.contains(key), "\(result.stderr)")
    }

    @Test("smtp:// with a username and no STARTTLS loads with allow_plaintext_auth = true (a relay on loopback)")
    func plaintextAuthAllowed() throws {
        let db = try TestDatabase()
        let configuration = try db.configuration("[mail]\nusername = \"mailer\"\nallow_plaintext_auth = true\n")
        #expect(configuration.mail.allowPlaintextAuth)
        #expect(throws: ConfigurationError.self) {
            try db.configuration("[mail]\nurl = \"smtp://mailer:secret@127.0.0.1:25\"\n")
        }
    }
}
