import ArgumentParser
import CaretakerCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Caretaker {
    /// `caretaker history [--job NAME] [--status S] [--limit N] [--json]`
    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show recent runs from caretaker.job_runs.",
            discussion:
                "Exit status: 0 shown, 1 a database error, 64 bad usage (an unknown job or status), 69 database unavailable, 78 bad configuration."
        )

        @OptionGroup var common: CommonOptions

        @Option(help: "Only runs of this job.")
        var job: String?

        @Option(help: "Only runs with this status: \(RunStatus.allCases.map(\.rawValue).joined(separator: ", ")).")
        var status: String?

        @Option(help: "How many runs, newest first.")
        var limit = 20

        @Flag(help: "Print JSON instead of a table.")
        var json = false

        func validate() throws {
            if let status, RunStatus(rawValue: status) == nil {
                throw ValidationError(
                    "unknown status \"\(status)\"; valid: \(RunStatus.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            if limit < 1 { throw ValidationError("--limit must be at least 1") }
            // Checked while parsing, so that the message comes with the usage of `history`.
            if let job, let configuration = common.configurationIfValid(), configuration.job(named: job) == nil {
                throw ValidationError(unknownJob(job, in: configuration))
            }
        }

        func run() throws {
            try exiting {
                let configuration = try common.loadConfiguration()
                if let job, configuration.job(named: job) == nil {
                    throw Failure(.usage, unknownJob(job, in: configuration))
                }
                let connection = try common.connect(configuration)
                try common.noteStandby(connection)
                let records = try RunHistory(connection).recent(
                    .init(job: job, status: status.flatMap(RunStatus.init(rawValue:)), limit: limit))
                print(json ? Self.json(records) : Self.table(records))
                return .ok
            }
        }

        static func table(_ records: [RunRecord]) -> String {
            var table = TextTable(["ID", "JOB", "STATUS", "TRIGGER", "STARTED", "DURATION", "STATS", "ERROR"])
            for record in records {
                table.append([
                    "\(record.id)", record.job, record.status.rawValue + (record.dryRun ? " (dry run)" : ""),
                    record.trigger.rawValue, UTCTimestamp.iso(record.startedAt, milliseconds: true),
                    record.durationMilliseconds.map { "\($0)ms" } ?? "-",
                    compactStats(record.stats), record.error ?? "",
                ])
            }
            return table.render()
        }

        /// `{"posts_deleted": 3}` → `posts_deleted=3`
        static func compactStats(_ json: String) -> String {
            json.trimmed(where: { $0 == "{" || $0 == "}" })
                .replacing("\"", with: "")
                .replacing(": ", with: "=")
                .replacing(",", with: "")
        }

        static func json(_ records: [RunRecord]) -> String {
            let items = records.map { record in
                let fields: [String] = [
                    "\"id\": \(record.id)",
                    "\"job\": \(jsonString(record.job))",
                    "\"trigger\": \(jsonString(record.trigger.rawValue))",
                    "\"status\": \(jsonString(record.status.rawValue))",
                    "\"started_at\": \(jsonString(UTCTimestamp.iso(record.startedAt, milliseconds: true)))",
                    "\"finished_at\": \(record.finishedAt.map { jsonString(UTCTimestamp.iso($0, milliseconds: true)) } ?? "null")",
                    "\"duration_ms\": \(record.durationMilliseconds.map(String.init) ?? "null")",
                    "\"dry_run\": \(record.dryRun)",
                    "\"stats\": \(record.stats)",
                    "\"error\": \(record.error.map(jsonString) ?? "null")",
                    "\"host\": \(jsonString(record.host))",
                    "\"pid\": \(record.pid)",
                ]
                return "  {" + fields.joined(separator: ", ") + "}"
            }
            return "[\n" + items.joined(separator: ",\n") + (items.isEmpty ? "]" : "\n]")
        }
    }
}

func jsonString(_ value: String) -> String {
    LineLogHandler.jsonString(value)
}
