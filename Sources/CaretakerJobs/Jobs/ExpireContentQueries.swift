import Postgres

/// The SQL of `expire-content`, with the app schema spliced in as a quoted identifier
/// and every value passed as a parameter.
///
/// Parameters `$1`–`$3` are always the lifetime's minimum and maximum (microseconds)
/// and the popularity at which the maximum is reached.
struct ExpireContentQueries {
    /// Popularity buckets probed one by one; above this the window is walked instead.
    static let maximumBuckets = 1000

    let lifetimeParameters: [any PostgresBindable]
    let packParameters: [any PostgresBindable]
    /// On a partitioned `posts`, the bounds of the partition the sweep's queries read
    /// (through `posts`, pruned to it: a TID range is one heap's), which follow
    /// their other parameters; empty otherwise.
    let partitionParameters: [any PostgresBindable]

    /// `$1`–`$4` of a pack look: the lifetime's minimum and maximum, the pack's and the
    /// post's full popularity.
    let lookParameters: [any PostgresBindable]
    /// The settings the pack looks depend on, kept in `pack_look_state.settings`.
    let lookSettings: String
    /// Turns at most `$1` marks into looks due at once, and a mark of deleted posts
    /// into a check of the counted posts (`check_counted`) → `marks` (how many were taken).
    static let takePackMarks = """
        WITH marked AS (
            DELETE FROM caretaker.pack_marks
            WHERE ctid = ANY(ARRAY(SELECT ctid FROM caretaker.pack_marks LIMIT $1)) RETURNING pack_id),
        looks AS (
            INSERT INTO caretaker.pack_looks (pack_id, look_at)
            SELECT DISTINCT pack_id, '-infinity'::timestamptz FROM marked WHERE pack_id IS NOT NULL
            ON CONFLICT (pack_id) DO UPDATE SET look_at = '-infinity'),
        deleted AS (
            UPDATE caretaker.pack_look_state SET check_counted = true
            WHERE EXISTS (SELECT FROM marked WHERE pack_id IS NULL) AND NOT check_counted)
        SELECT count(*) AS marks FROM marked
        """
    /// Ends a check of the counted posts.
    static let finishCountedCheck = "UPDATE caretaker.pack_look_state SET check_counted = false"
    /// Of the looks after pack `$1` in `pack_id` order, at most `$2`: those that counted
    /// a post that is gone become due → `id` (the last pack), `looks`. One index scan
    /// for all the batch's counted posts (`= ANY`), not a probe per post: E2p's 10,000
    /// looks took 70 ms with a probe each.
    let checkCountedPosts: String
    /// Whether the looks stand for settings `$1` and the last look at every pack is
    /// less than a day old → `hold`, `generation`, `unmarked` (the triggers leave no
    /// marks: no look at every pack for two days), `now`.
    static let packLooksHold = """
        SELECT coalesce(bool_and(s.settings = $1 AND s.full_look_at > now() - interval '1 day'), false) AS hold,
               coalesce(max(s.generation), 0) AS generation,
               coalesce(bool_and(s.full_look_at < now() - interval '2 days'), true) AS unmarked,
               coalesce(bool_or(s.check_counted), false) AS check_counted, now()::text AS now
        FROM (SELECT 1) one LEFT JOIN caretaker.pack_look_state s ON true
        """
    /// Records a look at every pack that began at `$2` with the settings `$1`, unless
    /// a `TRUNCATE` changed the generation `$3` meanwhile. When the triggers left no
    /// marks as it began (`$4`), a write whose trigger ran before this record may
    /// commit after the look at its pack: the settings are then left empty, so the
    /// next run, with the triggers marking again, looks at every pack once more.
    /// The look counted every post anew, so no check of the counted posts is left to do.
    static let finishFullLook = """
        INSERT INTO caretaker.pack_look_state AS s (settings, full_look_at, generation)
        VALUES (CASE WHEN $4::boolean THEN '' ELSE $1 END, $2::timestamptz, $3)
        ON CONFLICT (only_row) DO UPDATE
        SET settings = excluded.settings, full_look_at = excluded.full_look_at, check_counted = false
        WHERE s.generation = excluded.generation
        """
    /// Packs whose look is due, in `(look_at, pack_id)` order after `$1`/`$2`, at most `$3` → `id`, `look_at`.
    static let selectLooksDue = """
        SELECT l.pack_id AS id, l.look_at FROM caretaker.pack_looks l
        WHERE l.look_at <= now() AND (l.look_at, l.pack_id) > ($1::timestamptz, $2::bigint)
        ORDER BY l.look_at, l.pack_id LIMIT $3
        """
    /// Every pack that may expire, in `(created_at, id)` order after `$1`/`$2`, at most `$3` → `id`, `created_at`.
    let selectExpirablePacks: String
    /// Looks at the packs `$5`: forgets those that are gone or never expire, records
    /// when each of the others can next be due, and returns those due now → `id`.
    /// A due pack's look stays due until `deletePacks` forgets it, so a pack the app
    /// held, or a like saved, is looked at again by the next run.
    let lookAtPacks: String
    /// Of the packs `$4`, those due, locked, at most `$5` → `id`.
    let selectDuePacks: String
    /// Locks the posts of packs `$1` FOR SHARE: a like in flight commits first, and none
    /// can start, so `deletePacks` (a later statement: a fresh snapshot) counts every like.
    let lockPostsOfPacks: String
    /// Deletes packs `$4` that are still due, and their looks → `packs`, `posts` (those
    /// that went with them).
    let deletePacks: String

    /// Posts older than the maximum lifetime (all due), keyset `$4`/`$5`, limit `$6`.
    let selectPostsPastMaximum: String
    /// Posts between the minimum and maximum lifetime that are due, one index probe
    /// per popularity bucket, limit `$4`, leaving out the posts `$5` (blocked this run).
    let selectPostsByBucket: String
    /// Any due post, keyset `$4`/`$5`, limit `$6` (used when there are too many buckets).
    let selectDuePosts: String
    /// Deletes posts `$4` that are still due → `packs` (0), `posts`.
    let deletePosts: String
    /// Deletes due posts on heap pages `[$4, $5)` (a TID range scan): the backlog sweep.
    let deletePostsOnPages: String
    /// Reads every tuple on heap pages `[$1, $2)` (a TID range scan), which prunes
    /// the pages and sets hint bits → `visited`.
    let prunePostsOnPages: String
    /// The same, skipping rows the app holds locked.
    let deleteUnlockedPostsOnPages: String
    /// The due posts on heap pages `[$4, $5)` → `id` (to delete them one by one).
    let selectDuePostsOnPages: String

    /// Counts for a dry run: `$1`–`$3` post lifetime, `$4` pack full popularity; `$5`
    /// and `$6` the lower and upper bounds of the partitions the run would drop, whose
    /// posts (but those of due packs, which go first) are not counted as deleted.
    let preview: String
    /// Of the posts at the addresses `$4` (a sample of the heap's pages), page by page: how
    /// many, and how many are due → `page`, `sampled`, `due`.
    let sampleDuePosts: String
    /// The heap pages of the relation `$1` (`posts`, schema-qualified) → `pages`.
    static let heapPages = "SELECT pg_relation_size($1::regclass) / current_setting('block_size')::bigint AS pages"
    /// The server's page size, what an uncompressed full page image takes.
    static let blockSize = "SELECT current_setting('block_size')::bigint AS block_size"

    init(schema s: String, settings: ExpireContentSettings, partition: PostPartition.Bounds? = nil) {
        partitionParameters = partition.map { [$0.lower, $0.upper] } ?? []
        /// The partition's rows, by bounds that follow parameter `$(n - 1)`.
        func inPartition(_ n: Int) -> String {
            partition == nil ? "" : " AND s.created_at >= $\(n)::timestamptz AND s.created_at < $\(n + 1)::timestamptz"
        }
        lifetimeParameters = [
            settings.minLifetime.microseconds, settings.maxLifetime.microseconds,
            Double(settings.postFullPopularity),
        ]
        packParameters = [
            settings.minLifetime.microseconds, settings.maxLifetime.microseconds,
            Double(settings.packFullPopularity),
        ]
        lookParameters = packParameters + [Double(settings.postFullPopularity)]
        lookSettings = lookParameters.map { "\($0)" }.joined(separator: " ")
        let postDue = "s.created_at + \(Self.lifetime(of: "s.likes")) <= now()"
        // A pack is due when its popularity is at most `full × (age − min) ÷ (max − min)`
        // (`packThreshold`), so members and likes are counted only until they pass it:
        // the members by a LIMIT, the likes by a running sum that stops at the first
        // post taking it past the threshold. Whatever is past it gives the same
        // verdict in `lifetime` as the full count (`L` only grows with popularity);
        // only a pack that is due has all its posts read, and it is then deleted.
        // Negative likes count as 0 in a pack's sum, so a pack never goes early.
        let packThreshold = """
            ($3::float8 * (extract(epoch FROM now() - p.created_at) * 1000000 - $1::bigint) \
            / greatest($2::bigint - $1::bigint, 1))
            """
        let packPopularity = """
            ((SELECT count(*) FROM (SELECT FROM \(s).pack_members m WHERE m.pack_id = p.id
                                    LIMIT greatest(floor(\(packThreshold)), 0)::bigint + 1) m)
             + coalesce((SELECT r.likes FROM (SELECT sum(greatest(x.likes, 0)) OVER (ROWS UNBOUNDED PRECEDING) AS likes
                                              FROM \(s).posts x WHERE x.pack_id = p.id) r
                         WHERE r.likes > \(packThreshold) LIMIT 1),
                        (SELECT coalesce(sum(greatest(x.likes, 0)), 0) FROM \(s).posts x WHERE x.pack_id = p.id)))
            """
        let packDue = "NOT p.is_admin AND p.created_at + \(Self.lifetime(of: packPopularity)) <= now()"
        let olderThanMinimum = "created_at <= now() - $1::bigint * interval '1 microsecond'"
        let olderThanMaximum = "created_at <= now() - $2::bigint * interval '1 microsecond'"
        let youngerThanMaximum = "created_at > now() - $2::bigint * interval '1 microsecond'"
        // The same verdict as `postDue` (`L` lies between min and max), cheaper on a page
        // sweep's filter, which sees every row on its pages: a post past the maximum is
        // due and one younger than the minimum is not, on one comparison each; only the
        // posts in between pay for `lifetime`. On the bench's 5M posts a third less time
        // in the scan.
        let postDueOnPages = "(s.\(olderThanMaximum) OR (s.\(olderThanMinimum) AND \(postDue)))"

        selectExpirablePacks = """
            SELECT p.id, p.created_at FROM \(s).packs p
            WHERE NOT p.is_admin AND (p.created_at, p.id) > ($1::timestamptz, $2::bigint)
            ORDER BY p.created_at, p.id LIMIT $3
            """
        // A look counts the popularity only up to the full popularity, past which the
        // lifetime is the maximum anyway: members by a LIMIT, then the posts' likes in
        // descending order up to the first post that takes the sum there (an
        // index-only running sum on `posts (pack_id, likes)`), whose rows alone are
        // then read for their `created_at`. The pack can be due no sooner than its
        // lifetime at that popularity allows, nor than one of the counted posts can
        // expire (`expire-content` deletes posts without leaving a mark); anything else
        // that lowers the popularity leaves a mark (migration 10).
        let packLifetime = Self.lifetime(of: "members.n + coalesce(counted.likes, 0)")
        lookAtPacks = """
            WITH looked AS (
                SELECT c.id, p.id IS NOT NULL AND NOT p.is_admin AS expirable,
                       p.created_at + \(packLifetime) <= now() AS due,
                       least(p.created_at + \(packLifetime), counted.stay_until) AS look_at,
                       coalesce(counted.ids, '{}') AS counted
                FROM unnest($5::bigint[]) AS c(id)
                LEFT JOIN \(s).packs p ON p.id = c.id
                LEFT JOIN LATERAL (
                    SELECT count(*) AS n FROM (
                        SELECT FROM \(s).pack_members m WHERE m.pack_id = p.id LIMIT ceil($3::float8)::bigint) m
                ) members ON true
                LEFT JOIN LATERAL (
                    SELECT r.n FROM (
                        SELECT row_number() OVER w AS n, sum(x.likes) OVER w AS running
                        FROM \(s).posts x WHERE x.pack_id = p.id AND x.likes > 0
                        WINDOW w AS (ORDER BY x.likes DESC ROWS UNBOUNDED PRECEDING)) r
                    WHERE members.n + r.running >= $3::float8 LIMIT 1
                ) crossing ON true
                LEFT JOIN LATERAL (
                    SELECT sum(t.likes) AS likes, min(t.created_at + \(Self.lifetime(of: "t.likes", full: "$4"))) AS stay_until,
                           array_agg(t.id) AS ids
                    FROM (SELECT x.id, x.likes, x.created_at FROM \(s).posts x WHERE x.pack_id = p.id AND x.likes > 0
                          ORDER BY x.likes DESC
                          LIMIT CASE WHEN members.n >= $3::float8 THEN 0 ELSE crossing.n END) t
                ) counted ON true
            ),
            forgotten AS (
                DELETE FROM caretaker.pack_looks l USING looked WHERE l.pack_id = looked.id AND NOT looked.expirable),
            recorded AS (
                INSERT INTO caretaker.pack_looks (pack_id, look_at, counted)
                SELECT id, CASE WHEN due THEN '-infinity' ELSE look_at END, counted FROM looked WHERE expirable
                ON CONFLICT (pack_id) DO UPDATE SET look_at = excluded.look_at, counted = excluded.counted)
            SELECT id FROM looked WHERE expirable AND due ORDER BY id
            """
        checkCountedPosts = """
            WITH batch AS (
                SELECT l.pack_id, l.counted FROM caretaker.pack_looks l WHERE l.pack_id > $1 ORDER BY l.pack_id LIMIT $2),
            present AS (
                SELECT x.id FROM \(s).posts x
                WHERE x.id = ANY(ARRAY(SELECT c.id FROM batch b, unnest(b.counted) AS c(id)))),
            lost AS (
                UPDATE caretaker.pack_looks l SET look_at = '-infinity'
                WHERE l.pack_id IN (SELECT b.pack_id FROM batch b, unnest(b.counted) AS c(id)
                                    WHERE c.id NOT IN (SELECT id FROM present))
                  AND l.look_at > '-infinity')
            SELECT max(pack_id) AS id, count(*) AS looks FROM batch
            """
        selectDuePacks = """
            SELECT p.id FROM \(s).packs p
            WHERE p.id = ANY($4::bigint[]) AND \(packDue)
            ORDER BY p.id LIMIT $5
            FOR UPDATE OF p SKIP LOCKED
            """
        lockPostsOfPacks = """
            SELECT count(*) FROM (SELECT 1 FROM \(s).posts x WHERE x.pack_id = ANY($1::bigint[]) FOR SHARE OF x) locked
            """
        deletePacks = """
            WITH gone AS (DELETE FROM \(s).packs p WHERE p.id = ANY($4::bigint[]) AND \(packDue) RETURNING p.id),
            forgotten AS (DELETE FROM caretaker.pack_looks l WHERE l.pack_id IN (SELECT id FROM gone))
            SELECT count(*) AS packs,
                   (SELECT count(*) FROM \(s).posts x WHERE x.pack_id IN (SELECT id FROM gone)) AS posts
            FROM gone
            """
        selectPostsPastMaximum = """
            SELECT s.id, s.created_at FROM \(s).posts s
            WHERE s.\(olderThanMaximum) AND (s.created_at, s.id) > ($4::timestamptz, $5::bigint)
              AND $1::bigint IS NOT NULL AND $3::float8 IS NOT NULL  -- every query takes $1–$3
            ORDER BY s.created_at, s.id LIMIT $6
            FOR UPDATE SKIP LOCKED
            """
        // likes = k for each k in 1 … full−1 is an equality on the index's first column,
        // so each probe reads only that bucket's due rows. likes <= 0 is split into
        // = 0 (one probe) and < 0 (rare) for the same reason.
        let bucketLifetime = Self.lifetime(of: "b.k")
        let notBlocked = "s.id <> ALL($5::bigint[])"
        selectPostsByBucket = """
            SELECT id FROM (
                SELECT id FROM (
                    SELECT s.id FROM \(s).posts s
                    WHERE s.likes = 0 AND s.\(youngerThanMaximum) AND s.\(olderThanMinimum) AND \(notBlocked)
                    LIMIT $4 FOR UPDATE SKIP LOCKED) zero
                UNION ALL
                SELECT id FROM (
                    SELECT s.id FROM \(s).posts s
                    WHERE s.likes < 0 AND s.\(youngerThanMaximum) AND s.\(olderThanMinimum) AND \(notBlocked)
                    LIMIT $4 FOR UPDATE SKIP LOCKED) negative
                UNION ALL
                SELECT d.id FROM generate_series(1, $3::float8::int - 1) AS b(k)
                CROSS JOIN LATERAL (
                    SELECT s.id FROM \(s).posts s
                    WHERE s.likes = b.k AND s.\(youngerThanMaximum)
                      AND s.created_at <= now() - \(bucketLifetime) AND \(notBlocked)
                    LIMIT $4 FOR UPDATE SKIP LOCKED) d
            ) due LIMIT $4
            """
        selectDuePosts = """
            SELECT s.id, s.created_at FROM \(s).posts s
            WHERE s.\(olderThanMinimum) AND (s.created_at, s.id) > ($4::timestamptz, $5::bigint) AND \(postDue)
            ORDER BY s.created_at, s.id LIMIT $6
            FOR UPDATE SKIP LOCKED
            """
        deletePosts = """
            WITH gone AS (DELETE FROM \(s).posts s WHERE s.id = ANY($4::bigint[]) AND \(postDue) RETURNING 1)
            SELECT 0 AS packs, count(*) AS posts FROM gone
            """
        let pageRange = "s.ctid >= format('(%s,0)', $4::bigint)::tid AND s.ctid < format('(%s,0)', $5::bigint)::tid"
        deletePostsOnPages = """
            DELETE FROM \(s).posts s WHERE \(pageRange) AND \(postDueOnPages)\(inPartition(6))
            """
        prunePostsOnPages = """
            SELECT count(*) AS visited FROM \(s).posts s
            WHERE s.ctid >= format('(%s,0)', $1::bigint)::tid AND s.ctid < format('(%s,0)', $2::bigint)::tid\(inPartition(3))
            """
        deleteUnlockedPostsOnPages = """
            DELETE FROM \(s).posts s
            WHERE s.ctid = ANY(ARRAY(SELECT s.ctid FROM \(s).posts s WHERE \(pageRange) AND \(postDueOnPages)\(inPartition(6)) FOR UPDATE SKIP LOCKED))
              AND \(postDueOnPages)\(inPartition(6))
            """
        selectDuePostsOnPages = """
            SELECT s.id FROM \(s).posts s WHERE \(pageRange) AND \(postDueOnPages)\(inPartition(6))
            """
        sampleDuePosts = """
            SELECT (s.ctid::text::point)[0]::bigint AS page, count(*) AS sampled, count(*) FILTER (WHERE \(postDueOnPages)) AS due
            FROM \(s).posts s WHERE s.ctid = ANY($4::tid[])\(inPartition(5))
            GROUP BY 1
            """
        let packDuePreview = packDue.replacing("$3::float8", with: "$4::float8")
        preview = """
            WITH due_packs AS (
                SELECT p.id FROM \(s).packs p WHERE NOT p.is_admin AND p.\(olderThanMinimum) AND \(packDuePreview)
            )
            SELECT (SELECT count(*) FROM due_packs) AS packs,
                   (SELECT count(*) FROM \(s).posts s
                    WHERE s.pack_id IN (SELECT id FROM due_packs)
                       OR (s.\(olderThanMinimum) AND \(postDue) AND NOT EXISTS (
                           SELECT FROM unnest($5::timestamptz[], $6::timestamptz[]) AS r(lower, upper)
                           WHERE s.created_at >= r.lower AND s.created_at < r.upper))) AS posts
            """
    }

    /// `L(p)` as an interval, from `$1` (min µs), `$2` (max µs), `full` (full popularity, `$3`).
    static func lifetime(of popularity: String, full: String = "$3") -> String {
        """
        (($1::bigint + ($2::bigint - $1::bigint) * least(1.0, greatest(\(popularity), 0)::float8 / \(full)::float8)) \
        * interval '1 microsecond')
        """
    }
}
