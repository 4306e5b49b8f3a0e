import Postgres

/// What alerts last said of a job (`caretaker.job_alerts.state`), shared by every instance.
public enum AlertState: String, Sendable {
    case healthy, unhealthy
}

/// `caretaker.job_alerts`: each job's alert state, claimed by one instance at a time
/// with conditional writes, so one incident makes one message however many
/// instances see it. `AlertNotifier` decides; this only reads and writes the rows.
public struct AlertStates {
    public let connection: Connection

    public init(_ connection: Connection) {
        self.connection = connection
    }

    /// Whether `caretaker.job_alerts` exists (it came with a later migration).
    public func tableExists() throws -> Bool {
        try connection.query("SELECT to_regclass('caretaker.job_alerts') IS NOT NULL AS present").first?.bool("present")
            == true
    }

    /// The stored alert state of `job`, nil before alerts judged it.
    public func state(job: String) throws -> AlertState? {
        try connection.query("SELECT state FROM caretaker.job_alerts WHERE job = $1", job).first?["state"]
            .flatMap(AlertState.init(rawValue:))
    }

    /// Every job's stored alert state.
    public func all() throws -> [String: AlertState] {
        var stored: [String: AlertState] = [:]
        for row in try connection.query("SELECT job, state FROM caretaker.job_alerts").rows {
            stored[row["job"] ?? ""] = row["state"].flatMap(AlertState.init(rawValue:))
        }
        return stored
    }

    /// Moves `job` from `previous` (nil: no row yet) to `next` if the stored state
    /// is still `previous` and no failed send asked to wait; returns since when
    /// the job was in the state it leaves (`2026-01-02 03:04:05 UTC`), nil when
    /// another instance took the change first.
    public func claimChange(
        job: String, from previous: AlertState?, to next: AlertState, cause: String?
    ) throws
        -> String?
    {
        let result: QueryResult
        if let previous {
            result = try connection.query(
                """
                UPDATE caretaker.job_alerts new SET state = $2, cause = $4, since = clock_timestamp(), retry_after = NULL
                FROM caretaker.job_alerts old
                WHERE new.job = $1 AND old.job = new.job AND new.state = $3
                  AND (new.retry_after IS NULL OR new.retry_after <= clock_timestamp())
                RETURNING to_char(old.since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"') AS since
                """, job, next.rawValue, previous.rawValue, cause)
        } else {
            result = try connection.query(
                """
                INSERT INTO caretaker.job_alerts (job, state, cause) VALUES ($1, $2, $3)
                ON CONFLICT (job) DO NOTHING
                RETURNING to_char(since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"') AS since
                """, job, next.rawValue, cause)
        }
        return result.first.map { $0["since"] ?? "" }
    }

    /// Gives a change whose mail could not be sent back (`next` to `previous`),
    /// and asks every instance to wait `retryAfter` (an interval, `5 minutes`) before trying again.
    public func handBackChange(
        job: String, to previous: AlertState, from next: AlertState, retryAfter: String
    )
        throws
    {
        try connection.query(
            """
            UPDATE caretaker.job_alerts SET state = $2, retry_after = clock_timestamp() + $4::interval
            WHERE job = $1 AND state = $3
            """, job, previous.rawValue, next.rawValue, retryAfter)
    }
}
