import Postgres

/// The page sweep of a run of `expire-content` (`ExpireContent` says when it is taken).
extension ExpireContentPass {
    /// Samples the heap of a large table: the sweep when much of it is due, else the index path.
    func sweepDecision() throws -> PostPath {
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
