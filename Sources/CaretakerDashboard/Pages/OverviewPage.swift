import CaretakerCore

/// `/`: every configured job with its health, last run and next slot; the
/// timeline of the window; each job's main counters per hour.
public enum OverviewPage {
    public static func render(_ overview: Overview) -> String {
        var body =
            "<h1>Jobs</h1>\n<table class=\"jobs\">\n<thead><tr><th>Job</th><th>Health</th><th>Last run</th><th>Next slot</th><th>Schedule</th></tr></thead>\n<tbody>\n"
        for job in overview.jobs {
            body += "<tr data-job=\"\(HTML.escape(job.name))\">"
            body += "<td><a href=\"/jobs/\(HTML.urlComponent(job.name))\">\(HTML.escape(job.name))</a></td>"
            body += "<td>\(Fragments.health(job))</td>"
            body +=
                "<td>\(job.lastRun.map { Fragments.lastRun($0, now: overview.now) } ?? "<span class=\"muted\">never</span>")</td>"
            body +=
                "<td>\(job.nextSlot.map { "\(HTML.escape(HTML.time($0)))<br><span class=\"muted\">\(HTML.escape(HTML.relative($0, now: overview.now)))</span>" } ?? "<span class=\"muted\">–</span>")</td>"
            body +=
                "<td>\(HTML.escape(job.scheduleWords))<br><code>\(HTML.escape(job.schedule))</code> <span class=\"muted\">\(HTML.escape(job.timeZone))</span></td>"
            body += "</tr>\n"
        }
        body += "</tbody>\n</table>\n"

        body += "<h2 id=\"timeline\">Timeline, \(overview.window.label)</h2>\n<nav class=\"window\">"
        for window in TimeWindow.allCases {
            let name = window == .day ? "24 hours" : "7 days"
            body +=
                window == overview.window
                ? "<span class=\"current\">\(name)</span>"
                : "<a href=\"/?window=\(window.rawValue)#timeline\">\(name)</a>"
        }
        body += "</nav>\n<p class=\"legend\">"
        for status in [RunStatus.succeeded, .failed, .interrupted, .running, .skipped] {
            body += "<span>\(Fragments.status(status))</span>"
        }
        body +=
            "<span><svg width=\"24\" height=\"12\"><rect width=\"24\" height=\"12\" fill=\"#fde8e7\" stroke=\"#d1362f\" stroke-dasharray=\"3 2\"/></svg> missed slots (no caretaker claimed them)</span></p>\n"
        body += "<div class=\"panel\">\(TimelineChart.svg(overview))</div>\n"

        body += "<h2>Counters, \(overview.window.label)</h2>\n<div class=\"charts\">\n"
        for job in overview.jobs {
            for series in job.series {
                body +=
                    "<div class=\"chart\" data-job=\"\(HTML.escape(job.name))\" data-counter=\"\(HTML.escape(series.counter))\">"
                body +=
                    "<h3>\(HTML.escape(job.name)): \(HTML.escape(series.counter)) <span class=\"muted\">(\(series.total) in all)</span></h3>"
                body += CounterChart.svg(series, job: job.name, window: overview.window)
                body += "</div>\n"
            }
        }
        body += "</div>\n"
        return HTML.page(title: "Overview", now: overview.now, body: body)
    }
}
