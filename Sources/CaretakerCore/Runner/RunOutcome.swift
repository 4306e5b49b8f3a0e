import CaretakerDatabase

/// How an attempt to run a job, or to record one of its slots `skipped`, ended: the
/// one answer the runner gives, which the daemon hands to the scheduler as it is.
///
/// The database failing under the bookkeeping is not an outcome but an error, which
/// `JobRunner` throws (the daemon hands the scheduler that as the `failure` of a `Result`).
public enum RunOutcome: Sendable {
    /// The job ran and its end is recorded (`status` says how it went).
    case finished(runID: Int64, status: RunStatus, stats: JobStats, error: String?)
    /// Another process is running this job right now (a manual run gives up: exit 75).
    case busy
    /// The slot was due but the previous run still held the job; recorded once as `skipped`.
    case skipped(runID: Int64)
    /// Another instance already took this slot: nothing to do, nothing recorded.
    case alreadyClaimed
    /// The slot has not come yet on the database clock: nothing was recorded; ask
    /// again once it has. (The daemon decides on a lower bound of that clock, so it
    /// sees this only when the server's clock stepped back.)
    case slotNotDue
    /// Asked to record a slot `skipped` because the previous run was still going, the
    /// database says that run had ended before the slot came: nothing was recorded; the
    /// slot is one to run.
    case previousRunEnded
}
