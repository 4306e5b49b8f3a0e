#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the scheduler knows about one job between runs.
struct JobState {
    /// The next scheduled slot (database clock).
    var nextSlot: Date?
    /// A run of this job is in progress in this process.
    var running = false
    /// A failed run's next attempt: when, and which attempt it is.
    var retry: (at: Date, attempt: Int)?
    /// When to ask the job's deadline query next, when that comes before `nextSlot`.
    var deadlineCheck: Date?
    /// The run that just ended, until the deadline query says whether it left work due.
    var lastRun: (request: JobRunner.Request, failed: Bool)?
    /// When the job's latest run here started (database clock): work due before then was its to do.
    var lastStart: Date?
    /// Attempts since the last slot that failed or left their work undone; a deadline
    /// run counts as the next one and waits for the next slot once `max_retries` are used.
    var failedAttempts = 0
    /// A NOTIFY arrived (or LISTEN reconnected): run soon.
    var notified = false
    /// A run waiting for a free place under `max_concurrent_jobs`.
    var queued: JobRunner.Request?

    /// A run can start as soon as a place is free.
    var canStart: Bool { !running && (queued != nil || notified) }

    /// The times the scheduler must wake for this job. While it runs or waits
    /// for a place, only its next slot counts (a slot must move on, or be recorded
    /// skipped); a retry or deadline check is covered by the run that starts.
    var plannedTimes: [Date?] {
        running || queued != nil ? [nextSlot] : [nextSlot, retry?.at, deadlineCheck]
    }

    /// A run starts: it does the work of a pending retry, NOTIFY or deadline check too.
    mutating func start() {
        queued = nil
        running = true
        retry = nil
        notified = false
        deadlineCheck = nil
        lastRun = nil
    }
}
