extension Migration {
    /// An index that lets `expire-content` find due posts by popularity bucket
    /// without walking the posts that wait for their popularity-extended deadline.
    ///
    /// - Important: with `likes` indexed, an update of `likes` can no longer be a
    ///   HOT update. BENCHMARKS.md measures what that costs the app's writes.
    static let expiryIndexes = Migration(version: 4, name: "expiry indexes", sql: #"""
        CREATE INDEX IF NOT EXISTS posts_likes_created_idx ON {{app}}.posts (likes, created_at);
        """#)
}
