/// What the sample of the heap found (`ExpireContent.samplePages` pages spread evenly
/// over it), page by page: how much of the table is due, and where.
struct DueSample: Equatable {
    struct Page: Equatable {
        /// The sampled page's number.
        let page: Int64
        let sampled: Int
        let due: Int
    }

    /// The heap's pages when sampled.
    let pages: Int64
    /// The sampled pages that held a row, in any order.
    let sampledPages: [Page]

    var sampled: Int { sampledPages.reduce(0) { $0 + $1.sampled } }
    var due: Int { sampledPages.reduce(0) { $0 + $1.due } }

    /// The due rows on pages `page` and after: each sampled page stands for the
    /// stretch of the heap up to the next one (`pages ÷ samplePages` pages, each with
    /// as many due rows as it), counted in part when `page` falls inside it. A page
    /// with more than `sampleLinePointers` rows counts as that many, so this errs
    /// low. `nil` when the sample found nothing due.
    func dueRows(from page: Int64) -> Double? {
        guard due > 0, pages > 0 else { return nil }
        return sampledPages.reduce(0.0) { total, sampled in
            total + Double(sampled.due) * stretchAhead(of: sampled.page, from: page)
        }
    }

    /// The pages of the stretch that sampled page `sampled` stands for (`pages ÷
    /// samplePages` pages from it) that lie at `page` or after.
    private func stretchAhead(of sampled: Int64, from page: Int64) -> Double {
        let stretch = Double(pages) / Double(ExpireContent.samplePages)
        return min(stretch, max(0, Double(sampled) + stretch - Double(page)))
    }

    /// The WAL a sweep that deleted `deleted` rows and wrote `wrote` bytes over the
    /// pages before `page` should still write: as much per row as so far, for the
    /// due rows the sample puts after `page`. Counted in rows the sweep deleted, not
    /// in the sample's share of the due rows behind `page`: the sample is taken after
    /// the run's first batch, whose rows lie at the heap's start, so the sample can
    /// find the first stretch empty, and a share would count it as done: on the
    /// bench's 2M posts that made 50 MB written over the first tenth of the heap
    /// look like 940 MB to come, not 330. `nil` while the sweep has deleted too few
    /// (under 5% of those and the ones ahead) for its WAL per row to mean much, or
    /// when the sample found nothing due.
    func remainingWAL(after page: Int64, wrote: Int64, deleted: Int64) -> Int64? {
        guard let ahead = dueRows(from: page), deleted > 0,
            Double(deleted) >= 0.05 * (Double(deleted) + ahead)
        else { return nil }
        return Int64(Double(max(0, wrote)) * ahead / Double(deleted))
    }

    /// The WAL a sweep from `page` should write, before it has deleted enough to
    /// measure its own (`remainingWAL`): a full page image of every page ahead that
    /// holds a due row (each sampled page with one standing for its stretch), as the
    /// first change of a page after a checkpoint writes, and a delete record for each
    /// due row. Roughly: each image counts as a whole block (a page with free space
    /// writes less), but a TOASTed value's rows are not counted, nor rows past
    /// `sampleLinePointers` on a page. `nil` when the sample found nothing due.
    func expectedWAL(from page: Int64, blockSize: Int64) -> Int64? {
        guard let rows = dueRows(from: page) else { return nil }
        let duePages = sampledPages.filter { $0.due > 0 }.reduce(0.0) { total, sampled in
            total + stretchAhead(of: sampled.page, from: page)
        }
        return Int64(duePages * Double(blockSize) + rows * Double(Self.deleteRecordBytes))
    }

    /// The WAL of one row's delete beside any page image: a record header (24 bytes),
    /// a block reference (20), a data header (2) and `xl_heap_delete` (8). The bench's
    /// single `DELETE` of 1.6M posts wrote 415 MB: 42,605 page images of at most 8 kB,
    /// and 1.6M records, at least 54 bytes each.
    static let deleteRecordBytes = 54
}
