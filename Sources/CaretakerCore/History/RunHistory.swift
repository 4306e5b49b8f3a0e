#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Postgres
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How a run came about (`job_runs.trigger`).
public enum RunTrigger: String, Sendable, CaseIterable {
    case schedule, catchUp = "catch-up", manual, notify, retry
    /// A job's deadline query said its work was due (logout-inactive: a session's idle deadline).
    case deadline
}

/// How a run ended (`job_runs.status`).
public enum RunStatus: String, Sendable, CaseIterable {
    case running, succeeded, failed, interrupted, skipped
}

/// Reads and writes `caretaker.job_runs`.
public enum RunHistory {
    /// Inserts the `running` row of a run and returns its id.
    public static func start(_ connection: Connection, job: String, trigger: RunTrigger, slot: Date?,
                             dryRun: Bool, attempt: Int) throws -> Int64 {
        let row = try connection.query("""
            INSERT INTO caretaker.job_runs (job, trigger, status, slot, attempt, dry_run, host, pid, backend_pid)
            VALUES ($1, $2, 'running', to_timestamp($3::float8), $4, $5, $6, $7, pg_backend_pid())
            RETURNING id
            """, job, trigger.rawValue, slot.map { $0.timeIntervalSince1970 }, attempt, dryRun,
            ProcessIdentity.hostname, ProcessIdentity.pid).first
        guard let id = row?.int64("id") else { throw PostgresError(kind: .query, message: "INSERT … RETURNING gave no id") }
        return id
    }

    /// Completes a run: status, stats, error (secret-free), `finished_at` from the database clock.
    public static func finish(_ connection: Connection, runID: Int64, status: RunStatus,
                              stats: JobStats, error: String?) throws {
        try connection.query("""
            UPDATE caretaker.job_runs
            SET status = $2, stats = $3::jsonb, error = $4, finished_at = clock_timestamp()
            WHERE id = $1
            """, runID, status.rawValue, stats.json, error)
    }

    /// Records a slot that could not run because the job's previous run was still going.
    public static func recordSkipped(_ connection: Connection, job: String, trigger: RunTrigger, slot: Date,
                                     reason: String) throws -> Int64 {
        let row = try connection.query("""
            INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, finished_at, error, host, pid, backend_pid)
            VALUES ($1, $2, 'skipped', to_timestamp($3::float8), clock_timestamp(), clock_timestamp(), $4, $5, $6, pg_backend_pid())
            RETURNING id
            """, job, trigger.rawValue, slot.timeIntervalSince1970, reason,
            ProcessIdentity.hostname, ProcessIdentity.pid).first
        return row?.int64("id") ?? 0
    }

    /// Inserts the one `skipped` row that stands for the slots of `job` nobody ran
    /// while no worker was up; `stats` counts them and names the first and last.
    public static func recordMissed(_ connection: Connection, job: String, count: Int, first: Date, last: Date,
                                    reason: String) throws -> Int64 {
        let row = try connection.query("""
            INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, finished_at, stats, error, host, pid, backend_pid)
            VALUES ($1, 'schedule', 'skipped', to_timestamp($4::float8), clock_timestamp(), clock_timestamp(),
                    jsonb_build_object('missed_slots', $2::bigint, 'first_missed', to_timestamp($3::float8),
                                       'last_missed', to_timestamp($4::float8)),
                    $5, $6, $7, pg_backend_pid())
            RETURNING id
            """, job, count, first.timeIntervalSince1970, last.timeIntervalSince1970, reason,
            ProcessIdentity.hostname, ProcessIdentity.pid).first
        return row?.int64("id") ?? 0
    }

    /// Marks `running` rows of `job` as `interrupted`. Call only while holding the
    /// job's advisory lock: then no live process can own such a row.
    @discardableResult
    public static func interruptOrphans(_ connection: Connection, job: String) throws -> Int {
        try connection.query("""
            UPDATE caretaker.job_runs
            SET status = 'interrupted', finished_at = clock_timestamp(),
                error = coalesce(error, 'the process running it died (its advisory lock is gone)')
            WHERE job = $1 AND status = 'running'
            """, job).affectedRows
    }

    /// Marks every `running` row whose owner no longer holds its job's advisory lock as `interrupted`.
    @discardableResult
    public static func interruptAllOrphans(_ connection: Connection) throws -> Int {
        try connection.query("""
            UPDATE caretaker.job_runs
            SET status = 'interrupted', finished_at = clock_timestamp(),
                error = coalesce(error, 'the process running it died (its advisory lock is gone)')
            WHERE status = 'running' AND NOT caretaker.job_lock_held(job)
            """).affectedRows
    }
}

/// Who this process is, for `job_runs.host` and `job_runs.pid`.
public enum ProcessIdentity {
    public static let hostname: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "unknown" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }()

    public static let pid = Int(getpid())
}
