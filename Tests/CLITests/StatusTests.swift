import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

/// `caretaker status`, end to end through the binary.
@Suite struct StatusTests {
    static let jobs = """
        [jobs.expire-content]
        enabled = false
        [jobs.logout-inactive]
        enabled = false
        [jobs.send-temp-passwords]
        enabled = false
        [jobs.leader-succession]
        enabled = false

        [jobs.broken]
        schedule = "@hourly"
        sql = "SELECT 1/0"
        """

    @Test("status: health, last run, counters, next slot, a run going on elsewhere, database and schema; --json too")
    func statusScreenAndJSON() throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration(Self.jobs)
        #expect(try Caretaker.run(["once", "prune", "--config", config]).status == 0)
        #expect(try Caretaker.run(["once", "broken", "--config", config]).status == 1)
        // A run that another host is in the middle of: its row and its lock, held by another session.
        let holder = try TemporaryPostgres.shared.connect(database: db.name)
        try holder.query("SELECT pg_advisory_lock(caretaker.job_lock_key('prune'))")
        try db.connection.query(
            """
            INSERT INTO caretaker.job_runs (job, trigger, status, started_at, host, pid)
            VALUES ('prune', 'schedule', 'running', clock_timestamp() - interval '90 seconds', 'other-host', 4242)
            """)

        let result = try Caretaker.run(["status", "--config", config])
        #expect(result.status == 0, "\(result.stderr)")
        let screen = result.stdout
        #expect(screen.contains("× caretaker: 1 of 2 enabled jobs healthy, 1 running"), "\(screen)")
        #expect(screen.contains("Database: \(db.name) (PostgreSQL "))
        #expect(screen.contains("primary"))
        #expect(screen.contains("Schema: version \(Migration.all.last!.version) (up to date)"))
        let lines = screen.split(separator: "\n").map(String.init)
        let prune = try #require(lines.first { $0.hasPrefix("prune ") })
        #expect(prune.contains("ok"))
        #expect(prune.contains("succeeded #"))
        #expect(prune.contains("(manual)"))
        #expect(prune.contains("runs_deleted=0"))
        #expect(prune.contains("on other-host pid 4242 for 1m"), "\(prune)")
        let broken = try #require(lines.first { $0.hasPrefix("broken ") })
        #expect(broken.contains("UNHEALTHY"))
        #expect(broken.contains("failed #"))
        #expect(broken.contains(":00:00  "), "the next @hourly slot: \(broken)")
        #expect(lines.first { $0.hasPrefix("expire-content ") }?.contains("disabled") == true)
        #expect(screen.contains("broken: last run failed: "))
        #expect(screen.contains("division by zero"))

        let json = try Caretaker.run(["status", "--json", "--config", config])
        #expect(json.status == 0)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
        #expect(object["healthy"] as? Bool == false)
        #expect((object["schema"] as? [String: Any])?["pending"] as? Int == 0)
        #expect((object["database"] as? [String: Any])?["in_recovery"] as? Bool == false)
        let jobs = try #require(object["jobs"] as? [[String: Any]])
        let pruneJSON = try #require(jobs.first { $0["job"] as? String == "prune" })
        #expect(pruneJSON["healthy"] as? Bool == true)
        #expect(((pruneJSON["last_run"] as? [String: Any])?["stats"] as? [String: Any])?["runs_deleted"] as? Int == 0)
        let running = try #require((pruneJSON["running"] as? [[String: Any]])?.first)
        #expect(running["host"] as? String == "other-host")
        #expect(running["pid"] as? Int == 4242)
        #expect(running["alive"] as? Bool == true)
        let brokenJSON = try #require(jobs.first { $0["job"] as? String == "broken" })
        #expect(brokenJSON["healthy"] as? Bool == false)
        #expect((brokenJSON["last_run"] as? [String: Any])?["status"] as? String == "failed")
        #expect(brokenJSON["next_slot"] is String)
        #expect(jobs.first { $0["job"] as? String == "logout-inactive" }?["enabled"] as? Bool == false)

        // The holder goes: the row's process is gone, and status says so.
        try holder.query("SELECT pg_advisory_unlock_all()")
        #expect(try Caretaker.run(["status", "--config", config]).stdout.contains("(its process is gone)"))
    }

    @Test("status on a database caretaker never migrated says so; an unreachable database exits 69")
    func statusBeforeMigrate() throws {
        let db = try TestDatabase(migrated: false)
        let result = try Caretaker.run(["status", "--config", db.writeConfiguration(Self.jobs)])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Schema: not migrated: run `caretaker migrate`"), "\(result.stdout)")
        let json = try Caretaker.run(["status", "--json", "--config", db.writeConfiguration(Self.jobs)])
        #expect(json.stdout.contains("\"version\": 0"))

        let unreachable = NSTemporaryDirectory() + "caretaker-status-\(UUID().uuidString).toml"
        try
            "[database]\nurl = \"postgresql:///nowhere?host=/nonexistent&connect_timeout=1\"\nconnect_timeout = \"1s\"\n"
            .write(toFile: unreachable, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: unreachable) }
        #expect(try Caretaker.run(["status", "--config", unreachable]).status == 69)
    }
}
