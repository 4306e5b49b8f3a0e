import ArgumentParser
import CaretakerCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Caretaker {
    /// `caretaker status`: one screen like `systemctl status` plus `list-timers`.
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show each job's health, last run, next slot and what is running where; the database and schema.",
            discussion:
                "Exit status: 0 shown (healthy or not: `check` is the probe), 64 bad usage, 69 database unavailable, 78 bad configuration."
        )

        @OptionGroup var common: CommonOptions

        @Flag(help: "Print JSON instead of the screen.")
        var json = false

        func run() throws {
            try exiting {
                let configuration = try common.loadConfiguration()
                let connection = try common.connect(configuration)
                let report = try StatusReport.read(connection, configuration: configuration)
                var text = json ? Self.json(report) : Self.screen(report)
                // The daemon keeps its jobs running when [metrics] listen cannot bind: say so here.
                if !json, let address = ListenAddress(metrics: configuration.metrics.listen) {
                    let probe = MetricsProbe.probe(address)
                    text += "\n\n" + (probe.ok ? "Metrics: " : "Metrics PROBLEM: ") + probe.detail
                }
                print(text)
                return .ok
            }
        }

        static func screen(_ report: StatusReport) -> String {
            let enabled = report.jobs.filter(\.enabled)
            let running = enabled.flatMap(\.running)
            let unhealthy = report.unhealthyJobs
            var lines = [
                "\(unhealthy.isEmpty ? "●" : "×") caretaker: \(enabled.count - unhealthy.count) of \(enabled.count) enabled jobs healthy, "
                    + "\(running.count) running",
                "  Database: \(report.database.name) (PostgreSQL \(report.database.serverVersion), "
                    + "\(report.database.inRecovery ? "standby: jobs cannot write here" : "primary"))",
                "    Schema: " + schemaText(report.schema),
                "       Now: \(Jobs.format(report.now)) (database clock)",
                "",
            ]
            var table = TextTable([
                "JOB", "HEALTH", "LAST RUN", "AGE", "DURATION", "COUNTERS", "NEXT SLOT (UTC)", "RUNNING NOW",
            ])
            for job in report.jobs {
                let last = job.lastRun
                table.append([
                    job.name,
                    !job.enabled ? "disabled" : job.health.map { $0.healthy ? "ok" : "UNHEALTHY" } ?? "-",
                    last.map { "\($0.status.rawValue) #\($0.id) (\($0.trigger.rawValue))" } ?? "never",
                    last.map { StatusReport.age(report.now.timeIntervalSince($0.startedAt)) + " ago" } ?? "-",
                    last?.durationMilliseconds.map { "\($0)ms" } ?? "-",
                    last.map { History.compactStats($0.stats) }.flatMap { $0.isEmpty ? nil : $0 } ?? "-",
                    job.nextSlot.map(Jobs.format) ?? "-",
                    job.running.isEmpty
                        ? "-" : job.running.map { runningText($0, now: report.now) }.joined(separator: "; "),
                ])
            }
            lines.append(table.render())
            if !unhealthy.isEmpty {
                lines.append("")
                lines.append("Problems (see `caretaker history --job NAME`):")
                for job in unhealthy { lines.append("  \(job.name): \(job.health?.reason ?? "")") }
            }
            return lines.joined(separator: "\n")
        }

        static func schemaText(_ schema: StatusReport.Schema) -> String {
            if schema.version == 0 { return "not migrated: run `caretaker migrate`" }
            if let problem = schema.problem { return "version \(schema.version); \(problem); no job runs until then" }
            if schema.pending > 0 {
                return "version \(schema.version), \(schema.pending) migration(s) pending: run `caretaker migrate`"
            }
            return "version \(schema.version) (up to date)"
        }

        static func runningText(_ going: RunHistory.Going, now: Date) -> String {
            let run = going.run
            return
                "#\(run.id) on \(run.host) pid \(run.pid) for \(StatusReport.age(now.timeIntervalSince(run.startedAt)))"
                + (going.alive ? "" : " (its process is gone)")
        }

        static func json(_ report: StatusReport) -> String {
            func string(_ value: String?) -> String { value.map(jsonString) ?? "null" }
            let jobs = report.jobs.map { job -> String in
                let last =
                    job.lastRun.map { run in
                        "{\"id\": \(run.id), \"status\": \(jsonString(run.status.rawValue)), "
                            + "\"trigger\": \(jsonString(run.trigger.rawValue)), "
                            + "\"started_at\": \(jsonString(UTCTimestamp.iso(run.startedAt))), "
                            + "\"age_seconds\": \(Int(report.now.timeIntervalSince(run.startedAt))), "
                            + "\"duration_ms\": \(run.durationMilliseconds.map(String.init) ?? "null"), \"stats\": \(run.stats), "
                            + "\"error\": \(string(run.error)), \"host\": \(jsonString(run.host)), \"pid\": \(run.pid)}"
                    } ?? "null"
                let running = job.running.map { going in
                    let run = going.run
                    return "{\"id\": \(run.id), \"host\": \(jsonString(run.host)), \"pid\": \(run.pid), "
                        + "\"started_at\": \(jsonString(UTCTimestamp.iso(run.startedAt))), "
                        + "\"running_seconds\": \(Int(report.now.timeIntervalSince(run.startedAt))), \"alive\": \(going.alive)}"
                }
                return
                    "    {\"job\": \(jsonString(job.name)), \"enabled\": \(job.enabled), \"schedule\": \(jsonString(job.schedule)), "
                    + "\"healthy\": \(job.health.map { "\($0.healthy)" } ?? "null"), \"health\": \(string(job.health?.reason)), "
                    + "\"last_run\": \(last), \"next_slot\": \(string(job.nextSlot.map(Jobs.format))), "
                    + "\"running\": [\(running.joined(separator: ", "))], \"alert_state\": \(string(job.alertState?.rawValue))}"
            }
            let database =
                "{\"name\": \(jsonString(report.database.name)), \"server_version\": \(jsonString(report.database.serverVersion)), "
                + "\"in_recovery\": \(report.database.inRecovery)}"
            let schema =
                "{\"version\": \(report.schema.version), \"latest\": \(report.schema.latest), \"pending\": \(report.schema.pending), "
                + "\"problem\": \(string(report.schema.problem))}"
            return
                "{\n  \"now\": \(jsonString(Jobs.format(report.now))),\n  \"healthy\": \(report.unhealthyJobs.isEmpty),\n"
                + "  \"database\": \(database),\n  \"schema\": \(schema),\n  \"jobs\": [\n"
                + jobs.joined(separator: ",\n") + "\n  ]\n}"
        }
    }
}
