/// The SQL of `leader-succession`, with the app schema spliced in as a quoted
/// identifier and every value passed as a parameter.
///
/// Wherever `inactive(…)` appears, its parameter is `leader_inactive_after` in
/// microseconds, or NULL when inactivity is off (then nobody is inactive).
struct LeaderSuccessionQueries {
    /// `$1` cursor id, `$2` inactivity, `$3` limit → `id`.
    let findCandidates: String
    /// `$1` community → `leader_id`, when still active. Takes no lock.
    let readCommunity: String
    /// `$1` community → a row when it is active and now locked by this transaction.
    let lockCommunity: String
    /// `$1` community, `$2` inactivity → `reason`, NULL when the leader is fine.
    let reason: String
    /// `$1` community, `$2` inactivity, `$3` only active members → `user_id`, `is_successor`.
    let chooseLeader: String
    /// `chooseLeader`, locking the chosen membership and user rows `FOR SHARE`.
    let chooseAndLockLeader: String
    /// `$1` community, `$2` previous, `$3` new leader, `$4` reason, `$5` chosen_by, `$6` run id.
    let appoint: String
    /// Same parameters as `appoint` (`$3` is NULL).
    let archive: String

    init(schema s: String) {
        let leaderIsMember = """
            EXISTS (SELECT 1 FROM \(s).community_members lm WHERE lm.community_id = c.id AND lm.user_id = c.leader_id)
            """
        findCandidates = """
            SELECT c.id FROM \(s).communities c
            LEFT JOIN \(s).users l ON l.id = c.leader_id
            WHERE c.archived_at IS NULL AND c.id > $1::bigint
              AND (l.id IS NULL OR l.deleted_at IS NOT NULL OR NOT \(leaderIsMember)
                   OR \(Self.inactive(user: "l", schema: s, parameter: "$2")))
            ORDER BY c.id LIMIT $3
            """
        readCommunity = "SELECT c.id, c.leader_id FROM \(s).communities c WHERE c.id = $1 AND c.archived_at IS NULL"
        lockCommunity = readCommunity + " FOR UPDATE SKIP LOCKED"
        reason = """
            SELECT CASE
                WHEN l.id IS NULL THEN 'no_leader'
                WHEN l.deleted_at IS NOT NULL THEN 'leader_deleted'
                WHEN NOT \(leaderIsMember) THEN 'leader_left'
                WHEN \(Self.inactive(user: "l", schema: s, parameter: "$2")) THEN 'leader_inactive'
            END AS reason
            FROM \(s).communities c LEFT JOIN \(s).users l ON l.id = c.leader_id
            WHERE c.id = $1 AND c.archived_at IS NULL
            """
        let memberInactive = Self.inactive(user: "u", schema: s, parameter: "$2")
        chooseLeader = """
            SELECT m.user_id, m.user_id = c.successor_id AS is_successor
            FROM \(s).communities c
            JOIN \(s).community_members m ON m.community_id = c.id
            JOIN \(s).users u ON u.id = m.user_id
            WHERE c.id = $1 AND u.deleted_at IS NULL AND m.user_id IS DISTINCT FROM c.leader_id
              AND NOT ($3::boolean AND \(memberInactive))
            ORDER BY \(memberInactive), (m.user_id = c.successor_id) IS TRUE DESC, m.joined_at, m.user_id
            LIMIT 1
            """
        chooseAndLockLeader = chooseLeader + "\nFOR SHARE OF m, u"
        appoint = """
            WITH appointed AS (
                UPDATE \(s).communities SET leader_id = $3::bigint, successor_id = NULL WHERE id = $1 RETURNING id
            )
            INSERT INTO \(s).community_leader_changes
                (community_id, previous_leader_id, new_leader_id, reason, chosen_by, run_id)
            SELECT id, $2::bigint, $3::bigint, $4::text, $5::text, $6::bigint FROM appointed
            """
        archive = """
            WITH archived AS (
                UPDATE \(s).communities SET archived_at = now(), leader_id = NULL WHERE id = $1 RETURNING id
            )
            INSERT INTO \(s).community_leader_changes
                (community_id, previous_leader_id, new_leader_id, reason, chosen_by, run_id)
            SELECT id, $2::bigint, $3::bigint, $4::text, $5::text, $6::bigint FROM archived
            """
    }

    /// True when inactivity is on (`parameter` not NULL) and `user` was last seen
    /// that long ago or longer: at their latest session, or, with none, at sign-up.
    static func inactive(user u: String, schema s: String, parameter: String) -> String {
        """
        (\(parameter)::bigint IS NOT NULL AND coalesce(
            (SELECT max(ls.last_seen_at) FROM \(s).sessions ls WHERE ls.user_id = \(u).id), \(u).created_at)
            <= now() - \(parameter)::bigint * interval '1 microsecond')
        """
    }
}
