import CaretakerConfig
import CaretakerDatabase
import Postgres

/// Told by `JobRunner` when a run starts and when it has been recorded as
/// finished, on the run's own thread. It must not throw or take long: the job's
/// lock is still held.
public protocol RunObserver: Sendable {
    func runStarted(_ job: JobConfiguration, runID: Int64, dryRun: Bool)
    /// `connection` is the run's, free for reading the history now.
    func runFinished(
        _ job: JobConfiguration, runID: Int64, status: RunStatus, stats: JobStats,
        duration: Duration, dryRun: Bool, on connection: Connection)
}
