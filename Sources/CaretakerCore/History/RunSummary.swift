import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One row of `caretaker.job_runs`, with times as dates of the database clock (the dashboard's view of a run).
public struct RunSummary: Sendable {
    public var id: Int64
    public var job: String
    public var trigger: String
    public var status: String
    public var slot: Date?
    public var attempt: Int
    public var startedAt: Date
    public var finishedAt: Date?
    public var dryRun: Bool
    /// The counters in `stats` that are whole numbers, in the order stored.
    public var counters: [(name: String, value: Int64)]
    /// The stats object as stored (JSON text).
    public var stats: String
    public var error: String?
    public var host: String
    public var pid: Int
    public var backendPID: Int?

    /// `finished_at - started_at`; nil while running.
    public var duration: Double? { finishedAt.map { $0.timeIntervalSince(startedAt) } }

    public func counter(_ name: String) -> Int64? { counters.first { $0.name == name }?.value }
}

extension RunSummary {
    /// Reads a row of `RunStore`'s summary columns.
    init(_ row: Row) {
        self.init(
            id: row.int64("id") ?? 0, job: row["job"] ?? "", trigger: row["trigger"] ?? "", status: row["status"] ?? "",
            slot: row.double("slot").map(Date.init(timeIntervalSince1970:)), attempt: row.int("attempt") ?? 1,
            startedAt: Date(timeIntervalSince1970: row.double("started") ?? 0),
            finishedAt: row.double("finished").map(Date.init(timeIntervalSince1970:)),
            dryRun: row.bool("dry_run") ?? false, counters: Self.counters(row["counters"]), stats: row["stats"] ?? "{}",
            error: row["error"], host: row["host"] ?? "", pid: row.int("pid") ?? 0, backendPID: row.int("backend_pid"))
    }

    /// `posts_deleted=512 packs_deleted=3` (counter names are identifiers the jobs define).
    static func counters(_ text: String?) -> [(name: String, value: Int64)] {
        (text ?? "").split(separator: " ").compactMap { pair in
            guard let equals = pair.firstIndex(of: "="), let value = Int64(pair[pair.index(after: equals)...]) else {
                return nil
            }
            return (String(pair[..<equals]), value)
        }
    }
}

/// One mark of the dashboard's timeline (`RunStore.timelineMarks`): one run, or the
/// `runs` of one job and status that started within one pixel of the chart.
public struct TimelineMark: Sendable {
    /// The run, or the first of the runs.
    public let first: RunSummary
    public let runs: Int
    /// When the last of them started.
    public let lastStartedAt: Date
    /// When the last of them finished; nil while one of them runs.
    public let lastFinishedAt: Date?

    public init(first: RunSummary, runs: Int, lastStartedAt: Date, lastFinishedAt: Date?) {
        self.first = first
        self.runs = runs
        self.lastStartedAt = lastStartedAt
        self.lastFinishedAt = lastFinishedAt
    }
}
