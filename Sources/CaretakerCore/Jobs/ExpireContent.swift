import Postgres

/// `expire-content`: deletes packs, then posts, whose popularity-dependent lifetime has passed.
///
/// Lifetime `L(p) = min + (max − min) × min(1, max(p, 0) / full)`; a thing is due when
/// `created_at + L(p) <= now()` on the database clock. Each batch locks its due
/// rows with `SKIP LOCKED`, re-checks the deadline in the `DELETE` itself (likes
/// may have arrived meanwhile), and moves a keyset cursor forward so no batch
/// re-reads what an earlier one settled.
struct ExpireContent: Job {
    let settings: ExpireContentSettings

    func run(_ context: JobContext) throws -> JobStats {
        let queries = ExpireContentQueries(schema: context.schema, settings: settings)
        if context.dryRun { return try preview(context, queries) }
        var stats = JobStats([("packs_deleted", 0), ("posts_deleted", 0), ("batches", 0)])
        try sweep(context, target: queries.packs, stats: &stats)
        if !context.shouldStop {
            try sweep(context, target: queries.posts, stats: &stats)
        }
        if context.isShuttingDown { throw JobInterrupted(stats: stats) }
        return stats
    }

    /// Counts what a real run would delete now, changing nothing.
    private func preview(_ context: JobContext, _ queries: ExpireContentQueries) throws -> JobStats {
        let row = try context.inBatch { connection in
            try connection.query(queries.preview, queries.lifetimeParameters).first
        }
        return JobStats([("packs_deleted", row?.int("packs") ?? 0), ("posts_deleted", row?.int("posts") ?? 0)])
    }

    /// Deletes everything due in `target`, batch by batch, until nothing is left,
    /// `max_runtime` passes, or the worker shuts down.
    private func sweep(_ context: JobContext, target: ExpireContentQueries.Target, stats: inout JobStats) throws {
        var cursor = KeysetCursor.start
        while !context.shouldStop {
            var candidates: [Int64] = []
            do {
                let deleted = try context.inBatch { connection in
                    let batch = try selectDue(connection, target, after: cursor, limit: context.job.batchSize)
                    candidates = batch.ids
                    cursor = batch.last ?? cursor
                    return try delete(connection, target, ids: batch.ids)
                }
                record(deleted, in: &stats)
                if !candidates.isEmpty { stats.add("batches") }
            } catch let error as PostgresError where error.isLockNotAvailable {
                // A cascade met a row the app holds: settle this batch one row at a
                // time and leave the blocked ones for the next run.
                context.logger.info("rows locked by the app; retrying batch row by row",
                                    metadata: ["table": "\(target.table)", "rows": "\(candidates.count)"])
                record(try deleteOneByOne(context, target, ids: candidates), in: &stats)
            }
            if candidates.count < context.job.batchSize { break }
            context.pauseBetweenBatches()
        }
    }

    private func record(_ deleted: Deleted, in stats: inout JobStats) {
        stats.add("packs_deleted", deleted.packs)
        stats.add("posts_deleted", deleted.posts)
    }

    private func selectDue(_ connection: Connection, _ target: ExpireContentQueries.Target,
                           after cursor: KeysetCursor, limit: Int) throws -> (ids: [Int64], last: KeysetCursor?) {
        let rows = try connection.query(target.selectDue, target.lifetimeParameters
            + [cursor.createdAt, cursor.id, limit]).rows
        let ids = rows.compactMap { $0.int64("id") }
        let last = rows.last.flatMap { row in
            row["created_at"].flatMap { created in row.int64("id").map { KeysetCursor(createdAt: created, id: $0) } }
        }
        return (ids, last)
    }

    private func delete(_ connection: Connection, _ target: ExpireContentQueries.Target, ids: [Int64]) throws -> Deleted {
        guard !ids.isEmpty else { return Deleted() }
        let row = try connection.query(target.deleteDue, target.lifetimeParameters + [PostgresArray(ids)]).first
        return Deleted(packs: row?.int("packs") ?? 0, posts: row?.int("posts") ?? 0)
    }

    private func deleteOneByOne(_ context: JobContext, _ target: ExpireContentQueries.Target, ids: [Int64]) throws -> Deleted {
        var total = Deleted()
        for id in ids where !context.shouldStop {
            do {
                let deleted = try context.inBatch { connection in try delete(connection, target, ids: [id]) }
                total.packs += deleted.packs
                total.posts += deleted.posts
            } catch let error as PostgresError where error.isLockNotAvailable {
                context.logger.info("row locked by the app; left for the next run",
                                    metadata: ["table": "\(target.table)", "id": "\(id)"])
            }
        }
        return total
    }

    private struct Deleted { var packs = 0; var posts = 0 }
}

/// Where the previous batch stopped, in `(created_at, id)` order.
struct KeysetCursor: Sendable {
    var createdAt: String
    var id: Int64
    static let start = KeysetCursor(createdAt: "-infinity", id: Int64.min)
}

/// A `bigint[]` parameter in PostgreSQL's array text form.
struct PostgresArray: PostgresBindable {
    let values: [Int64]
    init(_ values: [Int64]) { self.values = values }
    var postgresText: String? { "{" + values.map(String.init).joined(separator: ",") + "}" }
}
