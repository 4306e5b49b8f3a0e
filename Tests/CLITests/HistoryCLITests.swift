import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

/// `caretaker history` and `jobs` over the typed run history: the times they print,
/// and a row this caretaker cannot read.
@Suite struct HistoryCLITests {
    @Test(
        "history prints UTC times with milliseconds, jobs with seconds; a status a newer caretaker wrote exits 1 naming the row"
    )
    func typedRows() throws {
        let db = try TestDatabase()
        let config = try db.writeConfiguration()
        #expect(try Caretaker.run(["once", "prune", "--config", config]).status == 0)
        let json = try Caretaker.run(["history", "--json", "--config", config])
        let runs = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let started = try #require(runs.first?["started_at"] as? String)
        #expect(started.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(started)")
        #expect(runs.first?["status"] as? String == "succeeded")
        let jobs = try Caretaker.run(["jobs", "--config", config])
        #expect(jobs.stdout.contains(/succeeded at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/), "\(jobs.stdout)")

        // A newer caretaker's migration widened the check and wrote a status this one does not know.
        try db.connection.execute(script: "ALTER TABLE caretaker.job_runs DROP CONSTRAINT job_runs_status_check")
        let id = try #require(
            try db.connection.query(
                "INSERT INTO caretaker.job_runs (job, trigger, status, host, pid) VALUES ('prune', 'manual', 'paused', 'h', 1) RETURNING id"
            ).first?.int64("id"))
        let history = try Caretaker.run(["history", "--config", config])
        #expect(history.status == 1, "\(history.stderr)")
        #expect(
            history.stderr.contains("run \(id) in the run history (job_runs) has status 'paused'"), "\(history.stderr)")
        #expect(history.stdout.isEmpty)
    }
}
