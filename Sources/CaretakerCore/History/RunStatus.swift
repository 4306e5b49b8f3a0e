/// How a run came about (`job_runs.trigger`).
public enum RunTrigger: String, Sendable, CaseIterable {
    case schedule, catchUp = "catch-up", manual, notify, retry
    /// A job's deadline query said its work was due (a session's idle deadline, say).
    case deadline
}

/// How a run ended (`job_runs.status`).
public enum RunStatus: String, Sendable, CaseIterable {
    case running, succeeded, failed, interrupted, skipped
}
