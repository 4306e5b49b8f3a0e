import CaretakerDatabase
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
