import Testing

@testable import CaretakerCore
@testable import CaretakerJobs
@testable import CaretakerSupport

/// How `expire-content`'s page sweep sizes its transactions.
@Suite struct SweepRangeTests {
    @Test("the first range is 128 pages, or batch_size pages when that is smaller")
    func first() {
        #expect(SweepRange(maximumPages: 1000).pages == 128)
        #expect(SweepRange(maximumPages: 50).pages == 50)
    }

    @Test("fast ranges grow at most twofold per step, up to batch_size pages")
    func grows() {
        var range = SweepRange(maximumPages: 1000)
        range.adjust(took: .milliseconds(1))
        #expect(range.pages == 256)
        range.adjust(took: .milliseconds(10))
        #expect(range.pages == 512)
        range.adjust(took: .milliseconds(10))
        #expect(range.pages == 1000)
        range.adjust(took: .milliseconds(1))
        #expect(range.pages == 1000)
    }

    @Test("a range near the 20 ms target keeps its size; slow ones shrink, never below 16 pages")
    func shrinks() {
        var range = SweepRange(maximumPages: 1000)
        range.adjust(took: .milliseconds(20))
        #expect(range.pages == 128)
        range.adjust(took: .milliseconds(40))
        #expect(range.pages == 64)
        range.adjust(took: .seconds(5))
        #expect(range.pages == 16)
        var tiny = SweepRange(maximumPages: 8)
        tiny.adjust(took: .seconds(5))
        #expect(tiny.pages == 8)
    }
}

/// `batch_p99_ms` / `batch_max_ms`: exact nearest-rank values without re-sorting every batch.
@Suite struct BatchDurationTests {
    /// What `ExpireContentCounters` reported before: sort everything, take rank ⌈0.99 n⌉.
    static func sortedP99(_ milliseconds: [Int]) -> Int {
        let sorted = milliseconds.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
    }

    @Test("p99 and max equal those of the sorted list, after every batch")
    func exact() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            var histogram = MillisecondHistogram()
            var all: [Int] = []
            for _ in 0..<Int.random(in: 1...400, using: &generator) {
                // Mostly short batches, a few slow ones, many repeats.
                let value =
                    Bool.random(using: &generator)
                    ? Int.random(in: 1...5, using: &generator)
                    : Int.random(in: 1...300, using: &generator)
                histogram.add(value)
                all.append(value)
                #expect(histogram.percentile(0.99) == Self.sortedP99(all), "\(all)")
                #expect(histogram.maximum == all.max())
            }
        }
    }

    @Test("ExpireContentCounters rounds each batch up to whole milliseconds, as before")
    func batchDurations() {
        var counters = ExpireContentCounters()
        for microseconds in [400, 1_000, 1_001, 7_500] {
            counters.record(DeletedRows(posts: 1), batch: .microseconds(microseconds))
        }
        #expect(counters.stats["batch_p99_ms"] == 8)
        #expect(counters.stats["batch_max_ms"] == 8)
        #expect(counters.stats["batches"] == 4 && counters.stats["posts_deleted"] == 4)
        #expect(MillisecondHistogram().percentile(0.99) == 0)
    }
}

/// The sweep's ranges under a WAL budget (`max_wal_rate`).
@Suite struct SweepRangeWALTests {
    @Test("a range that wrote more WAL than its limit shrinks to fit it, even when it was fast")
    func shrinksToWAL() {
        var range = SweepRange(maximumPages: 1000, walLimit: 640 << 10)
        range.adjust(took: .milliseconds(2), wrote: 1280 << 10)
        #expect(range.pages == 64)
        range.adjust(took: .milliseconds(1), wrote: 640 << 10)
        #expect(range.pages == 64)
    }

    @Test("under its WAL limit a range grows as before; without a limit WAL does not count")
    func growsUnderWAL() {
        var range = SweepRange(maximumPages: 1000, walLimit: 640 << 10)
        range.adjust(took: .milliseconds(5), wrote: 160 << 10)
        #expect(range.pages == 256)
        var free = SweepRange(maximumPages: 1000)
        free.adjust(took: .milliseconds(20), wrote: 100 << 20)
        #expect(free.pages == 128)
    }

    @Test("the limit is 640 kB whatever the rate, or what the budget allows in batch_pause when that is more")
    func limit() {
        #expect(ExpireContent.sweepWALLimit(rate: 256 << 20) == 655_360)

        #expect(ExpireContent.sweepWALLimit(rate: 256 << 20, batchPause: .milliseconds(2)) == 655_360)
        #expect(ExpireContent.sweepWALLimit(rate: 256 << 20, batchPause: .milliseconds(3)) == 805_306)
        #expect(ExpireContent.sweepWALLimit(rate: 16 << 20, batchPause: .milliseconds(100)) == 1_677_721)
        #expect(ExpireContent.sweepWALLimit(rate: 1) == 655_360)
    }
}

@Suite struct DueSampleTests {
    /// 1,600 pages sampled at pages 0, 100, …, 1500 (each standing for 100 pages);
    /// the first `duePages` sampled pages hold 100 due rows, the others none.
    static func sample(duePages: Int) -> DueSample {
        DueSample(
            pages: 1_600,
            sampledPages: (0..<16).map { index in
                .init(page: Int64(index) * 100, sampled: 100, due: index < duePages ? 100 : 0)
            })
    }

    @Test(
        "the due rows ahead of a page follow where the sample found them, each sampled page standing for its stretch, counted in part"
    )
    func dueRows() throws {
        let firstHalf = Self.sample(duePages: 8)
        #expect(firstHalf.sampled == 1_600 && firstHalf.due == 800)
        #expect(firstHalf.dueRows(from: 0) == 80_000)
        #expect(firstHalf.dueRows(from: 400) == 40_000)
        #expect(firstHalf.dueRows(from: 450) == 35_000, "half of the stretch at 400 is still ahead")
        #expect(firstHalf.dueRows(from: 800) == 0)
        #expect(firstHalf.dueRows(from: 1_600) == 0)
        #expect(Self.sample(duePages: 0).dueRows(from: 0) == nil)
    }

    @Test("the WAL still to come: as much per deleted row as so far, for the due rows ahead; none past the last")
    func remainingWAL() {
        let firstHalf = Self.sample(duePages: 8)
        // Pages 0-199 (20,000 rows) wrote 100 MB: 60,000 rows to go.
        #expect(firstHalf.remainingWAL(after: 200, wrote: 100_000_000, deleted: 20_000) == 300_000_000)
        // Past the due stretch, whatever the pages left: nothing more.
        #expect(firstHalf.remainingWAL(after: 900, wrote: 400_000_000, deleted: 80_000) == 0)
        // The same table with every sampled page due: the pages left, not the due rows, set it.
        #expect(
            Self.sample(duePages: 16).remainingWAL(after: 800, wrote: 400_000_000, deleted: 80_000) == 400_000_000)
        // Too little done to tell (under 5% of the rows deleted and ahead), or nothing due or deleted.
        #expect(firstHalf.remainingWAL(after: 30, wrote: 1_000_000, deleted: 3_000) == nil)
        #expect(firstHalf.remainingWAL(after: 40, wrote: 4_000_000, deleted: 4_000) == 76_000_000)
        #expect(Self.sample(duePages: 0).remainingWAL(after: 800, wrote: 1, deleted: 1) == nil)
        #expect(firstHalf.remainingWAL(after: 200, wrote: 1, deleted: 0) == nil)
    }

    @Test(
        "before the sweep can measure its WAL, it expects a page image of each page ahead holding a due row and a record per due row; nothing past the last, nothing when none is due"
    )
    func expectedWAL() {
        let firstHalf = Self.sample(duePages: 8)
        // 800 pages with due rows, 80,000 rows: 800 × 8,192 + 80,000 × 54.
        #expect(firstHalf.expectedWAL(from: 0, blockSize: 8_192) == 10_873_600)
        // From the middle of the stretch at page 400: 350 pages and 35,000 rows.
        #expect(firstHalf.expectedWAL(from: 450, blockSize: 8_192) == Int64(350 * 8_192 + 35_000 * 54))
        // Past the due stretch, and a sample with nothing due.
        #expect(firstHalf.expectedWAL(from: 800, blockSize: 8_192) == 0)
        #expect(Self.sample(duePages: 0).expectedWAL(from: 0, blockSize: 8_192) == nil)
        // A sampled page with few due rows still stands for a stretch of page images.
        let sparse = DueSample(
            pages: 1_600, sampledPages: [.init(page: 0, sampled: 100, due: 1), .init(page: 100, sampled: 100, due: 0)])
        #expect(sparse.expectedWAL(from: 0, blockSize: 8_192) == Int64(100 * 8_192 + 100 * 54))
    }

    @Test(
        "a first stretch the sample found empty (the run's first batch emptied its sampled page) is not counted as done"
    )
    func emptiedFirstStretch() {
        let full = Self.sample(duePages: 8)
        let emptied = DueSample(pages: full.pages, sampledPages: Array(full.sampledPages.dropFirst()))
        // 450 pages of 100 rows swept at 1 kB a row: 35,000 rows, 35 MB to go. Counted
        // as a share of the sampled due rows, half of them would look done, and 45 MB to come.
        #expect(emptied.remainingWAL(after: 450, wrote: 45_000_000, deleted: 45_000) == 35_000_000)
    }
}
