/// The size of the next sweep range: grows (at most doubling) while ranges take
/// less than `sweepTargetDuration` and write less WAL than `walLimit`, shrinks
/// when they take or write more, within 16 pages and `maximumPages`.
///
/// The WAL limit matters more than the time: an app commit waits for the flush of
/// all the WAL written before it, so one range's WAL is what a commit landing just
/// after it may wait for (a 1,000-page range writes about 10 MB: tens of ms).
struct SweepRange {
    static let minimumPages: Int64 = 16
    let maximumPages: Int64
    /// WAL one range should write at most (`nil`: no limit).
    let walLimit: Int64?
    private(set) var pages: Int64

    init(maximumPages: Int64, walLimit: Int64? = nil) {
        self.maximumPages = max(1, maximumPages)
        self.walLimit = walLimit
        pages = min(ExpireContent.sweepFirstRangePages, self.maximumPages)
    }

    mutating func adjust(took duration: Duration, wrote walBytes: Int64 = 0) {
        let tookMicroseconds = max(1, duration.microseconds)
        var ideal = Double(pages) * Double(ExpireContent.sweepTargetDuration.microseconds) / Double(tookMicroseconds)
        if let walLimit, walBytes > 0 {
            ideal = min(ideal, Double(pages) * Double(walLimit) / Double(walBytes))
        }
        let next = Int64(min(ideal, Double(pages * 2)))
        pages = min(maximumPages, max(min(Self.minimumPages, maximumPages), next))
    }
}
