import CaretakerConfig
import CaretakerDatabase
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
        let pass = PrunePass(settings: settings, context: context)
        try pass.run()
        return pass.stats
    }
}

/// One run of `prune`: its context, queries and counters.
private final class PrunePass {
    let context: JobContext
    /// Each table in the order pruned, with how long its rows are kept.
    let targets: [(target: PruneQueries.Target, keep: Duration)]
    var stats = JobStats()

    init(settings: PruneSettings, context: JobContext) {
        self.context = context
        let queries = PruneQueries(schema: context.schema)
        targets = [
            (queries.runs, settings.keepHistory), (queries.slots, settings.keepHistory),
            (queries.sessions, settings.keepRevokedSessions), (queries.resetRequests, settings.keepResetRequests),
        ]
    }

    func run() throws {
        for (target, keep) in targets {
            stats.add(target.counter, 0)
            if context.dryRun {
                let count = try context.inBatch { try $0.query(target.count, keep.microseconds).first?.int("n") ?? 0 }
                stats.add(target.counter, count)
                continue
            }
            stats.add(target.blockedCounter, 0)
            try context.repeatBatches { try self.deleteBatch(target, keep: keep) }
        }
    }

    /// Deletes up to `batch_size` of the target's prunable rows (a row the app
    /// still references on its own, or left); returns how many it looked at.
    private func deleteBatch(_ target: PruneQueries.Target, keep: Duration) throws -> Int {
        let parameters: [any PostgresBindable] = [
            keep.microseconds, context.job.batchSize,
            context.blockedIDs(target.blockedCounter),
        ]
        let batch = try context.changeBatch(
            target.deleteBatch, orOneByOne: target.candidates, parameters,
            counter: target.blockedCounter
        ) { connection, key in
            try connection.query(target.deleteOne, keep.microseconds, key).affectedRows
        }
        stats.add(target.counter, batch.changed)
        return batch.handled
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
