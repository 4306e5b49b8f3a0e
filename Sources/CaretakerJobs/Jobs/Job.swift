import CaretakerDatabase

/// A maintenance job: one pass over the data, reporting what it did.
///
/// `run` is synchronous on purpose: it is called on a thread of its own with a
/// connection nobody else uses, and libpq calls block.
///
/// A job returns its own counters. Between two pieces of work it asks
/// `context.recordStopIfDue()` (`context.repeatBatches` asks for it) and, when
/// told to stop, returns what it did so far: the runner then adds the context's
/// counters (rows the app protected, time throttled) and records the run
/// `interrupted` when the stop was for shutdown, `succeeded` otherwise. A job
/// throws only for a failure.
public protocol Job: Sendable {
    func run(_ context: JobContext) throws -> JobStats
}
