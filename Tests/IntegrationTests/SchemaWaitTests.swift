import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

/// `caretaker run` on a schema with a migration pending: it does not exit, runs no
/// job, says what is missing once in its log and in its systemd status, and starts
/// the jobs once `migrate` has run.
@Suite struct SchemaWaitTests {
    @Test(
        "run waits for pending migrations, logs it once, says so in STATUS=, and starts the jobs once migrate has run")
    func runWaitsForMigrate() async throws {
        let db = try TestDatabase()
        try db.connection.execute(script: "DELETE FROM caretaker.schema_migrations WHERE version >= 10")
        let config = try db.writeConfiguration(
            DaemonTests.disabledBuiltIns() + DaemonTests.sqlJob("tick", sql: "SELECT 1"))
        let notify = try NotifySocket()
        let daemon = try DaemonProcess(config: config, environment: ["NOTIFY_SOCKET": notify.path])
        defer { if !daemon.hasExited { daemon.kill9() } }
        let waiting = try #require(await notify.waitFor("STATUS=waiting for caretaker's schema"), "\(daemon.log)")
        #expect(
            waiting.text.contains(
                "2 migration(s) pending (10 (pack looks), 11 (pack likes index without deduplication))"))
        #expect(!waiting.text.contains("READY=1"))
        // Two more looks at the schema (every 5 s): still one log line, no run, still running.
        try await Task.sleep(for: .seconds(11))
        #expect(!daemon.hasExited, "\(daemon.log)")
        #expect(daemon.lines(containing: "waiting for caretaker's schema").count == 1, "\(daemon.log)")
        #expect(daemon.lines(containing: "database unavailable").isEmpty, "\(daemon.log)")
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs") == 0)
        #expect(daemon.lines(containing: "msg=ready").isEmpty)

        try Migrator(appSchema: "public").migrate(on: db.connection)
        #expect(
            await daemon.waitForLog(containing: "caretaker's schema is complete now", timeout: .seconds(10)) != nil,
            "\(daemon.log)")
        #expect(await notify.waitFor("READY=1") != nil, "\(daemon.log)")
        #expect(await daemon.waitForLog(containing: "msg=\"run finished\" job=tick") != nil, "\(daemon.log)")
        await DaemonTests.stop(daemon)
    }
}
