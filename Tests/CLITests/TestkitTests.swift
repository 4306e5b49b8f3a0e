import CaretakerCore
import CaretakerTestSupport
import Foundation
import Testing

/// `caretaker-testkit ready`, the bench's S1 tool, on the tests' own `NotifySocket`.
@Suite struct TestkitTests {
    /// `caretaker-testkit`, built beside `caretaker`.
    static var testkit: String {
        URL(fileURLWithPath: Caretaker.path).deletingLastPathComponent().appendingPathComponent("caretaker-testkit")
            .path
    }

    func testkit(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let directory = NSTemporaryDirectory() + "caretaker-testkit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let status = try ChildProcess.run(
            [Self.testkit] + arguments, stdoutPath: directory + "/out", stderrPath: directory + "/err")
        return (
            status, (try? String(contentsOfFile: directory + "/out", encoding: .utf8)) ?? "",
            (try? String(contentsOfFile: directory + "/err", encoding: .utf8)) ?? ""
        )
    }

    @Test(
        "partitioned-app-schema prints the reference schema with posts partitioned by created_at, which migrate completes; without a schema it exits 64"
    )
    func partitionedAppSchema() throws {
        let db = try TestDatabase(migrated: false)
        let result = try testkit(["partitioned-app-schema", "public"])
        #expect(result.status == 0, "\(result.stderr)")
        try db.connection.execute(script: result.stdout)
        #expect(
            try db.count(
                "SELECT count(*) FROM pg_class WHERE oid = 'posts'::regclass AND relkind = 'p' AND pg_get_partkeydef(oid) = 'RANGE (created_at)'"
            ) == 1)
        try db.connection.execute(
            script: "CREATE TABLE posts_all PARTITION OF posts FOR VALUES FROM (MINVALUE) TO (MAXVALUE)")
        try Migrator(appSchema: "public").migrate(on: db.connection)
        #expect(try SchemaReadiness.check(db.connection, appSchema: "public").isReady)
        #expect(try testkit(["partitioned-app-schema"]).status == 64)
    }

    @Test("ready times each start of caretaker run to its READY=1 and stops it")
    func ready() throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration()
        let result = try testkit(["ready", "2", Caretaker.path, "run", "--config", config])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 2, "\(result.stdout)")
        for line in lines {
            let milliseconds = Double(line)
            #expect(milliseconds != nil && milliseconds! > 0 && milliseconds! < 30_000, "\(result.stdout)")
        }
        // Each daemon was stopped and waited for: no process runs with this configuration.
        #expect(try ChildProcess.run(["/usr/bin/pgrep", "-f", config]) == 1)
    }

    @Test("ready refuses a bad command line (64) and a command it cannot start (1)")
    func readyUsage() throws {
        for arguments in [["ready"], ["ready", "0", "/bin/true"], ["ready", "two", "/bin/true"], ["ready", "1"]] {
            let result = try testkit(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("caretaker-testkit ready RUNS COMMAND..."), "\(result.stderr)")
        }
        let missing = try testkit(["ready", "1", "/nonexistent/caretaker"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("cannot start /nonexistent/caretaker"), "\(missing.stderr)")
    }
}
