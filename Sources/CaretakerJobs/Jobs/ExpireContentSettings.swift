import CaretakerConfig

/// `[jobs.expire-content]`'s own keys.
public struct ExpireContentSettings: Sendable {
    public var minLifetime: Duration = .seconds(24 * 3600)
    public var maxLifetime: Duration = .seconds(48 * 3600)
    public var postFullPopularity: Int = 100
    public var packFullPopularity: Int = 100
    /// `compress_wal`: a page sweep whose backlog will request a checkpoint compresses
    /// its full page images when the role may (`SweepCompression`). On by default: a
    /// third less WAL, one forced checkpoint fewer in a 4M-row backlog at
    /// `max_wal_size = 1GB`, and with it fewer of the stalls at a forced checkpoint's
    /// end. Off by default in low-footprint mode,
    /// where the app's p99 was higher with it.
    public var compressWAL: Bool = true
    /// `prune_swept_pages`: after each sweep range and the pause that follows it, the
    /// sweep reads the range's pages once more, which prunes them (cuts the deleted
    /// rows' tuples down to dead line pointers) and sets hint bits, work an app's reads
    /// otherwise do at their first visit to each page. Off by default: with an app that
    /// reads what expires it lowered the app's p99 at 5M posts a little (its backends
    /// were less busy), but counted as work for the busy share it slowed a 2M sweep
    /// under half the `DELETE`'s pace.
    public var pruneSweptPages: Bool = false
    /// `retire_partitions`: on a `posts` partitioned by range on `created_at`, drop each
    /// partition whose every post is past `max_lifetime` (`PartitionRetirement.swift`).
    /// Off by default: it needs the worker to own `posts` (PostgreSQL lets only the
    /// owner detach and drop partitions, which `migrate --grant` never gives), and an
    /// operator whose pg_partman already keeps a retention should not get a second one
    /// unasked.
    public var retirePartitions: Bool = false
}

extension ExpireContentSettings {
    /// Reads them from the job's table, with their defaults and bounds.
    init(reading table: inout TableReader, worker: WorkerOptions) throws(ConfigurationError) {
        minLifetime = try table.duration("min_lifetime", default: minLifetime)
        maxLifetime = try table.duration("max_lifetime", default: maxLifetime)
        guard maxLifetime >= minLifetime else {
            throw table.error("max_lifetime", "must not be shorter than min_lifetime")
        }
        postFullPopularity = try table.integer(
            "post_full_popularity", default: postFullPopularity, in: 1...Int(Int32.max))
        packFullPopularity = try table.integer(
            "pack_full_popularity", default: packFullPopularity, in: 1...Int(Int32.max))
        compressWAL = try table.bool("compress_wal", default: !worker.lowFootprint)
        pruneSweptPages = try table.bool("prune_swept_pages", default: pruneSweptPages)
        retirePartitions = try table.bool("retire_partitions", default: retirePartitions)
    }
}
