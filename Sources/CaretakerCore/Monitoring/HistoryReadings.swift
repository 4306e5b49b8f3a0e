import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the shared history says about each job, read in one place so that the
/// metrics, the alerts and every instance agree.
public struct HistoryReadings: Sendable {
    public struct Job: Sendable {
        public let name: String
        public let health: JobHealth
        /// Seconds since the epoch (database clock) of the last successful finish; nil: never.
        public let lastSuccess: Double?
        /// Seconds since the epoch of the last finished run, whatever its status; nil: never.
        public let lastRun: Double?
    }

    /// Skipped slots recorded since the cursor, by job and reason (a row counts
    /// `stats.missed_slots` slots when it says so, else one).
    public struct SkippedSlots: Sendable, Equatable {
        public let job: String
        public let reason: String
        public let slots: Int
    }

    public let jobs: [Job]

    /// Reads the readings of every enabled job (`watchedFor`: as `JobHealth.assess` takes it).
    public static func read(
        _ connection: Connection, configuration: Configuration, watchedFor: [String: Duration]? = nil
    ) throws -> HistoryReadings {
        let health = try JobHealth.assess(connection, configuration: configuration, watchedFor: watchedFor)
        let store = RunStore(connection)
        let jobs = try health.map { health in
            let runs = try store.finishedRuns(job: health.job)
            return Job(name: health.job, health: health, lastSuccess: runs.lastSuccess, lastRun: runs.lastRun)
        }
        return HistoryReadings(jobs: jobs)
    }

    /// Where the count of skipped rows stopped: the highest id counted, and when
    /// (database clock) the last look was taken.
    public struct SkippedCursor: Sendable, Equatable {
        public var lastID: Int64 = 0
        public var lookedAt: Double?
        public init() {}
    }

    /// Skipped rows recorded since the cursor's last look (since this process
    /// started, `uptime` ago, at the first), and the moved cursor.
    ///
    /// Counted by tailing the history rather than over all of it, so the counter
    /// never goes down when `prune` deletes old rows, and each look reads only the
    /// rows started since the previous one: a minute's overlap catches a row
    /// stamped before the last look but committed after it; the id filter keeps
    /// it from counting twice. (Two skipped rows committed in the opposite order
    /// of their ids within one look could lose the lower one: a microsecond race.)
    public static func skippedSlots(
        _ connection: Connection, after cursor: SkippedCursor,
        uptime: Duration
    ) throws -> ([SkippedSlots], SkippedCursor) {
        var moved = cursor
        moved.lookedAt = try connection.query("SELECT extract(epoch FROM clock_timestamp())::float8 AS now").first?
            .double("now")
        let rows = try RunStore(connection).skippedSlots(
            afterID: cursor.lastID, lookedAt: cursor.lookedAt, uptime: uptime)
        moved.lastID = max(cursor.lastID, rows.compactMap(\.lastID).max() ?? 0)
        return (rows.map(\.counts), moved)
    }
}
