extension Migration {
    /// An index on `posts (pack_id, likes)`: `expire-content`'s pack pass asks, for
    /// every pack between `min_lifetime` and `max_lifetime` old, whether one of its
    /// posts alone has more likes than the pack may have and still be due. With
    /// this index that is one index-only probe per pack, whatever the number of its
    /// posts (BENCHMARKS.md, E2p).
    ///
    /// Built `CONCURRENTLY`, outside a transaction, as migration 4's indexes are.
    /// `likes` is indexed already (`posts_likes_created_idx`), so updates of
    /// `likes` lose no HOT update to this one.
    static let packLikesIndex = Migration(
        version: 8, name: "pack likes index", sql: "",
        concurrentIndexes: [
            ConcurrentIndex(
                name: "posts_pack_likes_idx", definition: "ON {{app}}.posts (pack_id, likes)",
                // What migration 11 sets, which it could not on a partitioned table's index.
                storageOnPartitionedTable: "deduplicate_items = off")
        ])
}
