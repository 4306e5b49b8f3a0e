import Testing

@testable import CaretakerCore
@testable import CaretakerJobs

/// The busy share's arithmetic (`max_busy_share`), apart from the database.
@Suite struct BusyShareTests {
    @Test("at 55 % a stretch of work of 110 ms rests 90 ms, so the work takes 55 % of the time")
    func rests() {
        #expect(BusyShare.rest(after: .milliseconds(110), share: 55) == .milliseconds(90))
        #expect(BusyShare.rest(after: .milliseconds(100), share: 50) == .milliseconds(100))
        #expect(BusyShare.rest(after: .milliseconds(10), share: 1) == .milliseconds(990))
    }

    @Test("100 % never rests, and neither does a stretch that took no time")
    func noRest() {
        #expect(BusyShare.rest(after: .seconds(5), share: 100) == .zero)
        #expect(BusyShare.rest(after: .zero, share: 55) == .zero)
    }
}
