/// The SQL of `logout-inactive`, with the app schema spliced in as a quoted
/// identifier and every value passed as a parameter. `$1` is always
/// `idle_timeout` in microseconds.
struct LogoutInactiveQueries {
    /// Idle sessions for a dry run → `n`.
    let countIdle: String
    /// Up to `$2` sessions idle for `$1` µs, oldest first, leaving out `$3` (blocked this run) → `id`.
    let idleSessions: String
    /// Revokes `idleSessions`, skipping those the app holds locked.
    let revokeIdle: String
    /// Revokes session `$2` if it is still idle.
    let revokeOne: String
    /// `$2` (epoch seconds): the start of the last run → `stuck`, `wait` (see `LogoutInactive.deadlines`).
    let deadlines: String

    init(schema s: String) {
        let idle = "revoked_at IS NULL AND last_seen_at <= now() - $1::bigint * interval '1 microsecond'"
        countIdle = "SELECT count(*) AS n FROM \(s).sessions WHERE \(idle)"
        idleSessions = """
            SELECT id FROM \(s).sessions
            WHERE \(idle) AND id <> ALL($3)
            ORDER BY last_seen_at LIMIT $2
            """
        revokeIdle = """
            WITH idle AS (\(idleSessions) FOR UPDATE SKIP LOCKED)
            UPDATE \(s).sessions t SET revoked_at = now(), revoked_reason = 'inactivity'
            FROM idle WHERE t.id = idle.id
            """
        revokeOne = """
            UPDATE \(s).sessions SET revoked_at = now(), revoked_reason = 'inactivity'
            WHERE id = $2 AND \(idle)
            """
        deadlines = """
            SELECT EXISTS (SELECT 1 FROM \(s).sessions
                           WHERE revoked_at IS NULL
                             AND last_seen_at <= to_timestamp($2::float8) - $1::bigint * interval '1 microsecond') AS stuck,
                   extract(epoch FROM (SELECT min(last_seen_at) FROM \(s).sessions
                                       WHERE revoked_at IS NULL
                                         AND last_seen_at > to_timestamp($2::float8) - $1::bigint * interval '1 microsecond')
                                      + $1::bigint * interval '1 microsecond' - now()) AS wait
            """
    }
}
