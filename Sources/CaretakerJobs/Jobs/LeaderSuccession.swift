import CaretakerConfig
import CaretakerDatabase
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
        let pass = LeaderSuccessionPass(settings: settings, context: context)
        try pass.run()
        return pass.stats
    }
}

/// One run of `leader-succession`: its context, queries and counters.
private final class LeaderSuccessionPass {
    let context: JobContext
    let queries: LeaderSuccessionQueries
    /// `leader_inactive_after` in microseconds, or `nil` (sent as NULL) when inactivity is off.
    let inactiveAfter: Int64?
    var stats = JobStats([
        ("leaders_appointed", 0), ("communities_archived", 0),
        ("communities_skipped", 0), ("communities_blocked", 0), ("inactive_leaders_kept", 0),
    ])

    init(settings: LeaderSuccessionSettings, context: JobContext) {
        self.context = context
        queries = LeaderSuccessionQueries(schema: context.schema)
        inactiveAfter = settings.leaderInactiveAfter?.microseconds
    }

    func run() throws {
        var cursor = KeysetCursor()
        try context.repeatBatches {
            let candidates = try findCandidates(after: cursor)
            for community in candidates {
                guard let id = community.int64("id") else { continue }
                if context.recordStopIfDue() { break }
                if let counter = try settle(id).counter { stats.add(counter) }
            }
            cursor.advance(past: candidates)
            return candidates.count
        }
    }

    /// The next `batch_size` active communities, by id after `cursor`, that look as if they need a leader → `id`.
    private func findCandidates(after cursor: KeysetCursor) throws -> [Row] {
        try context.inBatch { connection in
            try connection.query(queries.findCandidates, cursor.parameters + [inactiveAfter, context.job.batchSize])
                .rows
        }
    }

    // MARK: One community

    /// Settles one community in its own transaction; locks held by the app skip it until the next run.
    private func settle(_ community: Int64) throws -> SuccessionOutcome {
        do {
            return try context.inBatch { connection in
                guard let locked = try lockCommunity(community, connection) else {
                    return try isActive(community, connection) ? .skipped : .healthy
                }
                guard let reason = try reason(community, connection) else { return .healthy }
                let chosen = try chooseLeader(community, connection, onlyActive: reason == "leader_inactive")
                guard
                    let decision = SuccessionDecision(
                        previousLeader: locked.int64("leader_id"), reason: reason,
                        chosen: chosen)
                else {
                    return .inactiveLeaderKept
                }
                if !context.dryRun { try apply(decision, to: community, connection) }
                log(decision, community: community)
                return decision.newLeader == nil ? .archived : .appointed
            }
        } catch let error as PostgresError where error.isRowLevel {
            context.block("communities_blocked", id: community, error)
            return .blocked
        }
    }

    /// Locks the community row and returns it while it is still active; `nil` when it
    /// is archived or the app holds it. A dry run reads it without locking.
    private func lockCommunity(_ community: Int64, _ connection: Connection) throws -> Row? {
        try connection.query(context.dryRun ? queries.readCommunity : queries.lockCommunity, community).first
    }

    private func isActive(_ community: Int64, _ connection: Connection) throws -> Bool {
        try connection.query(queries.readCommunity, community).first != nil
    }

    /// Why the community needs a new leader, read after locking it; `nil` when it does not (any more).
    private func reason(_ community: Int64, _ connection: Connection) throws -> String? {
        try connection.query(queries.reason, community, inactiveAfter).first?.string("reason")
    }

    /// The eligible member to appoint (locked `FOR SHARE` unless in a dry run), `nil` when there is none.
    private func chooseLeader(
        _ community: Int64, _ connection: Connection,
        onlyActive: Bool
    ) throws -> SuccessionDecision.Candidate? {
        let sql = context.dryRun ? queries.chooseLeader : queries.chooseAndLockLeader
        guard let row = try connection.query(sql, community, inactiveAfter, onlyActive).first,
            let user = row.int64("user_id")
        else { return nil }
        return .init(userID: user, isSuccessor: row.bool("is_successor") == true)
    }

    /// Appoints the new leader (clearing `successor_id`) or archives, and records the change.
    private func apply(_ decision: SuccessionDecision, to community: Int64, _ connection: Connection) throws {
        let sql = decision.newLeader == nil ? queries.archive : queries.appoint
        try connection.query(
            sql, community, decision.previousLeader, decision.newLeader,
            decision.reason, decision.chosenBy, context.runID)
    }

    private func log(_ decision: SuccessionDecision, community: Int64) {
        context.logger.info(
            decision.newLeader == nil ? "community archived: nobody eligible" : "leader appointed",
            metadata: [
                "community_id": "\(community)",
                "previous_leader_id": "\(decision.previousLeader.map(String.init) ?? "none")",
                "new_leader_id": "\(decision.newLeader.map(String.init) ?? "none")",
                "reason": "\(decision.reason)", "chosen_by": "\(decision.chosenBy)",
                "dry_run": "\(context.dryRun)",
            ])
    }
}

// MARK: Decisions

/// What settling one community came to.
enum SuccessionOutcome: Equatable {
    case appointed, archived, healthy, skipped, blocked, inactiveLeaderKept

    /// The run's counter it adds to; `nil` for none (`communities_blocked` is counted by `JobContext.block`).
    var counter: String? {
        switch self {
        case .appointed: "leaders_appointed"
        case .archived: "communities_archived"
        case .skipped: "communities_skipped"
        case .inactiveLeaderKept: "inactive_leaders_kept"
        case .healthy, .blocked: nil
        }
    }
}

/// The decision for one community that needs a leader, taken under its row lock.
struct SuccessionDecision: Equatable {
    /// An eligible member the query chose.
    struct Candidate: Equatable {
        let userID: Int64
        /// The community's appointed `successor_id`.
        let isSuccessor: Bool
    }

    let previousLeader: Int64?
    let reason: String
    /// `nil`: nobody is eligible, the community is archived.
    let newLeader: Int64?
    /// `successor`, `seniority` or `none`.
    let chosenBy: String

    init(previousLeader: Int64?, reason: String, newLeader: Int64?, chosenBy: String) {
        self.previousLeader = previousLeader
        self.reason = reason
        self.newLeader = newLeader
        self.chosenBy = chosenBy
    }

    /// Appoints `chosen`; with nobody chosen, archives the community, unless the
    /// leader is only inactive (`reason` is `leader_inactive`): then `nil`, the
    /// leader stays, since swapping one idle leader for another would only churn.
    init?(previousLeader: Int64?, reason: String, chosen: Candidate?) {
        if let chosen {
            self.init(
                previousLeader: previousLeader, reason: reason, newLeader: chosen.userID,
                chosenBy: chosen.isSuccessor ? "successor" : "seniority")
        } else if reason == "leader_inactive" {
            return nil
        } else {
            self.init(previousLeader: previousLeader, reason: reason, newLeader: nil, chosenBy: "none")
        }
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
