import Postgres

/// One partition of a `posts` table partitioned by range on `created_at`, as
/// pg_catalog describes it: no row of it is read to learn its bounds.
struct PostPartition: Sendable, Equatable {
    /// The range on `created_at` a partition holds, `[lower, upper)`, as PostgreSQL
    /// prints the bounds (`2026-12-05 00:00:00+00`).
    struct Bounds: Sendable, Equatable {
        let lower: String
        let upper: String
    }

    let schema: String
    let name: String
    /// Nil for the DEFAULT partition, one bounded by `MINVALUE`/`MAXVALUE`, or one
    /// of another partition key.
    let bounds: Bounds?
    let isDefault: Bool
    /// Partitioned in turn (its rows live in its own partitions).
    let isPartitioned: Bool
    /// A `DETACH PARTITION … CONCURRENTLY` of it was interrupted: it must be finished
    /// (`FINALIZE`) before anything else can detach a partition of the table.
    let detachPending: Bool
    /// Its upper bound is at least `max_lifetime` in the past on the database clock:
    /// every post it can hold is past every lifetime.
    let whollyExpired: Bool
    /// Heap pages now (0 for a partitioned one).
    let pages: Int64
    /// The worker owns it (as a member of its owner): only an owner may drop it.
    var owned: Bool = true

    var qualified: String { quoteIdentifier(schema) + "." + quoteIdentifier(name) }
    var displayName: String { schema + "." + name }
}

enum PostPartitions {
    /// The direct partitions of the app's `posts`, oldest upper bound first; nil when
    /// `posts` is not partitioned by range on `created_at` alone. `$1`: `posts`,
    /// schema-qualified; `$2`: `max_lifetime` in microseconds.
    static let list = """
        WITH parent AS (
            SELECT to_regclass($1) AS oid
        ), partitions AS (
            SELECT n.nspname, c.relname, c.relkind = 'p' AS partitioned, h.inhdetachpending AS detach_pending,
                   pg_get_expr(c.relpartbound, c.oid) AS bound,
                   regexp_match(pg_get_expr(c.relpartbound, c.oid), '^FOR VALUES FROM \\(''([^'']*)''\\) TO \\(''([^'']*)''\\)$') AS range,
                   CASE WHEN c.relkind = 'r' THEN pg_relation_size(c.oid) / current_setting('block_size')::bigint ELSE 0 END AS pages,
                   pg_has_role(c.relowner, 'USAGE') AS owned
            FROM parent
            JOIN pg_inherits h ON h.inhparent = parent.oid
            JOIN pg_class c ON c.oid = h.inhrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
        )
        SELECT nspname, relname, partitioned, detach_pending, bound = 'DEFAULT' AS is_default, pages, owned,
               (range[1]::timestamptz)::text AS lower, (range[2]::timestamptz)::text AS upper,
               coalesce(range[2]::timestamptz + $2::bigint * interval '1 microsecond' <= now(), false) AS wholly_expired
        FROM partitions
        WHERE (SELECT pg_get_partkeydef(oid) FROM parent) = 'RANGE (created_at)'
        ORDER BY range[2]::timestamptz NULLS LAST, relname
        """

    /// Whether the app's `posts` is a partitioned table (by anything).
    static func isPartitioned(_ connection: Connection, schema: String) throws(PostgresError) -> Bool {
        try connection.query(
            "SELECT relkind = 'p' AS partitioned FROM pg_class WHERE oid = to_regclass($1)", schema + ".posts"
        ).first?.bool("partitioned") == true
    }

    /// The partitions of `posts` (`schema` quoted), or nil when it is not partitioned by range on `created_at`.
    static func read(
        _ connection: Connection, schema: String, maxLifetime: Duration
    ) throws(PostgresError) -> [PostPartition]? {
        guard try isPartitioned(connection, schema: schema) else { return nil }
        let rows = try connection.query(list, schema + ".posts", maxLifetime.microseconds).rows
        if rows.isEmpty {
            let key = try connection.query("SELECT pg_get_partkeydef(to_regclass($1)) AS key", schema + ".posts")
                .first?.string("key")
            if key != "RANGE (created_at)" { return nil }
        }
        return rows.map { row in
            let lower = row.string("lower")
            let upper = row.string("upper")
            return PostPartition(
                schema: row.string("nspname") ?? "", name: row.string("relname") ?? "",
                bounds: lower.flatMap { lower in upper.map { PostPartition.Bounds(lower: lower, upper: $0) } },
                isDefault: row.bool("is_default") == true, isPartitioned: row.bool("partitioned") == true,
                detachPending: row.bool("detach_pending") == true, whollyExpired: row.bool("wholly_expired") == true,
                pages: row.int64("pages") ?? 0, owned: row.bool("owned") != false)
        }
    }
}
