import CaretakerCore

/// `/jobs/NAME`: a job's runs, newest first, filtered by status, trigger and time range, 50 a page.
public enum JobPage {
    public static func render(_ page: JobRuns) -> String {
        let name = HTML.escape(page.job)
        var body = "<h1>Job \(name)</h1>\n"
        if let job = page.configured {
            body += "<dl class=\"job\"><dt>Health</dt><dd>\(Fragments.health(job))</dd>"
            body +=
                "<dt>Schedule</dt><dd>\(HTML.escape(job.scheduleWords)) <code>\(HTML.escape(job.schedule))</code> \(HTML.escape(job.timeZone))</dd>"
            body += "<dt>Next slot</dt><dd>\(Fragments.optionalTime(job.nextSlot))</dd>"
            body +=
                "<dt>Last run</dt><dd>\(job.lastRun.map { Fragments.lastRun($0, now: page.now) } ?? "never")</dd></dl>\n"
        } else {
            body += "<p class=\"muted\">This job is not in the configuration any more; its history remains.</p>\n"
        }
        body += "<form class=\"filters\" method=\"get\" action=\"/jobs/\(HTML.urlComponent(page.job))\">"
        body += select("status", ["any"] + RunStatus.allCases.map(\.rawValue), page.filter.status?.rawValue)
        body += select("trigger", ["any"] + RunTrigger.allCases.map(\.rawValue), page.filter.trigger?.rawValue)
        body += select("range", RunFilter.Range.allCases.map(\.rawValue), page.filter.range.rawValue)
        body += "<button type=\"submit\">Show</button></form>\n"
        body +=
            "<table class=\"runs\">\n<thead><tr><th>Run</th><th>Status</th><th>Trigger</th><th>Slot</th><th>Started</th><th>Duration</th><th>Counters</th><th>Error</th></tr></thead>\n<tbody>\n"
        for run in page.runs {
            body += "<tr data-run=\"\(run.id)\"><td><a href=\"/runs/\(run.id)\">#\(run.id)</a></td>"
            body +=
                "<td>\(Fragments.status(run.status))\(run.dryRun ? " <span class=\"muted\">dry run</span>" : "")</td>"
            body +=
                "<td>\(run.trigger.rawValue)\(run.attempt > 1 ? " <span class=\"muted\">attempt \(run.attempt)</span>" : "")</td>"
            body += "<td>\(Fragments.optionalTime(run.slot))</td><td>\(HTML.escape(HTML.time(run.startedAt)))</td>"
            body += "<td class=\"num\">\(run.duration.map { HTML.escape(HTML.duration($0)) } ?? "")</td>"
            body += "<td>\(Fragments.counters(run))</td>"
            body += "<td>\(run.error.map { HTML.escape(String($0.prefix(200))) } ?? "")</td></tr>\n"
        }
        if page.runs.isEmpty { body += "<tr><td colspan=\"8\" class=\"muted\">no runs match</td></tr>\n" }
        body += "</tbody>\n</table>\n<nav class=\"pages\">"
        let base = "/jobs/\(HTML.urlComponent(page.job))"
        if page.filter.page > 1 {
            body +=
                "<a rel=\"prev\" href=\"\(HTML.escape(base + page.filter.query(page: page.filter.page - 1)))\">newer</a>"
        }
        body += "<span class=\"muted\">page \(page.filter.page)</span> "
        if page.hasNextPage {
            body +=
                "<a rel=\"next\" href=\"\(HTML.escape(base + page.filter.query(page: page.filter.page + 1)))\">older</a>"
        }
        body += "</nav>\n"
        return HTML.page(title: "Job \(page.job)", now: page.now, body: body)
    }

    private static func select(_ name: String, _ choices: [String], _ current: String?) -> String {
        var html = "<label>\(name) <select name=\"\(name)\">"
        for choice in choices {
            let value = choice == "any" ? "" : choice
            let selected = (current ?? "") == value ? " selected" : ""
            html += "<option value=\"\(HTML.escape(value))\"\(selected)>\(HTML.escape(choice))</option>"
        }
        return html + "</select></label>"
    }
}
