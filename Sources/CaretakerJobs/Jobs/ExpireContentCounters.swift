import CaretakerDatabase
import CaretakerSupport
import Postgres

/// Rows a batch deleted.
struct DeletedRows {
    var packs = 0
    var posts = 0

    init(packs: Int = 0, posts: Int = 0) {
        self.packs = packs
        self.posts = posts
    }

    init(_ row: Row?) {
        self.init(packs: row?.int("packs") ?? 0, posts: row?.int("posts") ?? 0)
    }
}

/// A run's counters, with the durations of its batches for the `batch_p99_ms` /
/// `batch_max_ms` stats.
struct ExpireContentCounters {
    var stats = JobStats([
        ("packs_deleted", 0), ("posts_deleted", 0), ("packs_blocked", 0), ("posts_blocked", 0),
        ("packs_looked", 0), ("batches", 0),
    ])
    private var batchMilliseconds = MillisecondHistogram()

    mutating func record(_ deleted: DeletedRows, batch duration: Duration?) {
        stats.add("packs_deleted", deleted.packs)
        stats.add("posts_deleted", deleted.posts)
        guard let duration else { return }
        stats.add("batches")
        batchMilliseconds.add(Int((duration.microseconds + 999) / 1000))
        set("batch_p99_ms", batchMilliseconds.percentile(0.99))
        set("batch_max_ms", batchMilliseconds.maximum)
    }

    private mutating func set(_ name: String, _ value: Int) {
        stats.add(name, value - (stats[name] ?? 0))
    }
}
