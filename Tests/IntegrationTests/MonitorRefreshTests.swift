import CaretakerTestSupport
import Foundation
import Logging
import Postgres
import Testing

@testable import CaretakerCore
@testable import CaretakerDatabase
@testable import CaretakerMonitoring

/// One refresh of the metrics and alerts against a real database: how many
/// statements it sends (the history is read once, whatever the number of jobs),
/// and that what it reads still makes the same metrics and alerts.
@Suite struct MonitorRefreshTests {
    /// A monitor with metrics (a textfile) and alerts (the file transport) over `jobs`
    /// hourly jobs: job0 succeeded, job1 failed, and job0 had a slot skipped.
    /// Returns the statements of a second refresh (the first records the alert
    /// states), the exposition after it, and the mails sent.
    func refresh(jobs: Int) throws -> (statements: Int, metrics: String, mails: Int) {
        let db = try TestDatabase()
        let scratch = NSTemporaryDirectory() + "caretaker-refresh-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: scratch + "/mail", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var text = """
            [metrics]
            textfile = "\(scratch)/caretaker.prom"

            [mail]
            transport = "file"
            directory = "\(scratch)/mail"
            from = "caretaker <caretaker@example.org>"

            [alerts]
            mail_to = "ops@example.org"


            """
        text += DaemonTests.disabledBuiltIns()
        for index in 0..<jobs { text += DaemonTests.sqlJob("job\(index)", schedule: "@hourly", sql: "SELECT 1") }
        let configuration = try db.configuration(text)
        // First: the skipped-slot counter counts rows from this process's start on.
        let monitor = try Monitor(configuration: configuration, isDaemon: true, logger: Logger(label: "refresh-test"))
        let recorder = RunRecorder(db.connection)
        let succeeded = try recorder.startRun(job: "job0", trigger: .manual, slot: nil, dryRun: false, attempt: 1)
        try recorder.finishRun(succeeded, status: .succeeded, stats: JobStats(), error: nil)
        if jobs > 1 {
            let failed = try recorder.startRun(job: "job1", trigger: .manual, slot: nil, dryRun: false, attempt: 1)
            try recorder.finishRun(failed, status: .failed, stats: JobStats(), error: "division by zero")
        }
        _ = try recorder.recordSkipped(
            job: "job0", trigger: .schedule, slot: Date(timeIntervalSince1970: 1_700_000_000), reason: "test")

        #expect(monitor.refreshesOnOwnConnection)
        monitor.refresh(on: db.connection)
        let before = db.connection.statementsSent
        monitor.refresh(on: db.connection)
        let statements = db.connection.statementsSent - before
        let mails = try FileManager.default.contentsOfDirectory(atPath: scratch + "/mail").count
        return (statements, String(decoding: monitor.metricsExposition(), as: UTF8.self), mails)
    }

    @Test(
        "a refresh sends the same four statements for one job as for five: the clock, every job's runs at once, the skipped slots, the alert states"
    )
    func oneReadPerRefresh() throws {
        let one = try refresh(jobs: 1)
        let five = try refresh(jobs: 5)
        #expect(one.statements == 4, "one job: \(one.statements) statements")
        #expect(five.statements == 4, "five jobs: \(five.statements) statements")

        // What the reads make of the history is what it was before.
        #expect(MonitoringTests.value("caretaker_job_healthy{job=\"job0\"}", in: five.metrics) == 1, "\(five.metrics)")
        #expect(MonitoringTests.value("caretaker_job_healthy{job=\"job1\"}", in: five.metrics) == 0)
        // Never ran, within its grace: healthy.
        #expect(MonitoringTests.value("caretaker_job_healthy{job=\"job4\"}", in: five.metrics) == 1)
        #expect(
            MonitoringTests.value("caretaker_job_last_success_timestamp_seconds{job=\"job0\"}", in: five.metrics) ?? 0
                > 1_700_000_000)
        #expect(
            MonitoringTests.value("caretaker_job_last_success_timestamp_seconds{job=\"job1\"}", in: five.metrics) == nil
        )
        #expect(
            MonitoringTests.value("caretaker_job_last_run_timestamp_seconds{job=\"job1\"}", in: five.metrics) ?? 0
                > 1_700_000_000)
        #expect(five.metrics.contains("skipped_slots_total{job=\"job0\""), "\(five.metrics)")
        #expect(MonitoringTests.value("caretaker_database_up", in: five.metrics) == 1)
        // One alert for the failed job, from the first refresh; the second sends nothing more.
        #expect(five.mails == 1)
        #expect(one.mails == 0)
    }
}
