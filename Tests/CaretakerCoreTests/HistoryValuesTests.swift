import Foundation
import Testing

@testable import CaretakerCore
@testable import CaretakerDatabase

/// The history's values apart from the database: run statuses and triggers as the
/// table stores them, and times as caretaker prints them.
@Suite struct HistoryValuesTests {
    @Test("statuses and triggers read from their stored text; anything else is refused with the row named")
    func storedText() throws {
        for status in RunStatus.allCases { #expect(try RunStatus(stored: status.rawValue, runID: 1) == status) }
        for trigger in RunTrigger.allCases { #expect(try RunTrigger(stored: trigger.rawValue, runID: 1) == trigger) }
        #expect(try RunTrigger(stored: "catch-up", runID: 1) == .catchUp)
        #expect(throws: UnknownHistoryValue(column: "status", value: "Succeeded", runID: 7)) {
            try RunStatus(stored: "Succeeded", runID: 7)
        }
        #expect(throws: UnknownHistoryValue(column: "trigger", value: "NULL", runID: 8)) {
            try RunTrigger(stored: nil, runID: 8)
        }
    }

    @Test("UTC timestamps: whole seconds, milliseconds cut not rounded, the mail's form, and before 1970")
    func timestamps() {
        let date = Date(timeIntervalSince1970: 1_795_618_805.9999)
        #expect(UTCTimestamp.iso(date) == "2026-11-25T15:00:05Z")
        #expect(UTCTimestamp.iso(date, milliseconds: true) == "2026-11-25T15:00:05.999Z")
        #expect(UTCTimestamp.readable(date) == "2026-11-25 15:00:05 UTC")
        #expect(UTCTimestamp.iso(Date(timeIntervalSince1970: 0), milliseconds: true) == "1970-01-01T00:00:00.000Z")
        #expect(UTCTimestamp.iso(Date(timeIntervalSince1970: -0.5), milliseconds: true) == "1969-12-31T23:59:59.500Z")
    }

    @Test("a run's duration in milliseconds is rounded, and nil while it runs")
    func duration() {
        var run = RunRecord(
            id: 1, job: "j", trigger: .manual, status: .running, slot: nil, attempt: 1,
            startedAt: Date(timeIntervalSince1970: 100), finishedAt: nil, dryRun: false, counters: [], stats: "{}",
            error: nil, host: "h", pid: 1, backendPID: nil)
        #expect(run.durationMilliseconds == nil)
        run.finishedAt = Date(timeIntervalSince1970: 101.2346)
        #expect(run.durationMilliseconds == 1235)
    }
}
