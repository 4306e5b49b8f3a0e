import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One row of `caretaker.job_runs`: what `history`, `status`, the alert mails and
/// the dashboard show of a run. Times are dates of the database clock.
public struct RunRecord: Sendable {
    public var id: Int64
    public var job: String
    public var trigger: RunTrigger
    public var status: RunStatus
    /// The schedule slot it answered; nil for a manual run.
    public var slot: Date?
    public var attempt: Int
    public var startedAt: Date
    /// Nil while it runs.
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

    /// `finished_at - started_at` in seconds; nil while running.
    public var duration: Double? { finishedAt.map { $0.timeIntervalSince(startedAt) } }

    /// The duration in whole milliseconds, as `history` and `status` print it.
    public var durationMilliseconds: Int? { duration.map { Int(($0 * 1000).rounded()) } }

    public func counter(_ name: String) -> Int64? { counters.first { $0.name == name }?.value }

    /// Filters of `caretaker history`.
    public struct Filter: Sendable {
        public var job: String?
        public var status: RunStatus?
        public var limit: Int = 20
        public init(job: String? = nil, status: RunStatus? = nil, limit: Int = 20) {
            self.job = job
            self.status = status
            self.limit = limit
        }
    }
}

extension RunRecord {
    /// The columns `init(_:)` reads, times as epoch seconds (`RunHistory` selects them).
    static let columns = """
        id, job, trigger, status, extract(epoch FROM slot)::float8 AS slot, attempt,
        extract(epoch FROM started_at)::float8 AS started, extract(epoch FROM finished_at)::float8 AS finished,
        dry_run, stats::text AS stats, error, host, pid, backend_pid,
        (SELECT string_agg(s.key || '=' || s.value, ' ') FROM jsonb_each_text(stats) AS s(key, value)
         WHERE s.value ~ '^-?[0-9]{1,18}$') AS counters
        """

    /// Reads a row of `columns`; throws `UnknownHistoryValue` for a status or trigger this caretaker does not know.
    init(_ row: Row) throws(UnknownHistoryValue) {
        let id = row.int64("id") ?? 0
        self.init(
            id: id, job: row["job"] ?? "", trigger: try RunTrigger(stored: row["trigger"], runID: id),
            status: try RunStatus(stored: row["status"], runID: id),
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
