import Postgres

/// The SQL of `expire-content`, with the app schema spliced in as a quoted identifier
/// and every value passed as a parameter.
///
/// Parameters `$1`–`$3` are always the lifetime's minimum and maximum (microseconds)
/// and the popularity at which the maximum is reached.
struct ExpireContentQueries {
    struct Target {
        let table: String
        let lifetimeParameters: [any PostgresBindable]
        /// `$4` cursor `created_at`, `$5` cursor id, `$6` limit → `id`, `created_at`.
        let selectDue: String
        /// `$4` ids → `packs`, `posts` deleted.
        let deleteDue: String
    }

    let packs: Target
    let posts: Target
    let preview: String
    let lifetimeParameters: [any PostgresBindable]

    init(schema s: String, settings: ExpireContentSettings) {
        let postParameters: [any PostgresBindable] = [
            settings.minLifetime.microseconds, settings.maxLifetime.microseconds, Double(settings.postFullPopularity)]
        let packParameters: [any PostgresBindable] = [
            settings.minLifetime.microseconds, settings.maxLifetime.microseconds, Double(settings.packFullPopularity)]
        let postDue = "s.created_at + \(Self.lifetime(of: "s.likes")) <= now()"
        let packPopularity = """
            ((SELECT count(*) FROM \(s).pack_members m WHERE m.pack_id = p.id)
             + (SELECT coalesce(sum(x.likes), 0) FROM \(s).posts x WHERE x.pack_id = p.id))
            """
        let packDue = "NOT p.is_admin AND p.created_at + \(Self.lifetime(of: packPopularity)) <= now()"
        let oldEnough = "created_at <= now() - $1::bigint * interval '1 microsecond'"

        posts = Target(
            table: "posts",
            lifetimeParameters: postParameters,
            selectDue: """
                SELECT s.id, s.created_at FROM \(s).posts s
                WHERE s.\(oldEnough) AND (s.created_at, s.id) > ($4::timestamptz, $5::bigint) AND \(postDue)
                ORDER BY s.created_at, s.id LIMIT $6
                FOR UPDATE SKIP LOCKED
                """,
            deleteDue: """
                WITH gone AS (DELETE FROM \(s).posts s WHERE s.id = ANY($4::bigint[]) AND \(postDue) RETURNING 1)
                SELECT 0 AS packs, count(*) AS posts FROM gone
                """)
        packs = Target(
            table: "packs",
            lifetimeParameters: packParameters,
            selectDue: """
                SELECT p.id, p.created_at FROM \(s).packs p
                WHERE NOT p.is_admin AND p.\(oldEnough) AND (p.created_at, p.id) > ($4::timestamptz, $5::bigint)
                  AND \(packDue)
                ORDER BY p.created_at, p.id LIMIT $6
                FOR UPDATE OF p SKIP LOCKED
                """,
            deleteDue: """
                WITH gone AS (DELETE FROM \(s).packs p WHERE p.id = ANY($4::bigint[]) AND \(packDue) RETURNING p.id)
                SELECT count(*) AS packs,
                       (SELECT count(*) FROM \(s).posts x WHERE x.pack_id IN (SELECT id FROM gone)) AS posts
                FROM gone
                """)
        // One statement with both popularity rules needs both full-popularity values: $3 posts, $4 packs.
        lifetimeParameters = postParameters + [Double(settings.packFullPopularity)]
        let packDuePreview = packDue.replacingOccurrences(of: "$3::float8", with: "$4::float8")
        preview = """
            WITH due_packs AS (
                SELECT p.id FROM \(s).packs p WHERE NOT p.is_admin AND p.\(oldEnough) AND \(packDuePreview)
            )
            SELECT (SELECT count(*) FROM due_packs) AS packs,
                   (SELECT count(*) FROM \(s).posts s
                    WHERE s.pack_id IN (SELECT id FROM due_packs)
                       OR (s.\(oldEnough) AND \(postDue))) AS posts
            """
    }

    /// `L(p)` as an interval, from `$1` (min µs), `$2` (max µs), `$3` (full popularity).
    static func lifetime(of popularity: String) -> String {
        """
        (($1::bigint + ($2::bigint - $1::bigint) * least(1.0, greatest(\(popularity), 0)::float8 / $3::float8)) \
        * interval '1 microsecond')
        """
    }
}
