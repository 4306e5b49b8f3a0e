import CaretakerConfig
import CaretakerDatabase
import Postgres

/// An operator's `[jobs.NAME] sql = "…"`: runs the statement in its own
/// transaction with the job's timeouts; with `repeat_until_zero`, again and
/// again until it affects no row or `max_runtime` passes.
///
/// Not `repeatBatches`: the statement always runs once (there is no batch before
/// which to ask for a stop), and it repeats until it affects no row, not until a
/// batch comes back short of `batch_size`.
struct OperatorSQL: Job {
    let settings: SQLJobSettings

    /// An operator job's stats: the rows its statement affected.
    static let stats: [StatDeclaration] = [.count("rows", charted: .work)]

    func run(_ context: JobContext) throws -> JobStats {
        var stats = JobStats([("rows", 0)])
        if context.dryRun {
            // The statement is arbitrary: run it once and roll it back to report what it would touch.
            try context.inTransaction { connection in
                stats.add("rows", try connection.query(settings.sql).affectedRows)
                return .rollback
            }
            return stats
        }
        repeat {
            let affected = try context.inBatch { connection in try connection.query(settings.sql).affectedRows }
            stats.add("rows", affected)
            if affected == 0 || !settings.repeatUntilZero { break }
            context.pauseBetweenBatches()
        } while !context.recordStopIfDue()
        return stats
    }
}
