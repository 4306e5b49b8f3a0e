import CaretakerDatabase
import CaretakerJobs

/// When to send an alert and when a recovery notice: a decision apart from the
/// database and the mail transport, which `AlertNotifier` carries out.
///
/// The state that counts is the one stored in `caretaker.job_alerts`, shared by
/// every instance; each instance reads it, decides, and claims the change with a
/// conditional write, so one incident makes one message however many instances
/// (or failing runs) see it.
public enum AlertPolicy {
    /// How a job looks now.
    public enum Condition: Sendable, Equatable {
        case healthy
        case unhealthy(cause: String)
    }

    /// What `caretaker.job_alerts` says (`nil`: no row yet).
    public typealias Stored = AlertState

    public enum Action: Sendable, Equatable {
        case nothing
        /// First sight of a healthy job: store the state, send nothing.
        case remember
        /// The job became unhealthy: one alert.
        case alert(cause: String)
        /// The job is healthy again after an alert: one recovery notice.
        case recover
    }

    /// The job's condition by `check`'s rule (a failed last run, stale, or rows
    /// blocked run after run). A job with no finished run yet is judged too: its
    /// health gives it `stale_after` from when caretaker first saw it, and past that
    /// (a first run that hangs, slots only ever skipped) it is an incident to mail.
    public static func condition(of job: HistoryReadings.Job) -> Condition {
        job.health.healthy ? .healthy : .unhealthy(cause: job.health.reason)
    }

    public static func decide(stored: Stored?, now: Condition?) -> Action {
        guard let now else { return .nothing }
        return switch (stored, now) {
        case (nil, .healthy): .remember
        case (nil, .unhealthy(let cause)), (.healthy, .unhealthy(let cause)): .alert(cause: cause)
        case (.unhealthy, .healthy): .recover
        case (.healthy, .healthy), (.unhealthy, .unhealthy): .nothing
        }
    }

    /// The state an action leaves in the store.
    public static func stored(after action: Action) -> Stored? {
        switch action {
        case .nothing: nil
        case .remember, .recover: .healthy
        case .alert: .unhealthy
        }
    }
}
