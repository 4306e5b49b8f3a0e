import Postgres

/// Whether the server caretaker reached takes writes: a streaming standby (a hot
/// standby in recovery) answers reads, but every job, `once` and `migrate` write.
public enum DatabaseRole {
    /// True when the server is a standby (`pg_is_in_recovery()`).
    public static func isStandby(_ connection: Connection) throws -> Bool {
        try connection.query("SELECT pg_is_in_recovery() AS standby").first?.bool("standby") == true
    }

    /// What is wrong, for messages and the log.
    public static let standbyMessage = "the database is a standby (in recovery) and takes no writes"

    /// What to do about it.
    public static let standbyAdvice =
        "point [database] url at the primary; for an HA pair list both hosts with target_session_attrs=read-write"

    /// The error the daemon waits on (it backs off and tries again, as for an unreachable server).
    public static var standbyError: PostgresError {
        PostgresError(
            kind: .query, sqlState: SQLState.readOnlySQLTransaction, message: "\(standbyMessage): \(standbyAdvice)")
    }
}
