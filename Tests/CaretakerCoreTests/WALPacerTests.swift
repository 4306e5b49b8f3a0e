import Testing

@testable import CaretakerCore
@testable import CaretakerJobs

/// The WAL budget's arithmetic (`max_wal_rate`), apart from the database.
@Suite struct WALPacerTests {
    let start = ContinuousClock.now

    @Test("a batch that wrote 1 MB on a 10 MB/s budget makes the next one start 100 ms after it started")
    func paces() {
        var pacer = WALPacer(bytesPerSecond: 10 << 20)
        pacer.spend(1 << 20, at: start)
        #expect(pacer.pause(at: start) == .milliseconds(100))
        #expect(pacer.pause(at: start + .milliseconds(30)) == .milliseconds(70))
        #expect(pacer.pause(at: start + .milliseconds(100)) == .zero)
    }

    @Test("bookings queue up: batches written faster than the budget add up their waits")
    func queues() {
        var pacer = WALPacer(bytesPerSecond: 1 << 20)
        pacer.spend(512 << 10, at: start)
        pacer.spend(512 << 10, at: start + .milliseconds(10))
        #expect(pacer.pause(at: start + .milliseconds(10)) == .milliseconds(990))
    }

    @Test("time spent not writing is not saved up: a later batch still books its own share")
    func noBurst() {
        var pacer = WALPacer(bytesPerSecond: 1 << 20)
        pacer.spend(1 << 20, at: start)
        pacer.spend(1 << 20, at: start + .seconds(10))
        #expect(pacer.pause(at: start + .seconds(10)) == .seconds(1))
    }

    @Test("a batch that wrote nothing owes nothing")
    func nothing() {
        var pacer = WALPacer(bytesPerSecond: 1 << 20)
        pacer.spend(0, at: start)
        #expect(pacer.pause(at: start) == .zero)
    }
}
