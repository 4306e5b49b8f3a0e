@testable import CaretakerCore
import Testing

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
