import CaretakerSupport

/// How a run ended (`job_runs.status`).
public enum RunStatus: String, Sendable, CaseIterable {
    case running, succeeded, failed, interrupted, skipped
}

/// How a run came about (`job_runs.trigger`).
public enum RunTrigger: String, Sendable, CaseIterable {
    case schedule, catchUp = "catch-up", manual, notify, retry
    /// A job's deadline query said its work was due (a session's idle deadline, say).
    case deadline
}

/// A value read from caretaker's tables that this caretaker does not know.
///
/// The tables' CHECK constraints admit only the values of `RunStatus` and
/// `RunTrigger`, so an unknown one was written by a newer caretaker whose migration
/// widened them. Reading it is refused with this error rather than guessed at: each
/// place that switches over a run's status (pings, metrics, alerts, the dashboard's
/// colours) would otherwise have to invent a meaning for it.
public struct UnknownHistoryValue: Error, CustomStringConvertible, Equatable {
    public let column: String
    public let value: String
    public let runID: Int64

    public init(column: String, value: String, runID: Int64) {
        self.column = column
        self.value = value
        self.runID = runID
    }

    public var description: String {
        "run \(runID) in the run history (job_runs) has \(column) '\(value)', which this version of caretaker "
            + "(\(caretakerVersion)) does not know: a newer caretaker wrote it; run the newer caretaker here too"
    }
}

extension RunStatus {
    /// Reads `job_runs.status` of run `runID`.
    init(stored text: String?, runID: Int64) throws(UnknownHistoryValue) {
        guard let status = text.flatMap(Self.init(rawValue:)) else {
            throw UnknownHistoryValue(column: "status", value: text ?? "NULL", runID: runID)
        }
        self = status
    }
}

extension RunTrigger {
    /// Reads `job_runs.trigger` of run `runID`.
    init(stored text: String?, runID: Int64) throws(UnknownHistoryValue) {
        guard let trigger = text.flatMap(Self.init(rawValue:)) else {
            throw UnknownHistoryValue(column: "trigger", value: text ?? "NULL", runID: runID)
        }
        self = trigger
    }
}
