import Postgres

/// `prune`: deletes old run history, long-revoked sessions and finished reset requests, in batches.
///
/// History of every status is kept for `keep_history`, so failed runs stay
/// visible exactly as long as successful ones. A `running` row is never pruned,
/// nor the latest run of each job in each status: a job that runs less often
/// than `keep_history` (an operator's monthly job) keeps its last success and
/// last failure, so `check` does not mistake it for one that never ran.
struct Prune: Job {
    let settings: PruneSettings

    func run(_ context: JobContext) throws -> JobStats {
        let s = context.schema
        let targets: [(counter: String, table: String, key: String, condition: String, keep: Duration)] = [
            ("runs_deleted", RunStore.prunableRuns.table, RunStore.prunableRuns.key, RunStore.prunableRuns.condition,
             settings.keepHistory),
            ("slots_deleted", RunStore.prunableSlots.table, RunStore.prunableSlots.key, RunStore.prunableSlots.condition,
             settings.keepHistory),
            ("sessions_deleted", "\(s).sessions", "id",
             "revoked_at < now() - $1::bigint * interval '1 microsecond'", settings.keepRevokedSessions),
            ("reset_requests_deleted", "\(s).password_reset_requests", "id",
             "status <> 'pending' AND requested_at < now() - $1::bigint * interval '1 microsecond'", settings.keepResetRequests),
        ]
        var stats = JobStats()
        for target in targets {
            stats.add(target.counter, 0)
            if context.dryRun {
                let count = try context.inBatch { connection in
                    try connection.query("SELECT count(*) AS n FROM \(target.table) WHERE \(target.condition)",
                                         target.keep.microseconds).first?.int("n") ?? 0
                }
                stats.add(target.counter, count)
                continue
            }
            let blockedCounter = target.counter.replacing("_deleted", with: "_blocked")
            stats.add(blockedCounter, 0)
            let candidates = """
                SELECT \(target.key) AS key FROM \(target.table) WHERE \(target.condition) AND \(target.key) <> ALL($3)
                LIMIT $2
                """
            try context.repeatBatches {
                let parameters: [any PostgresBindable] = [target.keep.microseconds, context.job.batchSize,
                                                          context.blockedIDs(blockedCounter)]
                // A row the app still references is deleted on its own, or left.
                let batch = try context.changeBatch("""
                    DELETE FROM \(target.table) WHERE \(target.key) IN (\(candidates) FOR UPDATE SKIP LOCKED)
                    """, orOneByOne: candidates, parameters, counter: blockedCounter) { connection, key in
                    try connection.query("""
                        DELETE FROM \(target.table) WHERE \(target.key) = $2 AND \(target.condition)
                        """, target.keep.microseconds, key).affectedRows
                }
                stats.add(target.counter, batch.changed)
                return batch.handled
            }
        }
        return stats
    }
}

/// `[jobs.prune]`'s own keys.
public struct PruneSettings: Sendable {
    public var keepHistory: Duration = .seconds(30 * 86400)
    public var keepRevokedSessions: Duration = .seconds(30 * 86400)
    public var keepResetRequests: Duration = .seconds(30 * 86400)
}

extension PruneSettings {
    /// Reads them from the job's table, with their defaults and bounds.
    init(reading table: inout TableReader) throws(ConfigurationError) {
        keepHistory = try table.duration("keep_history", default: keepHistory, minimum: .seconds(3600))
        keepRevokedSessions = try table.duration("keep_revoked_sessions", default: keepRevokedSessions)
        keepResetRequests = try table.duration("keep_reset_requests", default: keepResetRequests)
    }
}
