/// The sysexits codes caretaker exits with (docs/commands.md).
public enum ExitStatus: Int32, Sendable, CaseIterable {
    case ok = 0
    /// A job failed, or `check` found an unhealthy job.
    case jobFailed = 1
    case usage = 64
    case databaseUnavailable = 69
    /// Another instance is running that job right now, or `migrate` gave up waiting for its locks: try again.
    case busy = 75
    case configuration = 78
}
