import Logging
import Postgres

/// What a job run gets: its connection, its configuration and the run's limits.
public final class JobContext: @unchecked Sendable {
    public let connection: Connection
    public let job: JobConfiguration
    /// The quoted app schema, e.g. `"public"`.
    public let schema: String
    public let dryRun: Bool
    /// The `job_runs.id` of this run.
    public let runID: Int64
    public let logger: Logger
    private let startedAt = ContinuousClock.now
    private let stopRequested: @Sendable () -> Bool

    public init(connection: Connection, job: JobConfiguration, schema: String, dryRun: Bool,
                runID: Int64, logger: Logger, stopRequested: @escaping @Sendable () -> Bool = { false }) {
        self.connection = connection
        self.job = job
        self.schema = schema
        self.dryRun = dryRun
        self.runID = runID
        self.logger = logger
        self.stopRequested = stopRequested
    }

    private var stoppedForShutdown = false

    /// True when the run should stop between batches: `max_runtime` passed, or the worker is shutting down.
    /// Ask it only when there is more work to do: a `true` for shutdown marks the run interrupted.
    public var shouldStop: Bool {
        if isShuttingDown {
            stoppedForShutdown = true
            return true
        }
        return ContinuousClock.now - startedAt >= job.maxRuntime
    }

    /// True when the run left work undone because the worker is shutting down (the run is then `interrupted`).
    public var wasInterrupted: Bool { stoppedForShutdown }

    /// True when the worker is shutting down (the run then ends `interrupted`).
    public var isShuttingDown: Bool { stopRequested() }

    /// Runs one batch in a short transaction with the job's timeouts set locally
    /// (`lockTimeout` overrides the job's `lock_timeout` for this batch). One round
    /// trip opens the transaction and sets the timeouts.
    public func inBatch<T>(lockTimeout: Duration? = nil, _ body: (Connection) throws -> T) throws -> T {
        try rollingBackOnError {
            _ = try connection.pipeline([.init("BEGIN"), timeouts(lockTimeout)])
            let value = try body(connection)
            try connection.query("COMMIT")
            return value
        }
    }

    /// A batch that is one statement, sent with its transaction in a single round
    /// trip: `BEGIN`, the timeouts (`set_config(…, true)`, i.e. `SET LOCAL`), the
    /// statement and `COMMIT` as one libpq pipeline. Returns the statement's result.
    public func inBatch(lockTimeout: Duration? = nil, statement sql: String,
                        _ parameters: [any PostgresBindable]) throws -> QueryResult {
        try rollingBackOnError {
            try connection.pipeline([.init("BEGIN"), timeouts(lockTimeout), .init(sql, parameters), .init("COMMIT")])[2]
        }
    }

    /// A batch whose first statement goes in the same round trip as `BEGIN` and the
    /// timeouts; `body` gets its result, may run more statements, and the batch commits
    /// when it returns. A run with nothing to do then costs two round trips per batch.
    public func inBatch<T>(lockTimeout: Duration? = nil, first: Connection.Statement,
                           _ body: (QueryResult, Connection) throws -> T) throws -> T {
        try rollingBackOnError {
            let results = try connection.pipeline([.init("BEGIN"), timeouts(lockTimeout), first])
            let value = try body(results[2], connection)
            try connection.query("COMMIT")
            return value
        }
    }

    /// The job's timeouts for the current transaction only (what `SET LOCAL` does),
    /// as one parameterised statement that a pipeline can carry.
    private func timeouts(_ lockTimeout: Duration?) -> Connection.Statement {
        .init("""
            SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $2, true),
                   set_config('idle_in_transaction_session_timeout', $3, true)
            """, [Self.milliseconds(job.statementTimeout), Self.milliseconds(lockTimeout ?? job.lockTimeout),
                  Self.milliseconds(job.statementTimeout * 2)])
    }

    private func rollingBackOnError<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            if connection.isHealthy { _ = try? connection.query("ROLLBACK") }
            throw error
        }
    }

    /// Sleeps `batch_pause` between batches (low-footprint mode spares the SD card).
    public func pauseBetweenBatches() {
        guard job.batchPause > .zero, !shouldStop else { return }
        OSThread.sleep(for: job.batchPause)
    }

    /// `"2000ms"`: a value `set_config` understands for the timeout settings.
    static func milliseconds(_ duration: Duration) -> String {
        "\(max(1, duration.microseconds / 1000))ms"
    }
}
