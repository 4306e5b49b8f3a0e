extension Migration {
    /// Drops `posts (pack_id)` (migration 4), which `posts (pack_id, likes)` (migration 8)
    /// makes redundant: the pack look-ups and the cascade from `packs` use the wider
    /// index as well, and each post the app writes, and each like (not a HOT update,
    /// since `likes` is indexed), no longer maintains one index more than it needs.
    ///
    /// `DROP INDEX CONCURRENTLY`, outside a transaction, so the app keeps writing to
    /// `posts` meanwhile; only when the index is still the plain one migration 4
    /// built (`RedundantIndex`), so an index of that name the app made for itself stays.
    static let dropRedundantPackIndex = Migration(
        version: 9, name: "drop redundant pack index", sql: "",
        redundantIndexes: [RedundantIndex(name: "posts_pack_idx", coveredBy: "posts_pack_likes_idx")])
}
