import Testing

@testable import CaretakerConfig
@testable import CaretakerCore
@testable import CaretakerJobs

/// The adaptive WAL budget's rule (`max_wal_rate` as ceiling, `max_commit_slowdown`), apart from the database.
@Suite struct WriteBudgetTests {
    let mb: Int64 = 1 << 20

    @Test("the budget starts at half of max_wal_rate")
    func starts() {
        let budget = WriteBudget(ceiling: 128 * mb, slowdownPercent: 50)
        #expect(budget.bytesPerSecond == 64 * mb)
        #expect(budget.floor == 8 * mb)
    }

    @Test("commits as fast as the quietest: the rate grows by 1/16 of the ceiling per probe, up to the ceiling")
    func grows() {
        var budget = WriteBudget(ceiling: 128 * mb, slowdownPercent: 50)
        budget.observe(commit: .milliseconds(2))
        #expect(budget.bytesPerSecond == 72 * mb)
        for _ in 0..<20 { budget.observe(commit: .milliseconds(2)) }
        #expect(budget.bytesPerSecond == 128 * mb)
        #expect(budget.cuts == 0)
    }

    @Test(
        "a commit more than 50% slower than the quietest (plus 1 ms of jitter) halves the rate; one at the limit does not"
    )
    func halves() {
        var budget = WriteBudget(ceiling: 128 * mb, slowdownPercent: 50)
        budget.observe(commit: .milliseconds(2))  // the quietest: limit 3 ms + 1 ms
        #expect(!budget.heldUp(.milliseconds(4)))
        #expect(budget.heldUp(.microseconds(4001)))
        budget.observe(commit: .milliseconds(4))
        #expect(budget.bytesPerSecond == 80 * mb)
        budget.observe(commit: .milliseconds(10))
        #expect(budget.bytesPerSecond == 40 * mb)
        #expect(budget.cuts == 1)
        #expect(budget.lowest == 40 * mb)
    }

    @Test("held-up commits take the rate down to the floor, ceiling ÷ 16, and no lower")
    func floor() {
        var budget = WriteBudget(ceiling: 16 * mb, slowdownPercent: 50)
        budget.observe(commit: .milliseconds(20))
        for _ in 0..<10 { budget.observe(commit: .milliseconds(200)) }
        #expect(budget.bytesPerSecond == 1 * mb)
        #expect(budget.lowest == 1 * mb)
    }

    @Test("the first probe is the reference: it cannot be held up; a quieter one later lowers the reference")
    func reference() {
        var budget = WriteBudget(ceiling: 128 * mb, slowdownPercent: 100)
        budget.observe(commit: .milliseconds(50))
        #expect(budget.cuts == 0 && budget.quietest == .milliseconds(50))
        budget.observe(commit: .milliseconds(5))
        #expect(budget.quietest == .milliseconds(5))
        #expect(budget.heldUp(.milliseconds(12)))
        #expect(!budget.heldUp(.milliseconds(11)))
    }

    @Test("the WAL pacer books at the new rate once the budget changes it")
    func pacerFollows() {
        let start = ContinuousClock.now
        var pacer = WALPacer(bytesPerSecond: 1 * mb)
        pacer.bytesPerSecond = 2 * mb
        pacer.spend(1 * mb, at: start)
        #expect(pacer.pause(at: start) == .milliseconds(500))
        pacer.bytesPerSecond = 0
        #expect(pacer.bytesPerSecond == 1)
    }

    @Test("no checkpoint cap until half of what requests a checkpoint is written; then checkpoints 10 s apart")
    func checkpointCap() {
        let distance: Int64 = 135 * mb  // max_wal_size 256MB, checkpoint_completion_target 0.9
        #expect(WriteBudget.checkpointCap(writtenSinceRedo: distance / 2 - 1, checkpointDistance: distance) == nil)
        #expect(WriteBudget.checkpointCap(writtenSinceRedo: distance / 2, checkpointDistance: distance) == 14_155_776)
        #expect(WriteBudget.checkpointCap(writtenSinceRedo: 3 * distance, checkpointDistance: distance) == 14_155_776)
        #expect(WriteBudget.checkpointCap(writtenSinceRedo: 1, checkpointDistance: 0) == nil)
    }

    @Test("with the WAL still to write known, no cap while it fits before the checkpoint distance")
    func checkpointCapWithRemaining() {
        let distance: Int64 = 539 * mb  // max_wal_size 1GB
        let half = distance / 2
        #expect(WriteBudget.checkpointCap(writtenSinceRedo: half, checkpointDistance: distance, remaining: 0) == nil)
        #expect(
            WriteBudget.checkpointCap(
                writtenSinceRedo: half, checkpointDistance: distance, remaining: distance - half - 1)
                == nil)
        #expect(
            WriteBudget.checkpointCap(writtenSinceRedo: half, checkpointDistance: distance, remaining: distance - half)
                == distance / 10)
        #expect(
            WriteBudget.checkpointCap(
                writtenSinceRedo: half - 1, checkpointDistance: distance, remaining: 10 * distance)
                == nil, "below half the distance: no cap, as without an estimate")
        // checkpoint_spacing: a checkpoint every 4 s instead of 10 s allows 2.5 times the rate.
        #expect(
            WriteBudget.checkpointCap(writtenSinceRedo: half, checkpointDistance: distance, spacing: .seconds(4))
                == Int64(Double(distance) / 4))
    }

    @Test(
        "a run forces a checkpoint when what was written since the redo point and what it still writes reach the distance"
    )
    func forcesCheckpoint() {
        let distance: Int64 = 539 * mb
        #expect(
            !WriteBudget.forcesCheckpoint(
                writtenSinceRedo: 100 * mb, remaining: distance - 100 * mb - 1, distance: distance))
        #expect(
            WriteBudget.forcesCheckpoint(writtenSinceRedo: 100 * mb, remaining: distance - 100 * mb, distance: distance)
        )
        #expect(WriteBudget.forcesCheckpoint(writtenSinceRedo: 0, remaining: 2 * distance, distance: distance))
        #expect(!WriteBudget.forcesCheckpoint(writtenSinceRedo: 0, remaining: 0, distance: distance))
        #expect(!WriteBudget.forcesCheckpoint(writtenSinceRedo: 9, remaining: 9, distance: 0), "no distance read")
    }

    @Test(
        "checkpoint_spacing = \"auto\": 10 s at max_wal_size 256MB and below, 2 s at 1GB and above, geometric between"
    )
    func scaledSpacing() {
        func spacing(_ megabytes: Int64) -> Duration { CheckpointSpacing.scaled(maxWALSize: megabytes * mb) }
        #expect(spacing(0) == .seconds(10))
        #expect(spacing(32) == .seconds(10))
        #expect(spacing(256) == .seconds(10))
        #expect(spacing(257) == .milliseconds(9_955))
        #expect(spacing(512) == .milliseconds(4_472))
        #expect(spacing(1023) == .milliseconds(2_002))
        #expect(spacing(1024) == .seconds(2))
        #expect(spacing(16 * 1024) == .seconds(2))
        #expect(CheckpointSpacing.scaled.duration(maxWALSize: 512 * mb) == .milliseconds(4_472))
        #expect(CheckpointSpacing.every(.seconds(7)).duration(maxWALSize: 512 * mb) == .seconds(7))
    }

    @Test("the cap holds the rate below the AIMD rate while it applies; lifted, the AIMD rate stands")
    func capAndAIMD() {
        var budget = WriteBudget(ceiling: 128 * mb, slowdownPercent: 100)
        budget.checkpointCap = 10 * mb
        #expect(budget.bytesPerSecond == 10 * mb && budget.lowest == 10 * mb)
        budget.observe(commit: .milliseconds(1))
        #expect(budget.aimdRate == 72 * mb && budget.bytesPerSecond == 10 * mb)
        budget.checkpointCap = nil
        #expect(budget.bytesPerSecond == 72 * mb)
    }
}

/// `compress_wal`: when a page sweep asks whether to compress, apart from the database.
@Suite struct SweepCompressionTests {
    @Test("unwanted, it never asks; wanted, it asks at most once a second until the answer is yes, then never again")
    func asks() {
        var unwanted = SweepCompression(wanted: false)
        #expect(unwanted.settled && !unwanted.shouldAsk(at: .now))
        var compression = SweepCompression(wanted: true)
        let start = ContinuousClock.now
        let asked = [0, 999, 1000, 1500, 2000].map { compression.shouldAsk(at: start + .milliseconds($0)) }
        #expect(asked == [true, false, true, false, true])
        compression.settle()
        #expect(compression.settled && !compression.shouldAsk(at: start + .seconds(10)))
    }
}
