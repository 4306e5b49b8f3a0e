import Testing

@testable import CaretakerCore
@testable import CaretakerMonitoring

/// When the daemon's loop refreshes the metrics and alerts (`MonitoringPlan`), apart from any clock or thread.
@Suite struct MonitoringPlanTests {
    let start = ContinuousClock.now
    let interval = Duration.seconds(60)

    @Test("a first refresh at start, then one every interval; none while one is under way")
    func everyInterval() {
        var plan = MonitoringPlan(enabled: true, interval: interval, now: start)
        #expect(plan.timeUntilRefresh(now: start) == .zero)
        let started1 = plan.startRefresh(now: start)
        #expect(started1)
        #expect(plan.refreshing)
        #expect(plan.timeUntilRefresh(now: start) == nil)
        let started2 = plan.startRefresh(now: start + .seconds(120))
        #expect(!started2, "a second refresh while one is under way")
        plan.refreshEnded(now: start + .seconds(1))
        #expect(!plan.refreshing)
        #expect(plan.timeUntilRefresh(now: start + .seconds(1)) == interval)
        let started3 = plan.startRefresh(now: start + .seconds(60))
        #expect(!started3)
        let started4 = plan.startRefresh(now: start + .seconds(61))
        #expect(started4)
    }

    @Test("a run's end asks for a refresh now; during a refresh, for another right after it, once")
    func runEnds() {
        var plan = MonitoringPlan(enabled: true, interval: interval, now: start)
        let started5 = plan.startRefresh(now: start)
        #expect(started5)
        plan.refreshEnded(now: start)
        plan.runEnded(now: start + .seconds(5))
        #expect(plan.timeUntilRefresh(now: start + .seconds(5)) == .zero)
        let started6 = plan.startRefresh(now: start + .seconds(5))
        #expect(started6)
        plan.runEnded(now: start + .seconds(6))
        plan.runEnded(now: start + .seconds(7))
        let started7 = plan.startRefresh(now: start + .seconds(7))
        #expect(!started7)
        plan.refreshEnded(now: start + .seconds(8))
        let started8 = plan.startRefresh(now: start + .seconds(8))
        #expect(started8, "the run that ended meanwhile gets its refresh")
        plan.refreshEnded(now: start + .seconds(9))
        #expect(plan.timeUntilRefresh(now: start + .seconds(9)) == interval, "two ends meanwhile make one refresh")
    }

    @Test("off (low-footprint mode, or neither metrics nor alerts): nothing is ever due")
    func off() {
        var plan = MonitoringPlan(enabled: false, interval: interval, now: start)
        #expect(plan.timeUntilRefresh(now: start) == nil)
        plan.runEnded(now: start)
        let started9 = plan.startRefresh(now: start + .seconds(3600))
        #expect(!started9)
    }
}
