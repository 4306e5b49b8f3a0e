extension Migration {
    /// Migration 8's `posts (pack_id, likes)` rebuilt without B-tree deduplication,
    /// so that an app reading a pack's posts through it steps over what an expiry
    /// deleted for a short while instead of until the next vacuum.
    ///
    /// Deduplication keeps a key's rows in one index tuple (a posting list), and
    /// PostgreSQL marks an index tuple dead, for later scans to skip without visiting
    /// the heap, only once every row in it is dead. A pack keeps live posts beside
    /// the expired ones at nearly every `likes` value, so its posting lists never die
    /// whole: after an expiry every scan of the pack fetched each expired row from
    /// the heap again, until vacuum (a page view's pack query touched about 100
    /// buffers instead of 23 at 5M posts, on the bench). One tuple
    /// per row is marked dead by the first scan that finds the row dead to everyone.
    /// The price is size: the index is about four times as large (151 MB against
    /// 37 MB at 5M posts).
    ///
    /// `ALTER INDEX … SET` takes a lock the app's reads and writes do not wait for;
    /// the rebuild is `REINDEX … CONCURRENTLY`, outside a transaction. PostgreSQL
    /// refuses it on a partitioned table's index (`wrong_object_type`), whose
    /// partitions' indexes are then set and rebuilt one by one (`PartitionedIndexes`).
    static let packLikesIndexWithoutDeduplication = Migration(
        version: 11, name: "pack likes index without deduplication",
        sql: """
            DO $$
            BEGIN
                ALTER INDEX IF EXISTS {{app}}.posts_pack_likes_idx SET (deduplicate_items = off);
            EXCEPTION WHEN wrong_object_type THEN
                NULL;
            END $$
            """,
        concurrentReindexes: ["posts_pack_likes_idx"])
}
