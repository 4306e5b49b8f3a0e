import CaretakerDatabase

/// The SQL of `prune`: per table it prunes, what makes a row old enough, with
/// the app schema spliced in as a quoted identifier and every value passed as a
/// parameter. `$1` is always the table's keep duration in microseconds.
/// caretaker's own tables come from `PrunableRows`, beside the rest of the history's SQL.
struct PruneQueries {
    /// One table prune deletes from.
    struct Target {
        /// The counter of rows deleted (`runs_deleted`); `…_blocked` counts those the app kept.
        let counter: String
        /// Prunable rows for a dry run → `n`.
        let count: String
        /// Up to `$2` prunable rows, leaving out `$3` (blocked this run) → `key`.
        let candidates: String
        /// Deletes `candidates`, skipping rows locked elsewhere.
        let deleteBatch: String
        /// Deletes row `$2` if it is still prunable.
        let deleteOne: String

        var blockedCounter: String { counter.replacing("_deleted", with: "_blocked") }

        init(counter: String, _ prunable: PrunableRows) {
            let (table, key, condition) = (prunable.table, prunable.key, prunable.condition)
            self.counter = counter
            count = "SELECT count(*) AS n FROM \(table) WHERE \(condition)"
            candidates = "SELECT \(key) AS key FROM \(table) WHERE \(condition) AND \(key) <> ALL($3)\nLIMIT $2"
            deleteBatch = "DELETE FROM \(table) WHERE \(key) IN (\(candidates) FOR UPDATE SKIP LOCKED)"
            deleteOne = "DELETE FROM \(table) WHERE \(key) = $2 AND \(condition)"
        }
    }

    let runs: Target
    let slots: Target
    let sessions: Target
    let resetRequests: Target

    init(schema s: String) {
        runs = Target(counter: "runs_deleted", PrunableRows.runs)
        slots = Target(counter: "slots_deleted", PrunableRows.slots)
        sessions = Target(
            counter: "sessions_deleted",
            PrunableRows(
                table: "\(s).sessions", key: "id",
                condition: "revoked_at < now() - $1::bigint * interval '1 microsecond'"))
        resetRequests = Target(
            counter: "reset_requests_deleted",
            PrunableRows(
                table: "\(s).password_reset_requests", key: "id",
                condition: "status <> 'pending' AND requested_at < now() - $1::bigint * interval '1 microsecond'"))
    }
}
