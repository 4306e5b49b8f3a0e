import Postgres

/// An operator's `[jobs.NAME] sql = "…"`: runs the statement in its own
/// transaction with the job's timeouts; with `repeat_until_zero`, again and
/// again until it affects no row or `max_runtime` passes.
struct OperatorSQL: Job {
    let settings: SQLJobSettings

    func run(_ context: JobContext) throws -> JobStats {
        var stats = JobStats([("rows", 0)])
        if context.dryRun {
            // The statement is arbitrary: run it once and roll it back to report what it would touch.
            do {
                try context.inBatch { connection in
                    throw DryRunRollback(rows: try connection.query(settings.sql).affectedRows)
                }
            } catch let rollback as DryRunRollback {
                stats.add("rows", rollback.rows)
            }
            return stats
        }
        repeat {
            let affected = try context.inBatch { connection in try connection.query(settings.sql).affectedRows }
            stats.add("rows", affected)
            if affected == 0 || !settings.repeatUntilZero { break }
            context.pauseBetweenBatches()
        } while !context.shouldStop
        return try context.finish(stats)
    }
}

/// Thrown inside a transaction to roll back a dry run after measuring it.
struct DryRunRollback: Error { let rows: Int }
