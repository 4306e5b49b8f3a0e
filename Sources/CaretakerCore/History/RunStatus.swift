#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How a run came about (`job_runs.trigger`).
public enum RunTrigger: String, Sendable, CaseIterable {
    case schedule, catchUp = "catch-up", manual, notify, retry
    /// A job's deadline query said its work was due (logout-inactive: a session's idle deadline).
    case deadline
}

/// How a run ended (`job_runs.status`).
public enum RunStatus: String, Sendable, CaseIterable {
    case running, succeeded, failed, interrupted, skipped
}

/// Who this process is, for `job_runs.host` and `job_runs.pid`.
public enum ProcessIdentity {
    public static let hostname: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "unknown" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }()

    public static let pid = Int(getpid())
}
