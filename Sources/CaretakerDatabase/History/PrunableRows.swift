/// Rows `prune` may delete from one of caretaker's tables, in its batched loop: the
/// table, the key it deletes by, and the condition (`$1` is the age to keep, in
/// microseconds). The history's two are here, beside the rest of its SQL.
public struct PrunableRows: Sendable {
    public let table: String
    public let key: String
    public let condition: String

    public init(table: String, key: String, condition: String) {
        self.table = table
        self.key = key
        self.condition = condition
    }

    /// Runs older than `keep_history` of any status but `running`, except the latest
    /// of each job in each status (a job that runs less often keeps its last success and failure).
    public static let runs = PrunableRows(
        table: "caretaker.job_runs", key: "id",
        condition: """
            started_at < now() - $1::bigint * interval '1 microsecond' AND status <> 'running' \
            AND EXISTS (SELECT 1 FROM caretaker.job_runs later
                        WHERE later.job = job_runs.job AND later.status = job_runs.status
                          AND (later.started_at, later.id) > (job_runs.started_at, job_runs.id))
            """)

    /// Claimed slots older than `keep_history`.
    public static let slots = PrunableRows(
        table: "caretaker.job_slots", key: "ctid", condition: "slot < now() - $1::bigint * interval '1 microsecond'")
}
