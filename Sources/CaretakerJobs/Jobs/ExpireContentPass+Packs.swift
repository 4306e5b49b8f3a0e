import Postgres

/// The packs of a run of `expire-content`: looks at the packs that may be due, and deletes those that are.
extension ExpireContentPass {
    /// Looks at the packs that may be due (`caretaker.pack_looks`, migration 10) and
    /// deletes those that are: first the marks the app's writes left become looks due
    /// now; then, if the looks were made with other settings, after a `TRUNCATE`, or
    /// more than a day ago, every pack that may expire is looked at again, or else,
    /// after the app deleted posts, the looks that counted a post now gone become due;
    /// then every look that is due. A run with nothing due reads a few index entries,
    /// however many packs wait.
    func expirePacks() throws {
        try context.repeatBatches {
            try context.inBatch(statement: ExpireContentQueries.takePackMarks, [context.job.batchSize])
                .first?.int("marks") ?? 0
        }
        guard !context.recordStopIfDue() else { return }
        let state = try context.inBatch(statement: ExpireContentQueries.packLooksHold, [queries.lookSettings]).first
        if state?.bool("hold") != true, let state {
            try lookAtEveryPack(state)
        } else if state?.bool("check_counted") == true {
            try checkCountedPosts()
        }
        var cursor = KeysetCursor(orderedBy: "look_at")
        try context.repeatBatches { try lookAtPacks(ExpireContentQueries.selectLooksDue, cursor: &cursor) }
    }

    /// Looks at every pack that may expire; when it got through them all, records the
    /// look (`state` is `packLooksHold`'s row, read as it began).
    private func lookAtEveryPack(_ state: Row) throws {
        var cursor = KeysetCursor(orderedBy: "created_at")
        var finished = false
        try context.repeatBatches {
            let packs = try lookAtPacks(queries.selectExpirablePacks, cursor: &cursor)
            finished = packs < context.job.batchSize
            return packs
        }
        guard finished, let started = state["now"] else { return }
        try context.inBatch(
            statement: ExpireContentQueries.finishFullLook,
            [queries.lookSettings, started, state.int64("generation") ?? 0, state.bool("unmarked") ?? true])
    }

    /// Posts were deleted (not by expire-content): the looks that counted one become
    /// due. The check reads, and changes only caretaker's looks, so its batches are
    /// `countedCheckBatches` times the job's.
    private func checkCountedPosts() throws {
        var cursor = KeysetCursor()
        let limit = context.job.batchSize * ExpireContent.countedCheckBatches
        while !context.recordStopIfDue() {
            let looks = try context.inBatch(statement: queries.checkCountedPosts, cursor.parameters + [limit]).rows
            cursor.advance(past: looks)
            guard looks.first?.int("looks") ?? 0 >= limit else {
                try context.inBatch(statement: ExpireContentQueries.finishCountedCheck, [])
                return
            }
        }
    }

    /// One batch of packs from `select` (keyset `cursor`): looks at them, then deletes
    /// those due. Returns how many packs were looked at.
    private func lookAtPacks(_ select: String, cursor: inout KeysetCursor) throws -> Int {
        let packs = try context.inBatch(statement: select, cursor.parameters + [context.job.batchSize]).rows
        cursor.advance(past: packs)
        let ids = packs.compactMap { $0.int64("id") }
        guard !ids.isEmpty else { return 0 }
        counters.stats.add("packs_looked", ids.count)
        let due = try context.inBatch(statement: queries.lookAtPacks, queries.lookParameters + [PostgresArray(ids)])
            .rows.compactMap { $0.int64("id") }
        if !due.isEmpty {
            let statement = Connection.Statement(
                queries.selectDuePacks, queries.packParameters + [PostgresArray(due), context.job.batchSize])
            _ = try batch(
                select: statement, lock: queries.lockPostsOfPacks, delete: queries.deletePacks,
                parameters: queries.packParameters, blockedCounter: "packs_blocked"
            ) { rows in rows.compactMap { $0.int64("id") } }
        }
        return ids.count
    }
}
