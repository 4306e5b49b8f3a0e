import CaretakerDatabase
import Postgres

/// One run of `expire-content`: its context, queries and counters.
final class ExpireContentPass {
    let settings: ExpireContentSettings
    let context: JobContext
    var queries: ExpireContentQueries
    var counters = ExpireContentCounters()
    /// The heap's sample, once a full batch asked whether a backlog waits.
    var sample: DueSample?
    /// On a partitioned `posts`: the partitions the sweep takes, each with its sample.
    var partitionSweeps: [PartitionSweep] = []

    init(settings: ExpireContentSettings, context: JobContext) {
        self.settings = settings
        self.context = context
        queries = ExpireContentQueries(schema: context.schema, settings: settings)
    }

    func run() throws {
        if context.dryRun {
            try preview()
            return try retirePartitions()
        }
        try expirePacks()
        if !context.recordStopIfDue() { try retirePartitions() }
        if !context.recordStopIfDue() {
            let backlog = BacklogCheck { try self.sweepDecision() }
            try expirePostsByIndex(backlog)
            if case .sweep(let pages) = backlog.decision {
                if partitionSweeps.isEmpty { try sweepPosts(pages: pages) } else { try sweepPartitions() }
            }
        }
        counters.stats.add("wal_bytes", Int(context.walBytes))
    }

    /// Counts what a real run would delete now, changing nothing.
    private func preview() throws {
        // The posts of partitions the run would drop go with them (`posts_dropped`), not row by row.
        let dropped =
            settings.retirePartitions
            ? try PostPartitions.read(context.connection, schema: context.schema, maxLifetime: settings.maxLifetime)?
                .filter { $0.whollyExpired && !$0.isDefault }.compactMap(\.bounds) ?? [] : []
        let row = try context.inBatch { connection in
            try connection.query(
                queries.preview,
                queries.lifetimeParameters + [
                    Double(settings.packFullPopularity), PostgresArray(dropped.map(\.lower)),
                    PostgresArray(dropped.map(\.upper)),
                ]
            ).first
        }
        counters.stats = JobStats([
            ("packs_deleted", row?.int("packs") ?? 0), ("posts_deleted", row?.int("posts") ?? 0),
        ])
    }

    // MARK: The index path

    /// Posts past the maximum lifetime, then the buckets. Stops early when `backlog`
    /// decides for the page sweep (asked once, after the first full batch).
    private func expirePostsByIndex(_ backlog: BacklogCheck) throws {
        try keysetBatches(
            select: queries.selectPostsPastMaximum, delete: queries.deletePosts,
            parameters: queries.lifetimeParameters, backlog.staysOnIndexPath)
        guard !context.recordStopIfDue(), !backlog.choseSweep else { return }
        if settings.postFullPopularity <= ExpireContentQueries.maximumBuckets {
            try bucketBatches(backlog.staysOnIndexPath)
        } else {
            try keysetBatches(
                select: queries.selectDuePosts, delete: queries.deletePosts,
                parameters: queries.lifetimeParameters, backlog.staysOnIndexPath)
        }
    }

    /// Batches of posts in `(created_at, id)` order: each starts where the previous one
    /// stopped. After a full batch, `continueAfterFullBatch` says whether to go on.
    private func keysetBatches(
        select: String, delete: String, parameters: [any PostgresBindable],
        _ continueAfterFullBatch: () throws -> Bool
    ) throws {
        var cursor = KeysetCursor(orderedBy: "created_at")
        try context.repeatBatches(continueAfterFullBatch: continueAfterFullBatch) {
            let statement = Connection.Statement(select, parameters + cursor.parameters + [context.job.batchSize])
            return try batch(
                select: statement, delete: delete, parameters: parameters, blockedCounter: "posts_blocked"
            ) { rows in
                cursor.advance(past: rows)
                return rows.compactMap { $0.int64("id") }
            }
        }
    }

    /// Batches of due posts found bucket by bucket; what is returned is due, so each
    /// batch starts afresh, leaving out the posts this run found blocked.
    private func bucketBatches(_ continueAfterFullBatch: () throws -> Bool) throws {
        try context.repeatBatches(continueAfterFullBatch: continueAfterFullBatch) {
            let statement = Connection.Statement(
                queries.selectPostsByBucket,
                queries.lifetimeParameters + [
                    context.job.batchSize,
                    context.blockedIDs("posts_blocked"),
                ])
            return try batch(
                select: statement, delete: queries.deletePosts, parameters: queries.lifetimeParameters,
                blockedCounter: "posts_blocked"
            ) { rows in
                rows.compactMap { $0.int64("id") }
            }
        }
    }

    /// One transaction: `select` and lock candidates (sent with the transaction's start),
    /// `lock` what their deadline depends on (with the candidates as `$1`), delete those
    /// still due. When a row the app holds or protects (a lock, a foreign key, a
    /// trigger) fails the batch, it is redone one row at a time: the rows that fail
    /// again are counted under `blockedCounter` and wait for the next run. Returns
    /// how many candidates there were.
    func batch(
        select: Connection.Statement, lock: String? = nil, delete: String,
        parameters: [any PostgresBindable], blockedCounter: String,
        candidatesIn: ([Row]) -> [Int64]
    ) throws -> Int {
        var candidates: [Int64] = []
        let started = ContinuousClock.now
        let deleteStillDue = { (connection: Connection, ids: [Int64]) throws -> DeletedRows in
            if let lock { try connection.query(lock, PostgresArray(ids)) }
            return try DeletedRows(connection.query(delete, parameters + [PostgresArray(ids)]).first)
        }
        do {
            let deleted = try context.inBatch(first: select) { selected, connection in
                candidates = candidatesIn(selected.rows)
                guard !candidates.isEmpty else { return DeletedRows() }
                return try deleteStillDue(connection, candidates)
            }
            counters.record(deleted, batch: candidates.isEmpty ? nil : ContinuousClock.now - started)
        } catch let error as PostgresError where error.isRowLevel && !candidates.isEmpty {
            context.logger.debug(
                "a row refused the batch; retrying it row by row",
                metadata: ["rows": "\(candidates.count)", "error": "\(error)"])
            for deleted in try context.oneByOne(candidates, counter: blockedCounter, { try deleteStillDue($0, [$1]) }) {
                counters.record(deleted, batch: nil)
            }
        }
        return candidates.count
    }
}

/// How a run deletes posts.
enum PostPath: Equatable {
    case index
    /// Sweep the heap's `pages` pages.
    case sweep(pages: Int64)
}

/// The run's one look at whether a backlog is waiting, taken after the first full batch.
final class BacklogCheck {
    private let sample: () throws -> PostPath
    /// `nil` until a full batch asked.
    private(set) var decision: PostPath?

    init(sample: @escaping () throws -> PostPath) { self.sample = sample }

    /// After a full batch: true to go on with the index path, false when the sweep takes over.
    func staysOnIndexPath() throws -> Bool {
        if decision == nil { decision = try sample() }
        return decision == .index
    }

    var choseSweep: Bool {
        if case .sweep = decision { return true }
        return false
    }
}
