import Postgres

/// `leader-succession`: keeps every active community (`archived_at IS NULL`) led
/// by a current, non-deleted member.
///
/// A community needs a new leader when its `leader_id` is NULL (`no_leader`), the
/// leader's user is soft-deleted (`leader_deleted`), the leader is no longer in
/// `community_members` (`leader_left`), or — only when `leader_inactive_after` is
/// set — the leader has not been seen for that long (`leader_inactive`). When a
/// leader is both deleted and gone, `leader_deleted` is recorded: it is the cause.
///
/// The new leader is the appointed `successor_id` when that user is still an
/// eligible member (`chosen_by = 'successor'`), otherwise the eligible member with
/// the earliest `joined_at`, ties to the smaller user id (`'seniority'`);
/// `successor_id` is then cleared. With nobody eligible the community is archived
/// (`archived_at = now()`, `leader_id = NULL`, nothing deleted, `chosen_by = 'none'`). Every change
/// adds a `community_leader_changes` row carrying this run's id.
///
/// Inactivity (when enabled): a user was last seen at the latest `last_seen_at`
/// of any of their sessions, revoked or not, or — with no session at all, e.g.
/// after `prune` removed the old revoked ones — at the account's `created_at`.
/// They are inactive when that is `leader_inactive_after` or more ago. Active
/// members are then preferred over inactive ones (an idle successor is passed
/// over), and an inactive leader is only replaced by an active member: when
/// there is none the leader stays (`inactive_leaders_kept`), since swapping one
/// idle leader for another would only churn, and a community with members is
/// never archived for being quiet.
///
/// Why the locking is safe: each community is settled in its own short
/// transaction. Its row is locked `FOR UPDATE SKIP LOCKED` (a community the app
/// is editing is left for the next run) and the reason is re-read after the
/// lock, so a fix the app made meanwhile is not overwritten. The new leader is
/// chosen by a query that locks the chosen membership row and user row
/// `FOR SHARE`: an app deleting that membership, or soft-deleting that user,
/// waits until the appointment is committed (and then leaves a `leader_left`
/// that its NOTIFY and the next run repair), and a deletion that committed while
/// the job waited for the lock drops that candidate from the result, so the next
/// one is taken. Nobody can therefore leave the job appointing a non-member. A
/// lock held longer than `lock_timeout`, a deadlock, or a constraint or trigger
/// of the app refusing the change leaves just that community for the next run
/// (`communities_blocked`, named in the run's warning); one the app holds locked
/// when the job reaches it is passed over without waiting (`communities_skipped`).
struct LeaderSuccession: Job {
    let settings: LeaderSuccessionSettings

    func run(_ context: JobContext) throws -> JobStats {
        let queries = LeaderSuccessionQueries(schema: context.schema)
        var stats = JobStats([("leaders_appointed", 0), ("communities_archived", 0),
                              ("communities_skipped", 0), ("communities_blocked", 0), ("inactive_leaders_kept", 0)])
        var cursor = Int64.min
        while !context.shouldStop {
            let batch = try findCandidates(context, queries, after: cursor)
            for community in batch where !context.shouldStop {
                record(try settle(community, context, queries), in: &stats)
            }
            cursor = batch.last ?? cursor
            if batch.count < context.job.batchSize { break }
            context.pauseBetweenBatches()
        }
        return try context.finish(stats)
    }

    /// `leader_inactive_after` in microseconds, or `nil` (sent as NULL) when inactivity is off.
    private var inactiveAfter: Int64? { settings.leaderInactiveAfter?.microseconds }

    /// The next `batch_size` active communities, by id after `cursor`, that look as if they need a leader.
    private func findCandidates(_ context: JobContext, _ queries: LeaderSuccessionQueries,
                                after cursor: Int64) throws -> [Int64] {
        try context.inBatch { connection in
            try connection.query(queries.findCandidates, cursor, inactiveAfter, context.job.batchSize)
                .rows.compactMap { $0.int64("id") }
        }
    }

    // MARK: One community

    /// What settling one community came to.
    enum Outcome: Equatable {
        case appointed, archived, healthy, skipped, blocked, inactiveLeaderKept
    }

    /// The decision for one community, taken under its row lock (no locks in a dry run).
    struct Decision {
        let previousLeader: Int64?
        let reason: String
        /// `nil`: nobody is eligible.
        let newLeader: Int64?
        let chosenBy: String
    }

    /// Settles one community in its own transaction; locks held by the app skip it until the next run.
    private func settle(_ community: Int64, _ context: JobContext, _ queries: LeaderSuccessionQueries) throws -> Outcome {
        do {
            return try context.inBatch { connection in
                guard let locked = try lockCommunity(community, connection, queries, dryRun: context.dryRun) else {
                    return try isActive(community, connection, queries) ? .skipped : .healthy
                }
                guard let reason = try reason(community, connection, queries) else { return .healthy }
                let previous = locked.int64("leader_id")
                guard let decision = try decide(community, previous: previous, reason: reason,
                                                connection, queries, dryRun: context.dryRun) else {
                    return .inactiveLeaderKept
                }
                if !context.dryRun { try apply(decision, to: community, connection, queries, runID: context.runID) }
                log(decision, community: community, context)
                return decision.newLeader == nil ? .archived : .appointed
            }
        } catch let error as PostgresError where error.isRowLevel {
            context.block("communities_blocked", id: community, error)
            return .blocked
        }
    }

    /// Locks the community row and returns it while it is still active; `nil` when it
    /// is archived or the app holds it. A dry run reads it without locking.
    private func lockCommunity(_ community: Int64, _ connection: Connection, _ queries: LeaderSuccessionQueries,
                               dryRun: Bool) throws -> Row? {
        try connection.query(dryRun ? queries.readCommunity : queries.lockCommunity, community).first
    }

    private func isActive(_ community: Int64, _ connection: Connection, _ queries: LeaderSuccessionQueries) throws -> Bool {
        try connection.query(queries.readCommunity, community).first != nil
    }

    /// Why the community needs a new leader, read after locking it; `nil` when it does not (any more).
    private func reason(_ community: Int64, _ connection: Connection, _ queries: LeaderSuccessionQueries) throws -> String? {
        try connection.query(queries.reason, community, inactiveAfter).first?.string("reason")
    }

    /// The new leader (locked `FOR SHARE` unless `dryRun`), an archive when nobody is
    /// eligible, or `nil` when an inactive leader has no active member to hand over to.
    private func decide(_ community: Int64, previous: Int64?, reason: String, _ connection: Connection,
                        _ queries: LeaderSuccessionQueries, dryRun: Bool) throws -> Decision? {
        let onlyActive = reason == "leader_inactive"
        let sql = dryRun ? queries.chooseLeader : queries.chooseAndLockLeader
        if let row = try connection.query(sql, community, inactiveAfter, onlyActive).first,
           let chosen = row.int64("user_id") {
            return Decision(previousLeader: previous, reason: reason, newLeader: chosen,
                            chosenBy: row.bool("is_successor") == true ? "successor" : "seniority")
        }
        if onlyActive { return nil }
        return Decision(previousLeader: previous, reason: reason, newLeader: nil, chosenBy: "none")
    }

    /// Appoints the new leader (clearing `successor_id`) or archives, and records the change.
    private func apply(_ decision: Decision, to community: Int64, _ connection: Connection,
                       _ queries: LeaderSuccessionQueries, runID: Int64) throws {
        let sql = decision.newLeader == nil ? queries.archive : queries.appoint
        try connection.query(sql, community, decision.previousLeader, decision.newLeader,
                             decision.reason, decision.chosenBy, runID)
    }

    private func log(_ decision: Decision, community: Int64, _ context: JobContext) {
        context.logger.info(decision.newLeader == nil ? "community archived: nobody eligible" : "leader appointed",
                            metadata: [
                                "community_id": "\(community)",
                                "previous_leader_id": "\(decision.previousLeader.map(String.init) ?? "none")",
                                "new_leader_id": "\(decision.newLeader.map(String.init) ?? "none")",
                                "reason": "\(decision.reason)", "chosen_by": "\(decision.chosenBy)",
                                "dry_run": "\(context.dryRun)"])
    }

    private func record(_ outcome: Outcome, in stats: inout JobStats) {
        switch outcome {
        case .appointed: stats.add("leaders_appointed")
        case .archived: stats.add("communities_archived")
        case .skipped: stats.add("communities_skipped")
        case .inactiveLeaderKept: stats.add("inactive_leaders_kept")
        case .healthy, .blocked: break
        }
    }
}

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

/// `[jobs.leader-succession]`'s own keys.
public struct LeaderSuccessionSettings: Sendable {
    /// `nil`: leaders are never replaced for inactivity.
    public var leaderInactiveAfter: Duration? = nil
}

extension LeaderSuccessionSettings {
    /// Reads them from the job's table, with their defaults and bounds.
    init(reading table: inout TableReader) throws(ConfigurationError) {
        leaderInactiveAfter = try table.optionalDuration("leader_inactive_after", minimum: .seconds(60))
    }
}
