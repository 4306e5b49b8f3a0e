/// A maintenance job: one pass over the data, reporting what it did.
///
/// `run` is synchronous on purpose: it is called on a thread of its own with a
/// connection nobody else uses, and libpq calls block.
public protocol Job: Sendable {
    func run(_ context: JobContext) throws -> JobStats
}

/// Thrown by a job to say it stopped early on purpose (shutdown); the run is `interrupted`.
public struct JobInterrupted: Error, Sendable {
    public let stats: JobStats
}
