import CaretakerConfig
import CaretakerDatabase
import CaretakerJobs
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

    /// Skipped slots recorded since the cursor, by job and reason.
    public typealias SkippedSlots = RunHistory.SkippedSlots

    public let jobs: [Job]

    public init(jobs: [Job]) {
        self.jobs = jobs
    }

    /// Reads the readings of every enabled job (`watchedFor`: as `JobHealth.assess`
    /// takes it): the database clock, then one read of the history for all jobs.
    public static func read(
        _ connection: Connection, configuration: Configuration, watchedFor: [String: Duration]? = nil
    ) throws -> HistoryReadings {
        let judged = try JobHealth.judge(connection, configuration: configuration, watchedFor: watchedFor)
        return HistoryReadings(
            jobs: judged.map { health, facts in
                Job(
                    name: health.job, health: health, lastSuccess: facts.lastSuccess?.timeIntervalSince1970,
                    lastRun: facts.lastRun?.timeIntervalSince1970)
            })
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
        let read = try RunHistory(connection).skippedSlots(
            afterID: cursor.lastID, lookedAt: cursor.lookedAt, uptime: uptime)
        moved.lookedAt = read.now ?? cursor.lookedAt
        moved.lastID = max(cursor.lastID, read.lastID ?? 0)
        return (read.counts, moved)
    }
}
