import CaretakerCore

/// A small bar chart of one counter of one job, summed per bucket of the window.
enum CounterChart {
    static let width = 264.0
    static let height = 64.0
    /// Room above the plot for the "max" label.
    static let top = 13.0

    static func svg(_ series: CounterSeries, job: String, window: TimeWindow) -> String {
        let colour = Self.colour(series.tone)
        let maximum = max(series.buckets.max() ?? 0, 1)
        let barWidth = width / Double(max(series.buckets.count, 1))
        let per = window == .day ? "hour" : "6 hours"
        var svg = """
            <svg class="counter" xmlns="http://www.w3.org/2000/svg" width="\(f(width))" height="\(f(top + height + 14))" \
            viewBox="0 0 \(f(width)) \(f(top + height + 14))" role="img" aria-label="\(HTML.escape(series.counter)) per \(per)">
            <rect y="\(f(top))" width="\(f(width))" height="\(f(height))" fill="#f0f2f5"/>
            """
        for (index, value) in series.buckets.enumerated() where value > 0 {
            let barHeight = max(1, Double(value) / Double(maximum) * (height - 4))
            svg +=
                "<rect class=\"bar\" x=\"\(f(Double(index) * barWidth + 0.5))\" y=\"\(f(top + height - barHeight))\" "
                + "width=\"\(f(max(barWidth - 1, 1)))\" height=\"\(f(barHeight))\" fill=\"\(colour)\">"
                + "<title>\(value)</title></rect>"
        }
        svg +=
            "<text x=\"2\" y=\"\(f(top + height + 12))\" font-size=\"10\" fill=\"#6b7280\">\(window == .day ? "−24 h" : "−7 d")</text>"
        svg += "<text x=\"\(f(width - 20))\" y=\"\(f(top + height + 12))\" font-size=\"10\" fill=\"#6b7280\">now</text>"
        svg +=
            "<text x=\"0\" y=\"10\" font-size=\"10\" fill=\"#6b7280\">max \(maximum == 1 && series.total == 0 ? 0 : maximum)/\(per == "hour" ? "h" : "6 h")</text>"
        return svg + "</svg>"
    }

    /// The colour of a counter's bars, as its job declares the counter (`ChartedCounter.Tone`).
    private static func colour(_ tone: ChartedCounter.Tone) -> String {
        switch tone {
        case .work: "#2f6fd6"
        case .secondary: "#7b5cc4"
        case .failure: "#d1362f"
        }
    }

    private static func f(_ value: Double) -> String { TimelineChart.f(value) }
}
