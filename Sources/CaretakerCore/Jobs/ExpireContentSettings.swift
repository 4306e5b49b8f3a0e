/// `[jobs.expire-content]`'s own keys.
public struct ExpireContentSettings: Sendable {
    public var minLifetime: Duration = .seconds(24 * 3600)
    public var maxLifetime: Duration = .seconds(48 * 3600)
    public var postFullPopularity: Int = 100
    public var packFullPopularity: Int = 100
    /// `compress_wal`: the page sweep compresses its full page images when the role may.
    /// Off by default: it writes a third less WAL and forces fewer checkpoints, but
    /// the app's p99 was no better for it at 5M posts and worse in low-footprint mode
    /// (BENCHMARKS.md, issue 13 part 7); worth it where WAL volume itself costs.
    public var compressWAL: Bool = false
}

extension ExpireContentSettings {
    /// Reads them from the job's table, with their defaults and bounds.
    init(reading table: inout TableReader) throws(ConfigurationError) {
        minLifetime = try table.duration("min_lifetime", default: minLifetime)
        maxLifetime = try table.duration("max_lifetime", default: maxLifetime)
        guard maxLifetime >= minLifetime else {
            throw table.error("max_lifetime", "must not be shorter than min_lifetime")
        }
        postFullPopularity = try table.integer(
            "post_full_popularity", default: postFullPopularity, in: 1...Int(Int32.max))
        packFullPopularity = try table.integer(
            "pack_full_popularity", default: packFullPopularity, in: 1...Int(Int32.max))
        compressWAL = try table.bool("compress_wal", default: compressWAL)
    }
}
