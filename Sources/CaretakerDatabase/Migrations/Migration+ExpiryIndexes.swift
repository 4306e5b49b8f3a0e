extension Migration {
    /// The indexes on `posts`: the keyset order, the pack and author look-ups, and
    /// one that lets `expire-content` find due posts by popularity bucket without
    /// walking the posts that wait for their popularity-extended deadline.
    ///
    /// Built `CONCURRENTLY`, outside a transaction: on an app that already has
    /// `posts`, a plain `CREATE INDEX` would block its writes for the whole build.
    /// Installs that applied an earlier form of this migration (or of migration 2,
    /// which used to create the first three) already have them: `IF NOT EXISTS`.
    ///
    /// - Important: with `likes` indexed, an update of `likes` can no longer be a
    ///   HOT update. BENCHMARKS.md measures what that costs the app's writes.
    static let expiryIndexes = Migration(
        version: 4, name: "expiry indexes", sql: "",
        concurrentIndexes: [
            ConcurrentIndex(name: "posts_created_idx", definition: "ON {{app}}.posts (created_at, id)"),
            ConcurrentIndex(name: "posts_pack_idx", definition: "ON {{app}}.posts (pack_id)"),
            ConcurrentIndex(name: "posts_author_idx", definition: "ON {{app}}.posts (author_id)"),
            ConcurrentIndex(name: "posts_likes_created_idx", definition: "ON {{app}}.posts (likes, created_at)"),
        ])
}
