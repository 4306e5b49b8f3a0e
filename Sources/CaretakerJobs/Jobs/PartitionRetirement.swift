import Postgres

/// `retire_partitions`: on a `posts` partitioned by range on `created_at`, a
/// partition whose upper bound is at least `max_lifetime` in the past holds only
/// posts past every lifetime. It is dropped whole instead of deleted row by row: no
/// WAL per row, no dead tuples for the app's scans to step over, and its space goes
/// back to the file system at once. The decision reads the bounds in pg_catalog,
/// never the partition; the DEFAULT partition is never retired (its rows may be of
/// any age), and caretaker never creates partitions.
///
/// Without a DEFAULT partition it is detached with `DETACH PARTITION … CONCURRENTLY`,
/// which takes no lock the app's statements wait for on `posts`, then dropped. With
/// one, PostgreSQL cannot detach concurrently, and the partition is dropped while
/// attached: an ACCESS EXCLUSIVE lock on `posts` for a moment. Every statement that
/// takes a lock the app waits for (that one, and the drop of a detached partition,
/// which takes ACCESS EXCLUSIVE on `packs` and `users` to remove the foreign keys'
/// triggers there) waits at most `retirementLockTimeout` (or the job's shorter
/// `lock_timeout`): the app never queues behind it for longer. One that times out is
/// tried again at the next run. A concurrent detach that was interrupted (a kill, a
/// timeout while it waited for older transactions) is finished with `FINALIZE` at the
/// next run, and a detached partition whose drop timed out is found by its comment.
extension ExpireContent {
    static let retirementLockTimeout: Duration = .milliseconds(100)
    /// The comment a detached partition waits for its drop under.
    static let detachedComment = "caretaker: a partition of posts past max_lifetime, detached to be dropped"
}

extension ExpireContentPass {
    private var blockingLockTimeout: Duration { min(context.job.lockTimeout, ExpireContent.retirementLockTimeout) }

    /// Drops the partitions of `posts` wholly past `max_lifetime` (`partitions_dropped`,
    /// `posts_dropped`); in a dry run only names them in the log and counts them.
    func retirePartitions() throws {
        guard settings.retirePartitions,
            let partitions = try PostPartitions.read(
                context.connection, schema: context.schema, maxLifetime: settings.maxLifetime)
        else { return }
        counters.stats.add("partitions_dropped", 0)
        counters.stats.add("posts_dropped", 0)
        // One the worker does not own could be detached (that takes owning posts) but not
        // dropped, and would be left out of posts with its posts: it is not touched.
        let eligible = partitions.filter { $0.whollyExpired && !$0.isDefault }
        let due = eligible.filter(\.owned)
        for partition in eligible where !partition.owned && !partition.detachPending {
            counters.stats.add("partitions_not_owned", 1)
            context.logger.warning(
                "cannot drop a partition of posts past max_lifetime: the worker does not own it",
                metadata: [
                    "partition": "\(partition.displayName)",
                    "advice": "make the role that owns posts own it, as `caretaker check` says",
                ])
        }
        if context.dryRun {
            for partition in due where !partition.detachPending {
                context.logger.info(
                    "would drop a partition of posts past max_lifetime",
                    metadata: [
                        "partition": "\(partition.displayName)", "upper_bound": "\(partition.bounds?.upper ?? "")",
                    ])
                counters.stats.add("partitions_dropped", 1)
                counters.stats.add(
                    "posts_dropped", try Self.estimatedPosts(partition.qualified, on: context.connection))
            }
            return
        }
        var stillPending = false
        for partition in partitions where partition.detachPending && partition.owned {
            if context.recordStopIfDue() { return }
            if try finishDetach(partition) {
                try dropDetached(partition.qualified, name: partition.displayName)
            } else {
                stillPending = true
            }
        }
        for table in try detachedLeftovers() {
            if context.recordStopIfDue() { return }
            try dropDetached(table, name: table)
        }
        // PostgreSQL allows one pending detach per table: none starts while one waits.
        if stillPending { return }
        let hasDefault = partitions.contains(where: \.isDefault)
        for partition in due where !partition.detachPending {
            if context.recordStopIfDue() { return }
            if hasDefault {
                try dropAttached(partition)
            } else if try detachConcurrently(partition) {
                try dropDetached(partition.qualified, name: partition.displayName)
            } else {
                // Left pending (or not begun): the next run finishes it, then goes on.
                return
            }
        }
    }

    /// The posts in the table `qualified` (and its partitions, if it is partitioned in
    /// turn) as PostgreSQL's statistics count them (`n_live_tup`): the partition is never
    /// read to count what goes with it. A drop decided from the bounds costs no scan, and
    /// counting would: a partition past `max_lifetime` has usually been emptied row by row
    /// already and holds the dead tuples of every post it had until a vacuum comes by.
    /// The figure is the statistics' (they lag a running transaction's changes by up to a
    /// second and start from zero after a crash), hence `posts_dropped` is an estimate.
    static func estimatedPosts(_ qualified: String, on connection: Connection) throws(PostgresError) -> Int {
        try connection.query(
            """
            SELECT coalesce(sum(greatest(pg_stat_get_live_tuples(t.relid), 0)), 0) AS posts
            FROM (SELECT relid FROM pg_partition_tree(to_regclass($1)) WHERE isleaf  -- no row once detached
                  UNION SELECT to_regclass($1)) t
            """, qualified
        ).first?.int("posts") ?? 0
    }

    /// With a DEFAULT partition: `DROP TABLE` of the attached partition, waiting at most
    /// `blockingLockTimeout` for its ACCESS EXCLUSIVE lock on `posts`.
    private func dropAttached(_ partition: PostPartition) throws {
        do {
            let posts = try context.inBatch(lockTimeout: blockingLockTimeout) { connection in
                let posts = try Self.estimatedPosts(partition.qualified, on: connection)
                try connection.execute(script: "DROP TABLE \(partition.qualified)")
                return posts
            }
            counted(dropped: posts, partition.displayName)
        } catch let error as PostgresError where error.isLockNotAvailable {
            waited(partition.displayName, for: "its drop")
        }
    }

    /// `DETACH PARTITION … CONCURRENTLY`; true when the partition is detached. Its
    /// first step waits at most `blockingLockTimeout` for its lock on `posts` (SHARE
    /// UPDATE EXCLUSIVE, which the app's statements do not wait for, but VACUUM and
    /// other DDL hold); its second waits for the transactions that use `posts`, each for
    /// at most the job's `lock_timeout`, and when it gives up the detach stays pending
    /// for `finishDetach` at the next run.
    private func detachConcurrently(_ partition: PostPartition) throws -> Bool {
        do {
            try withSessionLockTimeout(context.job.lockTimeout) {
                try context.connection.execute(
                    script: "ALTER TABLE \(context.schema).posts DETACH PARTITION \(partition.qualified) CONCURRENTLY")
            }
        } catch let error as PostgresError where error.isLockNotAvailable || error.isQueryCanceled {
            waited(partition.displayName, for: "its concurrent detach")
            return false
        }
        try mark(partition.qualified)
        return true
    }

    /// `DETACH PARTITION … FINALIZE` of a detach left pending; true when it is done.
    private func finishDetach(_ partition: PostPartition) throws -> Bool {
        do {
            try withSessionLockTimeout(context.job.lockTimeout) {
                try context.connection.execute(
                    script: "ALTER TABLE \(context.schema).posts DETACH PARTITION \(partition.qualified) FINALIZE")
            }
        } catch let error as PostgresError where error.isLockNotAvailable || error.isQueryCanceled {
            waited(partition.displayName, for: "the end of its interrupted detach")
            return false
        }
        context.logger.info(
            "finished the interrupted detach of a partition of posts",
            metadata: ["partition": "\(partition.displayName)"])
        try mark(partition.qualified)
        return true
    }

    /// Marks a detached partition for `detachedLeftovers`, should its drop time out.
    private func mark(_ qualified: String) throws {
        // The comment is this constant, not a value from the configuration.
        try context.inBatch(lockTimeout: blockingLockTimeout) { connection in
            try connection.execute(script: "COMMENT ON TABLE \(qualified) IS '\(ExpireContent.detachedComment)'")
        }
    }

    /// Tables of the app schema that a run detached and could not drop yet.
    private func detachedLeftovers() throws -> [String] {
        try context.connection.query(
            """
            SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_description d ON d.objoid = c.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = 0
            WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND d.description = $1
            ORDER BY 1
            """, ExpireContent.detachedComment
        ).rows.compactMap { $0.string("name") }
    }

    /// `DROP TABLE` of a detached partition, waiting at most `blockingLockTimeout` for
    /// its locks (ACCESS EXCLUSIVE on the tables its foreign keys reference).
    private func dropDetached(_ qualified: String, name: String) throws {
        do {
            let posts = try context.inBatch(lockTimeout: blockingLockTimeout) { connection in
                let posts = try Self.estimatedPosts(qualified, on: connection)
                try connection.execute(script: "DROP TABLE \(qualified)")
                return posts
            }
            counted(dropped: posts, name)
        } catch let error as PostgresError where error.isLockNotAvailable {
            waited(name, for: "the drop of the detached table")
        }
    }

    private func counted(dropped posts: Int, _ name: String) {
        counters.stats.add("partitions_dropped", 1)
        counters.stats.add("posts_dropped", posts)
        context.logger.info(
            "dropped a partition of posts past max_lifetime", metadata: ["partition": "\(name)", "posts": "\(posts)"])
    }

    private func waited(_ name: String, for step: String) {
        counters.stats.add("partitions_waiting", 1)
        context.logger.info(
            "a partition of posts is busy; trying again at the next run",
            metadata: ["partition": "\(name)", "step": "\(step)"])
    }

    /// Runs `body` (statements that cannot run in a transaction) with the session's
    /// `lock_timeout` at `timeout` and its `statement_timeout` at the job's (the
    /// daemon's connections keep a short one for its bookkeeping), then as they were.
    private func withSessionLockTimeout(_ timeout: Duration, _ body: () throws -> Void) throws {
        let before = try context.connection.query(
            "SELECT current_setting('lock_timeout') AS locks, current_setting('statement_timeout') AS statements"
        ).first
        func milliseconds(_ duration: Duration) -> String { "\(max(duration.microseconds / 1000, 1))ms" }
        try context.connection.query(
            "SELECT set_config('lock_timeout', $1, false), set_config('statement_timeout', $2, false)",
            milliseconds(timeout), milliseconds(context.job.statementTimeout))
        defer {
            _ = try? context.connection.query(
                "SELECT set_config('lock_timeout', $1, false), set_config('statement_timeout', $2, false)",
                before?.string("locks") ?? "0", before?.string("statements") ?? "0")
        }
        try body()
    }
}
