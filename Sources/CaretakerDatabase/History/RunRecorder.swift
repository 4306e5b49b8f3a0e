import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The runner's and the scheduler's writes to caretaker's bookkeeping: a run's
/// `caretaker.job_runs` row from start to finish, skipped and missed slots, the
/// claimed `caretaker.job_slots`, and the job's advisory lock. What is read back for
/// people and monitoring is `RunHistory`'s; alert states are `AlertStates`'s.
/// Nothing else in caretaker, its CLI or its dashboard names these tables in SQL
/// (`PrunableRows` hands `prune` its conditions).
///
/// Errors follow one rule: a failed statement throws its `PostgresError`, and a
/// write that must hand back a row (the id of the run it recorded) and got none
/// throws too (a `PostgresError` of kind `.query` naming the statement), so no
/// caller ever sees a made-up id. A read that finds no row returns nil.
///
/// Times cross as seconds since the epoch (`to_timestamp($n::float8)`), and every
/// time decision uses the database clock.
public struct RunRecorder {
    public let connection: Connection

    public init(_ connection: Connection) {
        self.connection = connection
    }

    // MARK: A run's row

    /// Inserts the `running` row of a run and returns its id.
    public func startRun(job: String, trigger: RunTrigger, slot: Date?, dryRun: Bool, attempt: Int) throws -> Int64 {
        try insertedID(
            connection.query(
                """
                INSERT INTO caretaker.job_runs (job, trigger, status, slot, attempt, dry_run, host, pid, backend_pid)
                VALUES ($1, $2, 'running', to_timestamp($3::float8), $4, $5, $6, $7, pg_backend_pid())
                RETURNING id
                """, job, trigger.rawValue, slot.map { $0.timeIntervalSince1970 }, attempt, dryRun,
                ProcessIdentity.hostname, ProcessIdentity.pid), recording: "the start of a run of \(job)")
    }

    /// Completes a run: status, stats, error (secret-free), `finished_at` from the database clock.
    ///
    /// With `releasingLock`, the same statement then lets go of the job's advisory
    /// lock, right after `finished_at` is taken: another instance that finds the lock
    /// held is then sure the run had not finished when it looked, so a slot it records
    /// `skipped` for that reason came due before `finished_at`. (Its `interruptOrphans`
    /// waits on this row until the statement commits, and then finds it finished.)
    public func finishRun(
        _ runID: Int64, status: RunStatus, stats: JobStats, error: String?, releasingLock: Bool = false
    ) throws {
        try connection.query(
            """
            WITH finished AS (
                UPDATE caretaker.job_runs
                SET status = $2, stats = $3::jsonb, error = $4, finished_at = clock_timestamp()
                WHERE id = $1
                RETURNING job
            )
            SELECT pg_advisory_unlock(caretaker.job_lock_key(job)) FROM finished WHERE $5
            """, runID, status.rawValue, stats.json, error, releasingLock)
    }

    /// True when a run of `job` was going when `slot` came due: one holds the job's
    /// lock or is `running`, or the latest finished at or after `slot` (runs of a job
    /// never overlap, so the latest started is the latest to finish). False means the job's
    /// previous run had ended before the slot came (or the next has not taken the lock
    /// yet), so the slot is not one to record `skipped` because a run was still going.
    public func runWasGoing(atSlot slot: Date, job: String) throws -> Bool {
        try connection.query(
            """
            SELECT caretaker.job_lock_held($1)
                OR EXISTS (SELECT 1 FROM caretaker.job_runs WHERE job = $1 AND status = 'running')
                OR coalesce((SELECT finished_at >= to_timestamp($2::float8) FROM caretaker.job_runs
                             WHERE job = $1 AND status <> 'skipped'
                             ORDER BY started_at DESC LIMIT 1), false) AS going
            """, job, slot.timeIntervalSince1970
        ).first?.bool("going") == true
    }

    /// Records `slot` of `job` as `skipped` for `reason` and returns the row's id.
    public func recordSkipped(job: String, trigger: RunTrigger, slot: Date, reason: String) throws -> Int64 {
        try insertedID(
            connection.query(
                """
                INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, finished_at, error, host, pid, backend_pid)
                VALUES ($1, $2, 'skipped', to_timestamp($3::float8), clock_timestamp(), clock_timestamp(), $4, $5, $6, pg_backend_pid())
                RETURNING id
                """, job, trigger.rawValue, slot.timeIntervalSince1970, reason,
                ProcessIdentity.hostname, ProcessIdentity.pid), recording: "a skipped slot of \(job)")
    }

    /// Inserts the one `skipped` row that stands for the slots of `job` nobody ran
    /// while no worker was up; `stats` counts them and names the first and last.
    public func recordMissed(job: String, count: Int, first: Date, last: Date, reason: String) throws -> Int64 {
        try insertedID(
            connection.query(
                """
                INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, finished_at, stats, error, host, pid, backend_pid)
                VALUES ($1, 'schedule', 'skipped', to_timestamp($4::float8), clock_timestamp(), clock_timestamp(),
                        jsonb_build_object('missed_slots', $2::bigint, 'first_missed', to_timestamp($3::float8),
                                           'last_missed', to_timestamp($4::float8)),
                        $5, $6, $7, pg_backend_pid())
                RETURNING id
                """, job, count, first.timeIntervalSince1970, last.timeIntervalSince1970, reason,
                ProcessIdentity.hostname, ProcessIdentity.pid), recording: "the missed slots of \(job)")
    }

    private func insertedID(_ result: QueryResult, recording what: String) throws -> Int64 {
        guard let id = result.first?.int64("id") else {
            throw PostgresError(
                kind: .query, message: "recording \(what) gave no id (INSERT … RETURNING id returned no row)")
        }
        return id
    }

    private static let diedText = "the process running it died (its advisory lock is gone)"

    /// Marks `running` rows of `job` as `interrupted`. Call only while holding the
    /// job's advisory lock: then no live process can own such a row.
    @discardableResult
    public func interruptOrphans(job: String) throws -> Int {
        try connection.query(
            """
            UPDATE caretaker.job_runs
            SET status = 'interrupted', finished_at = clock_timestamp(), error = coalesce(error, $2)
            WHERE job = $1 AND status = 'running'
            """, job, Self.diedText
        ).affectedRows
    }

    /// Marks every `running` row whose owner no longer holds its job's advisory lock as `interrupted`.
    @discardableResult
    public func interruptAllOrphans() throws -> Int {
        try connection.query(
            """
            UPDATE caretaker.job_runs
            SET status = 'interrupted', finished_at = clock_timestamp(), error = coalesce(error, $1)
            WHERE status = 'running' AND NOT caretaker.job_lock_held(job)
            """, Self.diedText
        ).affectedRows
    }

    // MARK: Slots and the job's lock

    /// What taking a slot found.
    public enum SlotClaim: Sendable, Equatable {
        /// This call inserted the `(job, slot)` record: the slot is ours.
        case claimed
        /// Another instance had already taken it.
        case taken
        /// The slot has not come yet on the database clock: nothing was inserted.
        case notDue
    }

    /// Takes the unique `(job, slot)` record.
    ///
    /// The record is only inserted when the slot is due on the database's own
    /// clock (rule zero): the scheduler decides from an estimate of that clock,
    /// and a slot must never run early because the estimate was a little ahead.
    public func claimSlot(_ slot: Date, job: String) throws -> SlotClaim {
        let row = try connection.query(
            """
            WITH due AS (SELECT to_timestamp($2::float8) <= clock_timestamp() AS due),
                 taken AS (
                     INSERT INTO caretaker.job_slots (job, slot)
                     SELECT $1, to_timestamp($2::float8) FROM due WHERE due
                     ON CONFLICT DO NOTHING RETURNING 1
                 )
            SELECT (SELECT due FROM due) AS due, EXISTS (SELECT 1 FROM taken) AS claimed
            """, job, slot.timeIntervalSince1970
        ).first
        guard row?.bool("due") == true else { return .notDue }
        return row?.bool("claimed") == true ? .claimed : .taken
    }

    /// Notes on the claimed `slot` of `job` which run (or skipped row) answered it.
    public func attach(runID: Int64, toSlot slot: Date, job: String) throws {
        try connection.query(
            "UPDATE caretaker.job_slots SET run_id = $3 WHERE job = $1 AND slot = to_timestamp($2::float8)",
            job, slot.timeIntervalSince1970, runID)
    }

    /// Until when some worker looked after `job`: its latest claimed slot, or its
    /// latest run's slot or start; nil when it never ran.
    public func lastLookedAfter(job: String) throws -> Date? {
        try connection.query(
            """
            SELECT extract(epoch FROM greatest(
                       (SELECT max(slot) FROM caretaker.job_slots WHERE job = $1),
                       (SELECT max(coalesce(slot, started_at)) FROM caretaker.job_runs WHERE job = $1)))::float8 AS looked_after
            """, job
        ).first?.double("looked_after").map { Date(timeIntervalSince1970: $0) }
    }

    /// Takes `job`'s session-level advisory lock if it is free; false when another session holds it.
    public func tryLock(job: String) throws -> Bool {
        try connection.query("SELECT pg_try_advisory_lock(caretaker.job_lock_key($1)) AS locked", job)
            .first?.bool("locked") == true
    }

    /// Lets go of `job`'s advisory lock (a broken connection has lost it already).
    public func unlock(job: String) {
        _ = try? connection.query("SELECT pg_advisory_unlock(caretaker.job_lock_key($1))", job)
    }
}
