/// Durations in whole milliseconds and how many took each. Percentiles are exact
/// (nearest rank, as over a sorted list of every value), and adding one costs a
/// look-up, not a sort: memory grows with the distinct values, not their number.
package struct MillisecondHistogram {
    private var counts: [Int: Int] = [:]
    /// The distinct values, ascending.
    private var values: [Int] = []
    private(set) var count = 0

    package init() {}

    package mutating func add(_ milliseconds: Int) {
        if counts[milliseconds] == nil {
            let index = values.partitioningIndex { $0 > milliseconds }
            values.insert(milliseconds, at: index)
        }
        counts[milliseconds, default: 0] += 1
        count += 1
    }

    /// The value at rank ⌈q × count⌉ (1-based, ascending); 0 when empty.
    package func percentile(_ q: Double) -> Int {
        let rank = max(1, Int((Double(count) * q).rounded(.up)))
        // Counted from the top: a high percentile is a few steps from the maximum.
        var above = count
        for value in values.reversed() {
            above -= counts[value, default: 0]
            if above < rank { return value }
        }
        return values.first ?? 0
    }

    package var maximum: Int { values.last ?? 0 }
}
