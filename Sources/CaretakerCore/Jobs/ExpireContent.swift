import Postgres

/// `expire-content`: deletes packs, then posts, whose popularity-dependent lifetime has passed.
///
/// Lifetime `L(p) = min + (max − min) × min(1, max(p, 0) / full)`; a thing is due when
/// `created_at + L(p) <= now()` on the database clock. Every batch is a short
/// transaction that re-checks the deadline in the `DELETE` itself (likes may have
/// arrived meanwhile) and never waits long for rows the app holds.
///
/// Posts take one of two paths:
/// - **index path** (steady state, little due): posts older than the maximum
///   lifetime by keyset over `(created_at, id)`, then the rest by one index probe
///   per popularity bucket on `(likes, created_at)` — cost follows what is due,
///   not the posts waiting for their extended deadline;
/// - **page sweep** (a backlog): `DELETE` over consecutive ranges of heap pages
///   (a TID range scan), so no batch re-reads what an earlier one settled. A range
///   that meets a row the app holds gives up after a short lock timeout and is
///   redone with `SKIP LOCKED`.
///
/// Every run starts on the index path. Only when a batch comes back full (a
/// backlog may be waiting) does a small sample of the heap decide whether to
/// switch to the sweep, so a steady-state run costs a few index probes and nothing
/// that grows with the table.
struct ExpireContent: Job {
    let settings: ExpireContentSettings

    /// Below this many heap pages the index path is always right.
    static let sweepMinimumPages = 2_000
    /// The due share of a sampled table from which the page sweep is faster.
    static let sweepMinimumDueShare = 0.2
    /// Heap pages read to estimate how much of the table is due, and line pointers tried on each.
    static let samplePages: Int64 = 16
    static let sampleLinePointers = 100
    /// Heap pages in the first sweep transaction: about 5,000 rows of a typical posts table.
    static let sweepFirstRangePages: Int64 = 128
    /// What one sweep transaction should take. Each transaction costs a few round
    /// trips and an executor start-up beyond its rows, so fewer, larger ranges come
    /// nearer the single statement's speed; 20 ms stays far below the 50 ms p99
    /// the app can live with (BENCHMARKS.md). Ranges never exceed `batch_size` pages.
    static let sweepTargetDuration: Duration = .milliseconds(20)
    /// With a WAL budget, one sweep range writes at most this much WAL (some 65 pages
    /// of a bulk delete): small enough that an app commit queued behind its flush
    /// waits about as long as for its own, whatever the rate.
    static let sweepRangeWAL: Int64 = 640 << 10
    /// The looks one check of counted posts takes, in job batches (see `checkCountedPosts`).
    static let countedCheckBatches = 10
    /// A sweep range waits at most this long for a row lock before it skips locked rows.
    static let sweepLockTimeout: Duration = .milliseconds(50)

    func run(_ context: JobContext) throws -> JobStats {
        let pass = ExpireContentPass(settings: settings, context: context)
        try pass.run()
        return pass.counters.stats
    }

    /// How to delete posts from a heap of `pages` pages, of whose sampled rows
    /// `due` are due: the page sweep when the table is large and at least
    /// `sweepMinimumDueShare` of it is due, else the index path.
    static func postPath(pages: Int64, sampled: Int, due: Int) -> PostPath {
        guard pages >= sweepMinimumPages, sampled > 0,
            Double(due) / Double(sampled) >= sweepMinimumDueShare
        else { return .index }
        return .sweep(pages: pages)
    }

    /// Row addresses on `samplePages` pages spread evenly over a heap of `pages` pages,
    /// as a `tid[]` parameter (addresses without a row are simply not found).
    static func sampleRows(pages: Int64) -> String {
        let addresses = (0..<samplePages).flatMap { index in
            let page = index * pages / samplePages
            return (1...sampleLinePointers).map { "\"(\(page),\($0))\"" }
        }
        return "{" + addresses.joined(separator: ",") + "}"
    }

    /// What the full page images of a sweep range of `pages` heap pages that deleted
    /// `deleted` rows would take uncompressed, at most: one block per page changed, and
    /// no more pages changed than rows deleted. A compressing sweep sizes its ranges
    /// and books the WAL budget on at least this: compression then saves WAL (and the
    /// checkpoints it forces) without making ranges larger in pages or speeding up a
    /// sweep the budget or the checkpoint cap holds back. Pages changed are what the
    /// app also feels (dirty pages to write out; measured: at
    /// 256MB a compressed sweep sized and charged by its WAL alone went 1.5 times as
    /// fast, and the app's p99 rose by half).
    static func uncompressedImages(pages: Int64, deleted: Int64, blockSize: Int64) -> Int64 {
        max(0, min(pages, deleted)) * blockSize
    }

    /// The WAL one sweep range may write under a budget of `rate` bytes per second:
    /// `sweepRangeWAL`, or what the budget allows in one `batch_pause` when that is
    /// more (low-footprint mode pauses 100 ms after every range anyway).
    static func sweepWALLimit(rate: Int64, batchPause: Duration = .zero) -> Int64 {
        max(sweepRangeWAL, Int64(Double(rate) * Double(batchPause.microseconds) / 1_000_000))
    }
}

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

    // MARK: Packs and the index path

    /// Looks at the packs that may be due (`caretaker.pack_looks`, migration 10) and
    /// deletes those that are: first the marks the app's writes left become looks due
    /// now; then, if the looks were made with other settings, after a `TRUNCATE`, or
    /// more than a day ago, every pack that may expire is looked at again, or else,
    /// after the app deleted posts, the looks that counted a post now gone become due;
    /// then every look that is due. A run with nothing due reads a few index entries,
    /// however many packs wait.
    private func expirePacks() throws {
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
    private func batch(
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

    // MARK: The page sweep

    /// Samples the heap of a large table: the sweep when much of it is due, else the index path.
    private func sweepDecision() throws -> PostPath {
        if let partitions = try PostPartitions.read(
            context.connection, schema: context.schema, maxLifetime: settings.maxLifetime)
        {
            return try partitionSweepDecision(partitions)
        }
        let pages = try heapPages()
        guard pages >= ExpireContent.sweepMinimumPages else { return .index }
        let sample = try sampleDuePosts(pages: pages)
        self.sample = sample
        if sample.sampled > 0 {
            context.logger.debug(
                "sampled posts",
                metadata: [
                    "pages": "\(pages)", "due_share": "\(Double(sample.due) / Double(sample.sampled))",
                ])
        }
        return ExpireContent.postPath(pages: pages, sampled: sample.sampled, due: sample.due)
    }

    /// The heap pages `posts` has now (deleted rows leave their pages behind until VACUUM).
    private func heapPages() throws -> Int64 {
        let posts = context.schema + ".posts"
        return try context.connection.query(ExpireContentQueries.heapPages, posts).first?.int64("pages") ?? 0
    }

    /// The posts a sample of the heap's `pages` pages found, and how many of them are due, page by page.
    func sampleDuePosts(pages: Int64) throws -> DueSample {
        // A fixed number of pages spread over the heap, read by a TID scan: the cost
        // of deciding does not grow with the table (TABLESAMPLE reads a share of it).
        let rows = try context.inBatch { connection in
            // With ~1,600 addresses the planner prices the TID scan above a sequential
            // scan of a small heap and reads the whole table (15 ms at 5,000 pages).
            try connection.execute(script: "SET LOCAL enable_seqscan = off")
            return try connection.query(
                queries.sampleDuePosts,
                queries.lifetimeParameters + [ExpireContent.sampleRows(pages: pages)] + queries.partitionParameters
            ).rows
        }
        return DueSample(
            pages: pages,
            sampledPages: rows.compactMap { row in
                row.int64("page").map {
                    DueSample.Page(page: $0, sampled: row.int("sampled") ?? 0, due: row.int("due") ?? 0)
                }
            })
    }

    /// Deletes due posts range by range over the heap, each range one transaction
    /// of at most `batch_size` pages (the "equivalent bound on the table pages it
    /// visits" every batch keeps to, used only when much of the table is due), sized so that
    /// one takes about `sweepTargetDuration`.
    func sweepPosts(pages: Int64) throws {
        let job = context.job
        var range = SweepRange(
            maximumPages: Int64(max(1, job.batchSize)),
            walLimit: job.maxWALRate.map { ExpireContent.sweepWALLimit(rate: $0, batchPause: job.batchPause) })
        counters.stats.add("swept_pages", 0)
        var compression = SweepCompression(wanted: settings.compressWAL)
        var compressing = false
        /// Read when compression is wanted: the WAL the sweep expects before it can
        /// measure its own, and the page images it books once it compresses.
        let blockSize =
            settings.compressWAL
            ? try context.connection.query(ExpireContentQueries.blockSize).first?.int64("block_size") : nil
        var remaining: Int64?
        var first: Int64 = 0
        let walBefore = context.walBytes
        let deletedBeforeSweep = counters.stats["posts_deleted"] ?? 0
        var pruning = Duration.zero
        while first < pages, !context.recordStopIfDue() {
            if let expected = remaining ?? blockSize.flatMap({ sample?.expectedWAL(from: first, blockSize: $0) }),
                compression.shouldAsk(at: .now), context.forcesCheckpoint(remainingWAL: expected)
            {
                compression.settle()
                if let method = context.compressFullPageImages() {
                    compressing = true
                    context.logger.debug(
                        "the backlog will request a checkpoint: the sweep compresses its full page images from here",
                        metadata: [
                            "wal_compression": "\(method)", "page": "\(first)", "remaining_wal": "\(expected)",
                            "estimated_from": "\(remaining == nil ? "the sample" : "the sweep so far")",
                        ])
                }
            }
            let last = first + range.pages
            let swept = min(last, pages) - first
            let started = ContinuousClock.now
            let rangeWALBefore = context.walBytes
            let deletedBefore = counters.stats["posts_deleted"] ?? 0
            let waitedForLocks = try sweepRange(from: first, to: last)
            // Compressing, a range is sized and charged as if it were not: the same pages
            // per range and per second, only less WAL.
            var wrote = context.lastBatchWAL
            if compressing, let blockSize {
                let uncompressed = ExpireContent.uncompressedImages(
                    pages: swept, deleted: Int64((counters.stats["posts_deleted"] ?? 0) - deletedBefore),
                    blockSize: blockSize)
                context.chargeWALBudget(uncompressed - (context.walBytes - rangeWALBefore), from: started)
                wrote = max(wrote, uncompressed)
            }
            if !waitedForLocks { range.adjust(took: ContinuousClock.now - started, wrote: wrote) }
            counters.stats.add("swept_pages", Int(swept))
            remaining = sample?.remainingWAL(
                after: last, wrote: context.walBytes - walBefore,
                deleted: Int64((counters.stats["posts_deleted"] ?? 0) - deletedBeforeSweep))
            context.expectRemainingWAL(remaining)
            context.pauseBetweenBatches()
            if settings.pruneSweptPages, !context.recordStopIfDue() { pruning += try prune(first..<(first + swept)) }
            first = last
        }
        if settings.pruneSweptPages { counters.stats.add("prune_ms", Int(pruning.microseconds / 1000)) }
        context.expectRemainingWAL(nil)
    }

    /// Reads the swept heap pages `pages` once more (`prune_swept_pages`), which
    /// prunes them: PostgreSQL cuts a page's deleted tuples down to dead line pointers
    /// when it reads a page whose deletions no snapshot can still see, and sets hint
    /// bits on the rest. Without it the app's own reads do that at their first visit
    /// to each page. It runs after the pause that follows the range, by when the
    /// app's transactions older than the deletion have ended, and counts as work for
    /// the busy share: it is the next stretch's start. Returns the time it took.
    private func prune(_ pages: Range<Int64>) throws -> Duration {
        let started = ContinuousClock.now
        _ = try context.connection.query(
            queries.prunePostsOnPages, [pages.lowerBound, pages.upperBound] + queries.partitionParameters)
        counters.stats.add("pruned_pages", pages.count)
        return ContinuousClock.now - started
    }

    /// Returns true when the range met rows the app holds (its time then says nothing
    /// about its size). A range refused by a row the app protects (a foreign key, a
    /// trigger) is redone one due post at a time, the refused ones counted as blocked.
    private func sweepRange(from first: Int64, to last: Int64) throws -> Bool {
        let parameters = queries.lifetimeParameters + [first, last] + queries.partitionParameters
        let started = ContinuousClock.now
        do {
            do {
                let deleted = try context.inBatch(
                    lockTimeout: min(context.job.lockTimeout, ExpireContent.sweepLockTimeout),
                    statement: queries.deletePostsOnPages, parameters
                ).affectedRows
                counters.record(DeletedRows(posts: deleted), batch: ContinuousClock.now - started)
                return false
            } catch let error as PostgresError where error.isLockNotAvailable {
                let deleted = try context.inBatch(statement: queries.deleteUnlockedPostsOnPages, parameters)
                    .affectedRows
                counters.record(DeletedRows(posts: deleted), batch: ContinuousClock.now - started)
                return true
            }
        } catch let error as PostgresError where error.isRowLevel {
            context.logger.debug(
                "a row refused the page range; retrying it row by row",
                metadata: ["first_page": "\(first)", "error": "\(error)"])
            let due = try context.inBatch(statement: queries.selectDuePostsOnPages, parameters).rows.compactMap {
                $0.int64("id")
            }
            let deleted = try context.oneByOne(due, counter: "posts_blocked") { connection, id in
                DeletedRows(
                    try connection.query(queries.deletePosts, queries.lifetimeParameters + [PostgresArray([id])]).first)
            }
            for one in deleted { counters.record(one, batch: nil) }
            return true
        }
    }
}

/// The size of the next sweep range: grows (at most doubling) while ranges take
/// less than `sweepTargetDuration` and write less WAL than `walLimit`, shrinks
/// when they take or write more, within 16 pages and `maximumPages`.
///
/// The WAL limit matters more than the time: an app commit waits for the flush of
/// all the WAL written before it, so one range's WAL is what a commit landing just
/// after it may wait for (a 1,000-page range writes about 10 MB: tens of ms).
struct SweepRange {
    static let minimumPages: Int64 = 16
    let maximumPages: Int64
    /// WAL one range should write at most (`nil`: no limit).
    let walLimit: Int64?
    private(set) var pages: Int64

    init(maximumPages: Int64, walLimit: Int64? = nil) {
        self.maximumPages = max(1, maximumPages)
        self.walLimit = walLimit
        pages = min(ExpireContent.sweepFirstRangePages, self.maximumPages)
    }

    mutating func adjust(took duration: Duration, wrote walBytes: Int64 = 0) {
        let tookMicroseconds = max(1, duration.microseconds)
        var ideal = Double(pages) * Double(ExpireContent.sweepTargetDuration.microseconds) / Double(tookMicroseconds)
        if let walLimit, walBytes > 0 {
            ideal = min(ideal, Double(pages) * Double(walLimit) / Double(walBytes))
        }
        let next = Int64(min(ideal, Double(pages * 2)))
        pages = min(maximumPages, max(min(Self.minimumPages, maximumPages), next))
    }
}

/// What the sample of the heap found (`ExpireContent.samplePages` pages spread evenly
/// over it), page by page: how much of the table is due, and where.
struct DueSample: Equatable {
    struct Page: Equatable {
        /// The sampled page's number.
        let page: Int64
        let sampled: Int
        let due: Int
    }

    /// The heap's pages when sampled.
    let pages: Int64
    /// The sampled pages that held a row, in any order.
    let sampledPages: [Page]

    var sampled: Int { sampledPages.reduce(0) { $0 + $1.sampled } }
    var due: Int { sampledPages.reduce(0) { $0 + $1.due } }

    /// The due rows on pages `page` and after: each sampled page stands for the
    /// stretch of the heap up to the next one (`pages ÷ samplePages` pages, each with
    /// as many due rows as it), counted in part when `page` falls inside it. A page
    /// with more than `sampleLinePointers` rows counts as that many, so this errs
    /// low. `nil` when the sample found nothing due.
    func dueRows(from page: Int64) -> Double? {
        guard due > 0, pages > 0 else { return nil }
        return sampledPages.reduce(0.0) { total, sampled in
            total + Double(sampled.due) * stretchAhead(of: sampled.page, from: page)
        }
    }

    /// The pages of the stretch that sampled page `sampled` stands for (`pages ÷
    /// samplePages` pages from it) that lie at `page` or after.
    private func stretchAhead(of sampled: Int64, from page: Int64) -> Double {
        let stretch = Double(pages) / Double(ExpireContent.samplePages)
        return min(stretch, max(0, Double(sampled) + stretch - Double(page)))
    }

    /// The WAL a sweep that deleted `deleted` rows and wrote `wrote` bytes over the
    /// pages before `page` should still write: as much per row as so far, for the
    /// due rows the sample puts after `page`. Counted in rows the sweep deleted, not
    /// in the sample's share of the due rows behind `page`: the sample is taken after
    /// the run's first batch, whose rows lie at the heap's start, so the sample can
    /// find the first stretch empty, and a share would count it as done: on the
    /// bench's 2M posts that made 50 MB written over the first tenth of the heap
    /// look like 940 MB to come, not 330. `nil` while the sweep has deleted too few
    /// (under 5% of those and the ones ahead) for its WAL per row to mean much, or
    /// when the sample found nothing due.
    func remainingWAL(after page: Int64, wrote: Int64, deleted: Int64) -> Int64? {
        guard let ahead = dueRows(from: page), deleted > 0,
            Double(deleted) >= 0.05 * (Double(deleted) + ahead)
        else { return nil }
        return Int64(Double(max(0, wrote)) * ahead / Double(deleted))
    }

    /// The WAL a sweep from `page` should write, before it has deleted enough to
    /// measure its own (`remainingWAL`): a full page image of every page ahead that
    /// holds a due row (each sampled page with one standing for its stretch), as the
    /// first change of a page after a checkpoint writes, and a delete record for each
    /// due row. Roughly: each image counts as a whole block (a page with free space
    /// writes less), but a TOASTed value's rows are not counted, nor rows past
    /// `sampleLinePointers` on a page. `nil` when the sample found nothing due.
    func expectedWAL(from page: Int64, blockSize: Int64) -> Int64? {
        guard let rows = dueRows(from: page) else { return nil }
        let duePages = sampledPages.filter { $0.due > 0 }.reduce(0.0) { total, sampled in
            total + stretchAhead(of: sampled.page, from: page)
        }
        return Int64(duePages * Double(blockSize) + rows * Double(Self.deleteRecordBytes))
    }

    /// The WAL of one row's delete beside any page image: a record header (24 bytes),
    /// a block reference (20), a data header (2) and `xl_heap_delete` (8). The bench's
    /// single `DELETE` of 1.6M posts wrote 415 MB: 42,605 page images of at most 8 kB,
    /// and 1.6M records, at least 54 bytes each.
    static let deleteRecordBytes = 54
}

/// `compress_wal`: whether a page sweep compresses its full page images from here
/// on. Only a backlog that will request a checkpoint gains from it: it writes a
/// third less WAL, so fewer checkpoints come, and fewer of the stalls at their end.
/// A backlog that fits pays lz4's CPU for nothing: at 2M posts, no checkpoint
/// forced, the app's p99 was 1.98× compressed against 1.49× without, at a slower
/// pace. So the sweep asks before its first
/// range, with the WAL the sample lets it expect (`DueSample.expectedWAL`), and
/// again at most every `askInterval` while the answer is no (the app's WAL brings
/// the checkpoint closer too), from the WAL it measures once it can
/// (`DueSample.remainingWAL`); once it compresses, it goes on to the end. Asking
/// first only once a twentieth of the backlog was gone, it left that twentieth
/// uncompressed, and a checkpoint forced that much sooner.
struct SweepCompression {
    static let askInterval: Duration = .seconds(1)

    /// True once the question is answered for good: compressing, or not wanted.
    private(set) var settled: Bool
    private var lastAsked: ContinuousClock.Instant?

    init(wanted: Bool) { settled = !wanted }

    /// True when the sweep should ask now whether its backlog will request a checkpoint.
    mutating func shouldAsk(at now: ContinuousClock.Instant) -> Bool {
        guard !settled else { return false }
        if let lastAsked, now - lastAsked < Self.askInterval { return false }
        lastAsked = now
        return true
    }

    /// The backlog will request a checkpoint: compress from here (when the role may).
    mutating func settle() { settled = true }
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

/// Rows a batch deleted.
struct DeletedRows {
    var packs = 0
    var posts = 0

    init(packs: Int = 0, posts: Int = 0) {
        self.packs = packs
        self.posts = posts
    }

    init(_ row: Row?) {
        self.init(packs: row?.int("packs") ?? 0, posts: row?.int("posts") ?? 0)
    }
}

/// A run's counters, with the durations of its batches for the `batch_p99_ms` /
/// `batch_max_ms` stats.
struct ExpireContentCounters {
    var stats = JobStats([
        ("packs_deleted", 0), ("posts_deleted", 0), ("packs_blocked", 0), ("posts_blocked", 0),
        ("packs_looked", 0), ("batches", 0),
    ])
    private var batchMilliseconds = MillisecondHistogram()

    mutating func record(_ deleted: DeletedRows, batch duration: Duration?) {
        stats.add("packs_deleted", deleted.packs)
        stats.add("posts_deleted", deleted.posts)
        guard let duration else { return }
        stats.add("batches")
        batchMilliseconds.add(Int((duration.microseconds + 999) / 1000))
        set("batch_p99_ms", batchMilliseconds.percentile(0.99))
        set("batch_max_ms", batchMilliseconds.maximum)
    }

    private mutating func set(_ name: String, _ value: Int) {
        stats.add(name, value - (stats[name] ?? 0))
    }
}

/// Durations in whole milliseconds and how many took each. Percentiles are exact
/// (nearest rank, as over a sorted list of every value), and adding one costs a
/// look-up, not a sort: memory grows with the distinct values, not their number.
struct MillisecondHistogram {
    private var counts: [Int: Int] = [:]
    /// The distinct values, ascending.
    private var values: [Int] = []
    private(set) var count = 0

    mutating func add(_ milliseconds: Int) {
        if counts[milliseconds] == nil {
            let index = values.partitioningIndex { $0 > milliseconds }
            values.insert(milliseconds, at: index)
        }
        counts[milliseconds, default: 0] += 1
        count += 1
    }

    /// The value at rank ⌈q × count⌉ (1-based, ascending); 0 when empty.
    func percentile(_ q: Double) -> Int {
        let rank = max(1, Int((Double(count) * q).rounded(.up)))
        // Counted from the top: a high percentile is a few steps from the maximum.
        var above = count
        for value in values.reversed() {
            above -= counts[value, default: 0]
            if above < rank { return value }
        }
        return values.first ?? 0
    }

    var maximum: Int { values.last ?? 0 }
}

extension Array {
    /// The first index whose element satisfies `belongsAfter` (the array is partitioned by it).
    func partitioningIndex(where belongsAfter: (Element) -> Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let middle = (low + high) / 2
            if belongsAfter(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
