#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One mark of the dashboard's timeline (`RunHistory.timelineMarks`): one run, or the
/// `runs` of one job and status that started within one pixel of the chart.
public struct TimelineMark: Sendable {
    /// The run, or the first of the runs.
    public let first: RunRecord
    public let runs: Int
    /// When the last of them started.
    public let lastStartedAt: Date
    /// When the last of them finished; nil while one of them runs.
    public let lastFinishedAt: Date?

    public init(first: RunRecord, runs: Int, lastStartedAt: Date, lastFinishedAt: Date?) {
        self.first = first
        self.runs = runs
        self.lastStartedAt = lastStartedAt
        self.lastFinishedAt = lastFinishedAt
    }
}
