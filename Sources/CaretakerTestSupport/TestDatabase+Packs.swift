import Postgres

extension TestDatabase {
    /// Inserts a pack created `age` ago (an interval literal such as `'24 hours'`), with
    /// `members` new users as its members; returns its id.
    public func insertPack(age: String, admin: Bool = false, members: Int = 0) throws -> Int64 {
        let id = try connection.query(
            "INSERT INTO packs (name, is_admin, created_at) VALUES ('p', $1, now() - $2::interval) RETURNING id",
            admin, age
        ).first!.int64("id")!
        for _ in 0..<members {
            try connection.query(
                """
                WITH u AS (INSERT INTO users (email, password_hash) VALUES (gen_random_uuid()::text || '@x.test', 'h') RETURNING id)
                INSERT INTO pack_members (pack_id, user_id) SELECT $1, id FROM u
                """, id)
        }
        return id
    }

    /// Inserts a post of `pack` with `likes`, created `age` ago; returns its id.
    @discardableResult
    public func insertPost(in pack: Int64, likes: Int, age: String) throws -> Int64 {
        try connection.query(
            "INSERT INTO posts (pack_id, likes, created_at) VALUES ($1, $2, now() - $3::interval) RETURNING id",
            pack, likes, age
        ).first!.int64("id")!
    }
}
