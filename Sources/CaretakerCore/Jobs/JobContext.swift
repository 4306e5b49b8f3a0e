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
    /// (`lockTimeout` overrides the job's `lock_timeout` for this batch).
    public func inBatch<T>(lockTimeout: Duration? = nil, _ body: (Connection) throws -> T) throws -> T {
        // One round trip opens the transaction and sets the timeouts. The values are
        // whole milliseconds formatted here from validated durations, not user text.
        do {
            try connection.execute(script: """
            BEGIN;
            SET LOCAL statement_timeout = '\(Self.milliseconds(job.statementTimeout))';
            SET LOCAL lock_timeout = '\(Self.milliseconds(lockTimeout ?? job.lockTimeout))';
            SET LOCAL idle_in_transaction_session_timeout = '\(Self.milliseconds(job.statementTimeout * 2))'
            """)
            let value = try body(connection)
            try connection.query("COMMIT")
            return value
        } catch {
            if connection.isHealthy { _ = try? connection.query("ROLLBACK") }
            throw error
        }
    }

    /// A batch that is one statement, sent with its transaction in a single round
    /// trip: `BEGIN`, the timeouts (`set_config(…, true)`, i.e. `SET LOCAL`), the
    /// statement and `COMMIT` as one libpq pipeline. Returns the statement's result.
    public func inBatch(lockTimeout: Duration? = nil, statement sql: String,
                        _ parameters: [any PostgresBindable]) throws -> QueryResult {
        do {
            let results = try connection.pipeline([
                .init("BEGIN"),
                .init("""
                    SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $2, true),
                           set_config('idle_in_transaction_session_timeout', $3, true)
                    """, [Self.milliseconds(job.statementTimeout), Self.milliseconds(lockTimeout ?? job.lockTimeout),
                          Self.milliseconds(job.statementTimeout * 2)]),
                .init(sql, parameters),
                .init("COMMIT"),
            ])
            return results[2]
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
