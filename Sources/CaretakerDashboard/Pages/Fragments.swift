import CaretakerCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Pieces several pages show the same way.
enum Fragments {
    static func status(_ status: RunStatus) -> String {
        "<span class=\"badge s-\(status.rawValue)\">\(status.rawValue)</span>"
    }

    /// The health badge and `check`'s reason.
    static func health(_ job: JobOverview) -> String {
        guard job.enabled else { return "<span class=\"badge disabled\">disabled</span>" }
        guard let health = job.health else { return "<span class=\"muted\">unknown</span>" }
        return
            "<span class=\"badge \(health.healthy ? "healthy" : "unhealthy")\">\(health.healthy ? "healthy" : "unhealthy")</span> "
            + "<span class=\"reason\">\(HTML.escape(health.reason))</span>"
    }

    static func lastRun(_ run: RunRecord, now: Date) -> String {
        var text =
            "<a href=\"/runs/\(run.id)\">\(status(run.status))</a> \(HTML.escape(HTML.relative(run.startedAt, now: now)))"
        if let duration = run.duration { text += ", took \(HTML.escape(HTML.duration(duration)))" }
        if run.dryRun { text += " <span class=\"muted\">(dry run)</span>" }
        let counters = self.counters(run)
        if !counters.isEmpty { text += "<br><span class=\"muted\">\(counters)</span>" }
        return text
    }

    /// `posts_deleted=512 packs_deleted=3`, escaped.
    static func counters(_ run: RunRecord) -> String {
        HTML.escape(run.counters.map { "\($0.name)=\($0.value)" }.joined(separator: " "))
    }

    static func optionalTime(_ date: Date?) -> String {
        date.map { HTML.escape(HTML.time($0)) } ?? "<span class=\"muted\">–</span>"
    }
}
