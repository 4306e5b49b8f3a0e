#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Postgres

/// One row of `caretaker.job_runs`, as `history` shows it.
public struct RunRecord: Sendable {
    public let id: Int64
    public let job: String
    public let trigger: String
    public let status: String
    public let startedAt: String
    public let finishedAt: String?
    public let durationMilliseconds: Int?
    public let dryRun: Bool
    /// The stats object as stored (JSON text).
    public let stats: String
    public let error: String?
    public let host: String
    public let pid: Int

    /// Filters of `caretaker history`.
    public struct Filter: Sendable {
        public var job: String?
        public var status: String?
        public var limit: Int = 20
        public init(job: String? = nil, status: String? = nil, limit: Int = 20) {
            self.job = job
            self.status = status
            self.limit = limit
        }
    }

    /// The most recent runs first.
    public static func recent(_ connection: Connection, _ filter: Filter) throws -> [RunRecord] {
        let rows = try connection.query("""
            SELECT id, job, trigger, status,
                   to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS started,
                   to_char(finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS finished,
                   (extract(epoch FROM finished_at - started_at) * 1000)::bigint AS duration_ms,
                   dry_run, stats::text AS stats, error, host, pid
            FROM caretaker.job_runs
            WHERE ($1::text IS NULL OR job = $1) AND ($2::text IS NULL OR status = $2)
            ORDER BY started_at DESC, id DESC
            LIMIT $3
            """, filter.job, filter.status, filter.limit).rows
        return rows.map { row in
            RunRecord(
                id: row.int64("id") ?? 0, job: row["job"] ?? "", trigger: row["trigger"] ?? "",
                status: row["status"] ?? "", startedAt: row["started"] ?? "", finishedAt: row["finished"],
                durationMilliseconds: row.int("duration_ms"), dryRun: row.bool("dry_run") ?? false,
                stats: row["stats"] ?? "{}", error: row["error"], host: row["host"] ?? "", pid: row.int("pid") ?? 0)
        }
    }
}
