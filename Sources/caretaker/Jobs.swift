import ArgumentParser
import CaretakerCore
import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Caretaker {
    /// `caretaker jobs`: each job's schedule, time zone, next run and last run.
    struct Jobs: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List jobs: schedule, enabled, next run, last run.",
            discussion:
                "Exit status: 0 listed, 1 a database error, 64 bad usage, 69 database unavailable, 78 bad configuration."
        )

        @OptionGroup var common: CommonOptions

        @Flag(help: "Print JSON instead of a table.")
        var json = false

        func run() throws {
            try exiting {
                let configuration = try common.loadConfiguration()
                let connection = try common.connect(configuration)
                try common.noteStandby(connection)
                let now = try DatabaseClock.now(connection)
                let history = RunHistory(connection)
                var table = TextTable(["JOB", "ENABLED", "SCHEDULE", "TIMEZONE", "NEXT RUN (UTC)", "LAST RUN"])
                var items: [String] = []
                for job in configuration.jobs {
                    let next = job.enabled ? job.schedule.nextDate(after: now).map(Self.format) ?? "never" : "-"
                    let last = try history.latest(.anyRow, job: job.name).map {
                        (status: $0.status.rawValue, startedAt: UTCTimestamp.iso($0.startedAt))
                    }
                    let lastText = last.map { "\($0.status) at \($0.startedAt)" } ?? "never"
                    table.append([
                        job.name, job.enabled ? "yes" : "no", job.schedule.text,
                        job.timeZoneName, next, lastText,
                    ])
                    items.append(
                        "  {\"job\": \(jsonString(job.name)), \"enabled\": \(job.enabled), "
                            + "\"schedule\": \(jsonString(job.schedule.text)), \"timezone\": \(jsonString(job.timeZoneName)), "
                            + "\"next_run\": \(jsonString(next)), \"last_status\": \(last.map { jsonString($0.status) } ?? "null"), "
                            + "\"last_started_at\": \(last.map { jsonString($0.startedAt) } ?? "null")}")
                }
                print(json ? "[\n" + items.joined(separator: ",\n") + "\n]" : table.render())
                return .ok
            }
        }

        static func format(_ date: Date) -> String {
            date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false))
        }
    }
}
