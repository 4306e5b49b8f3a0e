import CaretakerCore
import CaretakerTestSupport
import Foundation
import Testing

/// `check`, `once` and `run` through a real PgBouncer, with caretaker its only client.
@Suite final class PoolerTests {
    let db: TestDatabase
    /// The configuration and the mail files of one test.
    let directory: String

    init() throws {
        db = try TestDatabase()
        directory = NSTemporaryDirectory() + "caretaker-pooler-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A `jobs.toml` for the test database through `bouncer`; mail goes to files.
    func configuration(
        through bouncer: TestPgBouncer, connectTimeout: String = "5s", extra: String = ""
    ) throws -> (path: String, text: String) {
        let text = """
            [database]
            url = "\(bouncer.conninfo(database: db.name))"
            connect_timeout = "\(connectTimeout)"

            [mail]
            transport = "file"
            directory = "\(directory)/mail"

            \(extra)
            """
        let path = directory + "/jobs.toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return (path, text)
    }

    @Test("transaction mode: check exits 1 naming the pooler and the fix")
    func checkReportsTransactionMode() throws {
        let bouncer = try TestPgBouncer(poolMode: .transaction)
        let (path, _) = try configuration(through: bouncer)
        let result = try Caretaker.run(["check", "--config", path])
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let line = result.stdout.split(separator: "\n").first { $0.hasPrefix("session pooling") }
        #expect(line?.contains("PROBLEM") == true, "\(result.stdout)")
        #expect(line?.contains("pooler in transaction or statement mode") == true, "\(result.stdout)")
        #expect(line?.contains("set pool_mode = session") == true)
        #expect(line?.contains("connect caretaker to PostgreSQL directly") == true)
        let json = try Caretaker.run(["check", "--json", "--config", path])
        #expect(json.status == 1)
        #expect(json.stdout.contains("\"check\": \"session pooling\", \"ok\": false"), "\(json.stdout)")
    }

    @Test("session mode: check exits 0 and once --all runs every job")
    func sessionModeRunsEverything() throws {
        try db.connection.query(
            "INSERT INTO users (email, display_name, password_hash) VALUES ('alice@example.org', 'Alice', 'h')")
        try db.connection.query("INSERT INTO password_reset_requests (email) VALUES ('alice@example.org')")
        let bouncer = try TestPgBouncer(poolMode: .session)
        let (path, text) = try configuration(through: bouncer)
        let check = try Caretaker.run(["check", "--config", path])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("through a pooler in session mode"), "\(check.stdout)")
        let once = try Caretaker.run(["once", "--all", "--config", path])
        #expect(once.status == 0, "\(once.stdout)\(once.stderr)")
        #expect(!once.stderr.contains("level=warning"), "\(once.stderr)")
        let enabled = try ConfigurationLoader.parse(text, file: path).jobs.filter(\.enabled).count
        #expect(
            try db.count("SELECT count(*) FROM caretaker.job_runs WHERE status = 'succeeded'") == enabled,
            "\(once.stdout)")
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs WHERE status <> 'succeeded'") == 0)
        let mails = try FileManager.default.contentsOfDirectory(atPath: directory + "/mail")
        #expect(mails.count == 1, "send-temp-passwords mailed through the pooler")
    }

    @Test("transaction mode: once warns and still runs")
    func onceWarnsInTransactionMode() throws {
        let bouncer = try TestPgBouncer(poolMode: .transaction)
        let (path, _) = try configuration(through: bouncer)
        let result = try Caretaker.run(["once", "prune", "--config", path])
        let warning = result.stderr.split(separator: "\n").first { $0.contains("level=warning") }
        #expect(warning?.contains("pooler in transaction or statement mode") == true, "\(result.stderr)")
        #expect(warning?.contains("running anyway") == true)
        #expect(
            try db.count("SELECT count(*) FROM caretaker.job_runs WHERE job = 'prune'") == 1,
            "\(result.stdout)\(result.stderr)")
    }

    @Test("transaction mode: run refuses to start and exits 78 with the same message")
    func runRefusesTransactionMode() async throws {
        let bouncer = try TestPgBouncer(poolMode: .transaction)
        let (path, _) = try configuration(through: bouncer)
        let daemon = try DaemonProcess(config: path)
        let status = await daemon.waitForExit(timeout: .seconds(60))
        #expect(status == 78, "\(daemon.logLines.joined(separator: "\n"))")
        let refusal = daemon.lines(containing: "level=error", "refusing to start")
        #expect(refusal.count == 1, "\(daemon.logLines.joined(separator: "\n"))")
        #expect(refusal.first?.contains("pooler in transaction or statement mode") == true)
        #expect(refusal.first?.contains("set pool_mode = session") == true)
        #expect(daemon.lines(containing: "msg=ready").isEmpty)
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs") == 0, "no job ran")
    }

    @Test(
        "a pool too small for a second connection: check exits 1 saying it could not tell, after connect_timeout",
        .timeLimit(.minutes(1)))
    func checkCannotTell() throws {
        let bouncer = try TestPgBouncer(poolMode: .session, poolSize: 1)
        let (path, _) = try configuration(through: bouncer, connectTimeout: "2s")
        let result = try Caretaker.run(["check", "--config", path])
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let line = result.stdout.split(separator: "\n").first { $0.hasPrefix("session pooling") }
        #expect(line?.contains("PROBLEM") == true, "\(result.stdout)")
        #expect(
            line?.contains(
                "could not tell whether a pooler shares server sessions between connections: "
                    + "a second connection got no answer: no answer from the server within 2 s") == true,
            "\(result.stdout)")
    }

    @Test(
        "a pool too small for a second connection: run warns that it could not tell, and starts",
        .timeLimit(.minutes(2)))
    func runStartsWhenItCannotTell() async throws {
        let bouncer = try TestPgBouncer(poolMode: .session, poolSize: 1)
        // No job may wait for the one server connection, which the daemon's own holds.
        let jobs = try ConfigurationLoader.parse("", file: "none.toml").jobNames
        let (path, _) = try configuration(
            through: bouncer, connectTimeout: "2s",
            extra: jobs.map { "[jobs.\($0)]\nenabled = false\n" }.joined(separator: "\n"))
        let daemon = try DaemonProcess(config: path)
        let ready = await daemon.waitForLog(containing: "msg=ready", timeout: .seconds(60))
        #expect(ready != nil, "\(daemon.logLines.joined(separator: "\n"))")
        #expect(
            daemon.lines(containing: "level=warning", "could not tell whether a pooler shares server sessions").count
                == 1,
            "\(daemon.logLines.joined(separator: "\n"))")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(60)) == 0)
    }

    @Test("session mode: run starts (no false alarm) and stops cleanly")
    func runStartsInSessionMode() async throws {
        let bouncer = try TestPgBouncer(poolMode: .session)
        let (path, _) = try configuration(through: bouncer)
        let daemon = try DaemonProcess(config: path)
        let ready = await daemon.waitForLog(containing: "msg=ready", timeout: .seconds(60))
        #expect(ready != nil, "\(daemon.logLines.joined(separator: "\n"))")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: .seconds(60)) == 0)
        #expect(daemon.lines(containing: "refusing to start").isEmpty)
    }
}
