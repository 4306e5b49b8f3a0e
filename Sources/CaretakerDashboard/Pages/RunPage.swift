import CaretakerCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `/runs/ID`: one run's full record.
public enum RunPage {
    public static func render(_ run: RunRecord, now: Date) -> String {
        var body =
            "<h1>Run #\(run.id) of <a href=\"/jobs/\(HTML.urlComponent(run.job))\">\(HTML.escape(run.job))</a></h1>\n<dl class=\"run\">"
        func item(_ term: String, _ value: String) { body += "<dt>\(term)</dt><dd>\(value)</dd>" }
        item("Status", Fragments.status(run.status) + (run.dryRun ? " <span class=\"muted\">dry run</span>" : ""))
        item("Trigger", run.trigger.rawValue)
        item("Slot", Fragments.optionalTime(run.slot))
        item("Attempt", "\(run.attempt)")
        item(
            "Started",
            "\(HTML.escape(HTML.time(run.startedAt))) <span class=\"muted\">\(HTML.escape(HTML.relative(run.startedAt, now: now)))</span>"
        )
        item("Finished", Fragments.optionalTime(run.finishedAt))
        item(
            "Duration",
            run.duration.map { HTML.escape(HTML.duration($0)) } ?? "<span class=\"muted\">still running</span>")
        item("Host", HTML.escape(run.host))
        item("PID", "\(run.pid)")
        item("Backend PID", run.backendPID.map(String.init) ?? "<span class=\"muted\">–</span>")
        if let batches = run.counter("batches") { item("Batches", "\(batches)") }
        if let p99 = run.counter("batch_p99_ms") { item("Batch p99", "\(p99) ms") }
        if let max = run.counter("batch_max_ms") { item("Batch max", "\(max) ms") }
        body += "</dl>\n<h2>Stats</h2>\n"
        if run.counters.isEmpty {
            body += "<p class=\"muted\">none recorded</p>\n"
        } else {
            body += "<table class=\"stats\"><thead><tr><th>Counter</th><th>Value</th></tr></thead><tbody>"
            for counter in run.counters {
                body += "<tr><td>\(HTML.escape(counter.name))</td><td class=\"num\">\(counter.value)</td></tr>"
            }
            body += "</tbody></table>\n"
        }
        body += "<p class=\"muted\">As stored: <code>\(HTML.escape(run.stats))</code></p>\n"
        body += "<h2>Error</h2>\n"
        body += run.error.map { "<pre class=\"error\">\(HTML.escape($0))</pre>\n" } ?? "<p class=\"muted\">none</p>\n"
        return HTML.page(title: "Run #\(run.id)", now: now, body: body)
    }
}
