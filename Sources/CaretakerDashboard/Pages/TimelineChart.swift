import CaretakerCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The overview's timeline: one row per job, one mark per run over the window.
///
/// A mark's colour is its status, its width its duration (at least 2 px), a
/// skipped slot a short grey tick, and slots nobody claimed a hatched band, so a
/// gap or a streak of failures shows at a glance. Each mark links to its run; runs
/// of one status crowded into one pixel share a mark, which says how many and
/// links to the job's runs of that status.
enum TimelineChart {
    static let labelWidth = 170.0
    static let plotWidth = 900.0
    static let rowHeight = 26.0
    static let axisHeight = 20.0

    static func svg(_ overview: Overview) -> String {
        let start = overview.windowStart.timeIntervalSince1970
        let span = overview.window.seconds
        let height = axisHeight + rowHeight * Double(overview.jobs.count) + 4
        let width = labelWidth + plotWidth + 10
        func x(_ date: Date) -> Double {
            labelWidth + min(max((date.timeIntervalSince1970 - start) / span, 0), 1) * plotWidth
        }
        var svg = """
            <svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="\(f(width))" height="\(f(height))" \
            viewBox="0 0 \(f(width)) \(f(height))" role="img" aria-label="runs over the \(overview.window.label)">
            <defs><pattern id="missed" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">\
            <rect width="6" height="6" fill="#fde8e7"/><rect width="2" height="6" fill="#d1362f" opacity="0.55"/></pattern></defs>

            """
        svg += axis(overview, x: x, height: height)
        for (index, job) in overview.jobs.enumerated() {
            let top = axisHeight + rowHeight * Double(index)
            svg += "<g class=\"row\" data-job=\"\(HTML.escape(job.name))\">"
            svg +=
                "<rect x=\"\(f(labelWidth))\" y=\"\(f(top + 2))\" width=\"\(f(plotWidth))\" height=\"\(f(rowHeight - 4))\" fill=\"#f0f2f5\"/>"
            svg +=
                "<a href=\"/jobs/\(HTML.urlComponent(job.name))\"><text x=\"4\" y=\"\(f(top + rowHeight / 2 + 4))\" font-size=\"12\" fill=\"#1d2330\">\(HTML.escape(job.name))</text></a>"
            for span in job.missed {
                let left = x(span.first)
                let right = max(x(span.last), left + 3)
                let label =
                    span.slots == 1
                    ? "missed slot \(HTML.time(span.first))"
                    : "\(span.slots) missed slots \(HTML.time(span.first)) – \(HTML.time(span.last))"
                svg +=
                    "<rect class=\"missed\" x=\"\(f(left))\" y=\"\(f(top + 2))\" width=\"\(f(right - left))\" height=\"\(f(rowHeight - 4))\" fill=\"url(#missed)\"><title>\(HTML.escape(label))</title></rect>"
            }
            // Successes first, so a failure among many successes is drawn on top.
            for mark in job.marks.sorted(by: {
                ($0.first.status == .succeeded ? 0 : 1, $0.first.startedAt)
                    < ($1.first.status == .succeeded ? 0 : 1, $1.first.startedAt)
            }) {
                svg +=
                    mark.runs == 1
                    ? self.mark(mark.first, top: top, x: x(mark.first.startedAt), now: overview.now, span: span)
                    : crowded(mark, top: top, x: x, now: overview.now, window: overview.window)
            }
            svg += "</g>\n"
        }
        return svg + "</svg>"
    }

    private static func mark(_ run: RunRecord, top: Double, x: Double, now: Date, span: Double) -> String {
        let skipped = run.status == .skipped
        let seconds = (run.finishedAt ?? now).timeIntervalSince(run.startedAt)
        let width = skipped ? 2 : min(max(2, seconds / span * plotWidth), labelWidth + plotWidth - x + 2)
        let (y, height) = band(skipped: skipped, top: top)
        var title = "#\(run.id) \(run.status.rawValue) (\(run.trigger.rawValue)) at \(HTML.time(run.startedAt))"
        if !skipped, let duration = run.duration { title += ", \(HTML.duration(duration))" }
        if let error = run.error { title += ": \(error.prefix(200))" }
        return
            "<a href=\"/runs/\(run.id)\"><rect class=\"mark s-\(run.status.rawValue)\" data-run=\"\(run.id)\" x=\"\(f(x))\" y=\"\(f(y))\" width=\"\(f(width))\" height=\"\(f(height))\"><title>\(HTML.escape(title))</title></rect></a>"
    }

    /// The runs of one status that started within one pixel: one mark from the first
    /// start to the last end, at least 2 px wide.
    private static func crowded(
        _ mark: TimelineMark, top: Double, x: (Date) -> Double, now: Date, window: TimeWindow
    ) -> String {
        let run = mark.first
        let skipped = run.status == .skipped
        let left = x(run.startedAt)
        let right = skipped ? left + 2 : max(x(mark.lastFinishedAt ?? now), left + 2)
        let (y, height) = band(skipped: skipped, top: top)
        let what = skipped ? "slots skipped" : "runs \(run.status.rawValue)"
        let title = "\(mark.runs) \(what) from \(HTML.time(run.startedAt)) to \(HTML.time(mark.lastStartedAt))"
        return
            "<a href=\"/jobs/\(HTML.urlComponent(run.job))?status=\(run.status.rawValue)&amp;range=\(window.rawValue)\"><rect class=\"mark s-\(run.status.rawValue) crowded\" data-runs=\"\(mark.runs)\" x=\"\(f(left))\" y=\"\(f(y))\" width=\"\(f(right - left))\" height=\"\(f(height))\"><title>\(HTML.escape(title))</title></rect></a>"
    }

    /// Where a mark sits in its row: a skipped slot is a short tick in the lower half, a run fills the row.
    private static func band(skipped: Bool, top: Double) -> (y: Double, height: Double) {
        skipped ? (top + rowHeight / 2, rowHeight / 2 - 2) : (top + 4, rowHeight - 8)
    }

    /// Ticks every three hours over a day, every midnight (UTC) over a week.
    private static func axis(_ overview: Overview, x: (Date) -> Double, height: Double) -> String {
        let step = overview.window == .day ? 3 * 3600.0 : 86_400.0
        let start = overview.windowStart.timeIntervalSince1970
        var tick = (start / step).rounded(.up) * step
        var svg = "<g class=\"axis\" font-size=\"11\" fill=\"#6b7280\">"
        while tick <= overview.now.timeIntervalSince1970 {
            let date = Date(timeIntervalSince1970: tick)
            let position = x(date)
            let label = overview.window == .day ? HTML.clock(date) : HTML.day(date)
            svg +=
                "<line x1=\"\(f(position))\" y1=\"\(f(axisHeight - 4))\" x2=\"\(f(position))\" y2=\"\(f(height))\" stroke=\"#d5d9e0\"/>"
            // The last label would run into "now".
            if position < labelWidth + plotWidth - 50 {
                svg += "<text x=\"\(f(position - 14))\" y=\"12\">\(label)</text>"
            }
            tick += step
        }
        svg += "<text x=\"\(f(labelWidth + plotWidth - 22))\" y=\"12\" fill=\"#1d2330\">now</text></g>\n"
        return svg
    }

    static func f(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}
