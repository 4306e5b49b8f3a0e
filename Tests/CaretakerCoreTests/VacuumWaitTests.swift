import Testing

@testable import CaretakerCore
@testable import CaretakerJobs

/// `wait_for_vacuum`'s bound and how often it asks, apart from the database.
@Suite struct VacuumWaitTests {
    @Test("a run's waits for vacuums take at most half of its time: as long as everything else it did")
    func boundedByTheRest() {
        var wait = VacuumWait()
        #expect(wait.allowance(after: .zero) == .zero)
        #expect(wait.allowance(after: .seconds(50)) == .seconds(50))
        // 30 s waited in a run 70 s old: 40 s of other things, so 10 s more.
        wait.waited = .seconds(30)
        #expect(wait.allowance(after: .seconds(70)) == .seconds(10))
        #expect(wait.allowance(after: .seconds(60)) == .zero)
        #expect(wait.allowance(after: .seconds(50)) == .zero, "never negative")
    }

    @Test("between batches it asks at most once per check interval, and at every pause while a vacuum runs")
    func asksOncePerInterval() {
        var wait = VacuumWait()
        let start = ContinuousClock.now
        var asked: [Bool] = []
        for after in [0, 999, 1000, 1001] {
            asked.append(wait.shouldCheck(at: start + .milliseconds(after)))
        }
        #expect(asked == [true, false, true, false])
        wait.sawVacuum = true
        asked = [1002, 1003].map { wait.shouldCheck(at: start + .milliseconds($0)) }
        #expect(asked == [true, true])
        wait.sawVacuum = false
        asked = [1004, 2003, 2004].map { wait.shouldCheck(at: start + .milliseconds($0)) }
        #expect(asked == [false, true, false])
    }
}
