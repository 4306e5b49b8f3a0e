#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where one job stands in the daemon: exactly one of these at a time. Only the
/// `Scheduler`'s event methods move a job from one state to another.
enum JobState: Sendable {
    /// Nothing is planned before the job's next slot.
    case idle
    /// A NOTIFY (or a new LISTEN connection) asks for a run as soon as a place is free.
    /// A retry that comes due by then runs instead (it does the same work, as the
    /// attempt it is).
    case notified(retry: Retry?)
    /// A failed attempt's next one waits for its time.
    case waitingForRetry(Retry)
    /// The job's deadline query is to be asked at `check.at` (a retry may wait too).
    case waitingForDeadline(DeadlineCheck)
    /// A run waits for a free place under `max_concurrent_jobs`.
    case queued(JobRunner.Request)
    /// A run is in progress here; `then` is what follows once its end is handled.
    case running(then: FollowUp?)

    /// A failed attempt's next one: when, and which attempt it is.
    struct Retry: Sendable, Equatable {
        var at: Date
        var attempt: Int
    }

    /// When to ask the job's deadline query, and what waits beside it.
    struct DeadlineCheck: Sendable {
        var at: Date
        /// The run that just ended, until the query says whether it left work due.
        var lastRun: LastRun?
        var retry: Retry?
    }

    /// A run that ended, as its deadline query needs it.
    struct LastRun: Sendable {
        var request: JobRunner.Request
        var failed: Bool
    }

    /// What waits for a running job's run to end.
    enum FollowUp: Sendable {
        /// A NOTIFY came: the job runs once more.
        case notified
        /// A slot that is to run after all (its previous run had ended on the database).
        case run(JobRunner.Request)
    }

    var isRunning: Bool {
        if case .running = self { true } else { false }
    }

    /// A run can start as soon as a place is free.
    var canStart: Bool {
        switch self {
        case .queued, .notified: true
        case .idle, .waitingForRetry, .waitingForDeadline, .running: false
        }
    }

    /// The retry that waits, in the states that keep one.
    var retry: Retry? {
        switch self {
        case .notified(let retry): retry
        case .waitingForRetry(let retry): retry
        case .waitingForDeadline(let check): check.retry
        case .idle, .queued, .running: nil
        }
    }

    /// The times the scheduler must wake for this state besides the job's next slot
    /// (a running or queued job has none: the run that starts does the work of a
    /// retry, NOTIFY or deadline check).
    var plannedTimes: [Date] {
        switch self {
        case .idle, .queued, .running: []
        case .notified(let retry): retry.map { [$0.at] } ?? []
        case .waitingForRetry(let retry): [retry.at]
        case .waitingForDeadline(let check): [check.at] + (check.retry.map { [$0.at] } ?? [])
        }
    }
}

/// One job as the scheduler follows it: its place in the schedule, what its past
/// runs leave to the next ones, and its `JobState`.
struct TrackedJob: Sendable {
    /// The next scheduled slot (database clock).
    var nextSlot: Date?
    /// When the job's latest run here started (database clock): work due before then was its to do.
    var lastStart: Date?
    /// Attempts since the last slot that failed or left their work undone; a deadline
    /// run counts as the next one and waits for the next slot once `max_retries` are used.
    var failedAttempts = 0
    var state: JobState = .idle
}
