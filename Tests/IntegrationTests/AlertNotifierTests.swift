import CaretakerTestSupport
import Foundation
import Logging
import Testing

@testable import CaretakerCore
@testable import CaretakerDatabase
@testable import CaretakerJobs
@testable import CaretakerMonitoring

/// `AlertNotifier` against a real database, with the file mail transport: what it
/// sends when another instance changes an alert state while it reads.
@Suite struct AlertNotifierTests {
    @Test(
        "readings older than another instance's alert send no recovery: the alert states are read before the readings"
    )
    func staleReadingsDoNotUndoANewerAlert() throws {
        let db = try TestDatabase()
        let mail = NSTemporaryDirectory() + "caretaker-alert-mail-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: mail, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: mail) }
        let configuration = try db.configuration(
            """
            [mail]
            transport = "file"
            directory = "\(mail)"
            from = "caretaker <caretaker@example.org>"

            [alerts]
            mail_to = "ops@example.org"

            """)
        let notifier = try AlertNotifier(configuration: configuration, logger: Logger(label: "alert-notifier-test"))
        let store = AlertStates(db.connection)
        // The job has been healthy, and the shared state says so.
        #expect(try store.claimChange(job: "prune", from: nil, to: .healthy, cause: nil) != nil)
        let healthyBeforeTheFailure = HistoryReadings(jobs: [
            .init(
                name: "prune",
                health: JobHealth(
                    job: "prune", healthy: true, reason: "", lastStatus: .succeeded, lastSuccessAt: nil),
                lastSuccess: nil, lastRun: nil)
        ])
        let (stored, readings) = try notifier.statesThenReadings(on: db.connection) {
            // While this instance reads the history (from before the job's next run
            // failed), another one saw the failure and alerted.
            _ = try store.claimChange(job: "prune", from: .healthy, to: .unhealthy, cause: "last run failed")
            return healthyBeforeTheFailure
        }
        try notifier.evaluate(readings, stored: stored, on: db.connection)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: mail).isEmpty,
            "a recovery was mailed from readings older than the alert")
        #expect(try store.all()["prune"] == .unhealthy)
    }
}
