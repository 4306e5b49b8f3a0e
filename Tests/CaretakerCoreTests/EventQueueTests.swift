import Testing

@testable import CaretakerCore

/// The daemon's sleep: `beforeSleeping` (the idle memory release) runs only when the
/// wait is about to sleep, last before `poll(2)`.
@Suite struct EventQueueTests {
    @Test("an event already queued returns at once, without the work before sleeping")
    func queuedEventSkipsSleep() {
        let queue = EventQueue<Int>()
        queue.post(1)
        var calls = 0
        let events = queue.wait(timeout: .seconds(10)) { calls += 1 }
        #expect(events == [1])
        #expect(calls == 0)
    }

    @Test("with nothing queued, the work before sleeping runs once, and what it posts ends the sleep")
    func workBeforeSleepingRunsOnce() {
        let queue = EventQueue<Int>()
        var calls = 0
        // Posted from inside: had it run after poll(2), the wait would sleep its full 10 s.
        let started = ContinuousClock.now
        let events = queue.wait(timeout: .seconds(10)) {
            calls += 1
            queue.post(2)
        }
        #expect(ContinuousClock.now - started < .seconds(5), "it slept: the work ran after poll(2)")
        #expect(events == [2])
        #expect(calls == 1)
    }
}
