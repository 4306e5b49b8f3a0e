import Testing

@testable import CaretakerCore
@testable import CaretakerDatabase

@Suite struct JobStatsTests {
    @Test("a counter the job did not report reads as nil, not 0: an expectation of 0 notices a renamed counter")
    func unreportedCounter() {
        var stats = JobStats([("posts_deleted", 0)])
        stats.add("batches", 2)
        stats.add("batches")
        #expect(stats["posts_deleted"] == 0)
        #expect(stats["batches"] == 3)
        #expect(stats["post_deleted"] == nil)
        #expect(stats["post_deleted"] != 0)
        #expect(stats.json == #"{"posts_deleted": 0, "batches": 3}"#)
    }
}
