import CaretakerConfig
import CaretakerDatabase
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
    /// The WAL budget and replica lag the batches keep (`WritePacer.swift`).
    let pacer: WritePacer

    public init(
        connection: Connection, job: JobConfiguration, schema: String, dryRun: Bool,
        runID: Int64, logger: Logger, stopRequested: @escaping @Sendable () -> Bool = { false }
    ) {
        self.connection = connection
        self.job = job
        self.schema = schema
        self.dryRun = dryRun
        self.runID = runID
        self.logger = logger
        self.stopRequested = stopRequested
        pacer = WritePacer(job: job, logger: logger)
    }

    // MARK: Stopping early

    /// Why a run left work undone.
    public enum StopReason: Sendable, Equatable {
        /// `max_runtime` passed: the run still succeeds, the rest waits for the next one.
        case maxRuntime
        /// The worker is shutting down: the runner records the run `interrupted`.
        case shutdown
    }

    /// Why the run stopped with work left, once `recordStopIfDue()` said so; `nil`
    /// while it has not. The runner reads it when the job returns.
    public private(set) var stoppedFor: StopReason?

    /// True when the run should stop here, between two pieces of work: `max_runtime`
    /// passed, or the worker is shutting down. It then records why (`stoppedFor`).
    /// Ask it only when there is more work to do: a stop for shutdown makes the run
    /// `interrupted`.
    public func recordStopIfDue() -> Bool {
        if isShuttingDown {
            stoppedFor = .shutdown
            return true
        }
        guard ContinuousClock.now - startedAt >= job.maxRuntime else { return false }
        if stoppedFor == nil { stoppedFor = .maxRuntime }
        return true
    }

    /// True when the worker is shutting down (the run then ends `interrupted`).
    public var isShuttingDown: Bool { stopRequested() }

    /// The loop of a batched job: batch, count, stop when short, pause between
    /// batches, stop when due. Before each batch it asks `recordStopIfDue()`; `batch`
    /// runs one batch and returns how many rows it handled (or candidates it
    /// looked at). Fewer than `batch_size` means nothing more waits, and the loop
    /// ends; after a full one `continueAfterFullBatch` may end it too
    /// (a job switching to another way of working), else the job's pause
    /// (`pauseBetweenBatches()`) comes before the next.
    public func repeatBatches(
        continueAfterFullBatch: () throws -> Bool = { true },
        _ batch: () throws -> Int
    ) rethrows {
        while !recordStopIfDue() {
            guard try batch() >= job.batchSize, try continueAfterFullBatch() else { return }
            pauseBetweenBatches()
        }
    }

    // MARK: Transactions

    /// Runs one batch in a short transaction with the job's timeouts set locally
    /// (`lockTimeout` overrides the job's `lock_timeout` for this batch). One round
    /// trip opens the transaction and sets the timeouts.
    public func inBatch<T>(lockTimeout: Duration? = nil, _ body: (Connection) throws -> T) throws -> T {
        var value: T?
        try inTransaction(lockTimeout: lockTimeout) { connection in
            value = try body(connection)
            return .commit
        }
        return value!  // set: the transaction committed
    }

    /// A batch whose body says how it ends, as GRDB's `inTransaction` does: `.commit`
    /// commits it like `inBatch`, `.rollback` undoes it (a dry run that measures by
    /// doing). An error rolls it back too.
    public func inTransaction(
        lockTimeout: Duration? = nil,
        _ body: (Connection) throws -> TransactionCompletion
    ) throws {
        try rollingBackOnError {
            let started = ContinuousClock.now
            let opened = try connection.pipeline([.init("BEGIN"), batchStart(lockTimeout)])
            switch try body(connection) {
            case .commit: try commit(from: opened[1], startedAt: started)
            case .rollback: try connection.query("ROLLBACK")
            }
        }
    }

    /// A batch that is one statement, sent with its transaction in a single round
    /// trip: `BEGIN`, the batch's settings (`set_config(…, true)`, i.e. `SET LOCAL`),
    /// the statement, the WAL position and `COMMIT` as one libpq pipeline. Returns
    /// the statement's result.
    public func inBatch(
        lockTimeout: Duration? = nil, statement sql: String,
        _ parameters: [any PostgresBindable]
    ) throws -> QueryResult {
        try rollingBackOnError {
            let started = ContinuousClock.now
            let results = try connection.pipeline([
                .init("BEGIN"), batchStart(lockTimeout), .init(sql, parameters),
                .init(WritePacer.walPosition), .init("COMMIT"),
            ])
            pacer.book(from: results[1], to: results[3], startedAt: started)
            return results[2]
        }
    }

    /// A batch whose first statement goes in the same round trip as `BEGIN` and the
    /// timeouts; `body` gets its result, may run more statements, and the batch commits
    /// when it returns. A run with nothing to do then costs two round trips per batch.
    public func inBatch<T>(
        lockTimeout: Duration? = nil, first: Connection.Statement,
        _ body: (QueryResult, Connection) throws -> T
    ) throws -> T {
        try rollingBackOnError {
            let started = ContinuousClock.now
            let results = try connection.pipeline([.init("BEGIN"), batchStart(lockTimeout), first])
            let value = try body(results[2], connection)
            try commit(from: results[1], startedAt: started)
            return value
        }
    }

    /// Reads the WAL position and commits, in one round trip.
    private func commit(from start: QueryResult, startedAt started: ContinuousClock.Instant) throws {
        let results = try connection.pipeline([.init(WritePacer.walPosition), .init("COMMIT")])
        pacer.book(from: start, to: results[0], startedAt: started)
    }

    /// The batch's settings for the current transaction only (what `SET LOCAL` does),
    /// as one parameterised statement that a pipeline can carry: the timeouts (the
    /// idle limit is twice `statement_timeout`, clamped to the largest value
    /// PostgreSQL accepts), `synchronous_commit = off` when the job does without the
    /// flush, `wal_compression` when asked, `backend_flush_after` under a WAL
    /// budget, and the WAL position the batch starts at.
    private func batchStart(_ lockTimeout: Duration?) -> Connection.Statement {
        var parameters: [any PostgresBindable] = [
            Self.milliseconds(job.statementTimeout), Self.milliseconds(lockTimeout ?? job.lockTimeout),
            Self.milliseconds(min(job.statementTimeout * 2, JobConfiguration.longestTimeout)),
        ]
        var settings = ""
        if !job.synchronousCommit {
            parameters.append("off")
            settings += ", set_config('synchronous_commit', $\(parameters.count), true)"
        }
        if let walCompression {
            parameters.append(walCompression)
            settings += ", set_config('wal_compression', $\(parameters.count), true)"
        }
        if job.maxWALRate != nil {
            parameters.append(WritePacer.backendFlushAfter)
            settings += ", set_config('backend_flush_after', $\(parameters.count), true)"
        }
        return .init(
            """
            SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $2, true),
                   set_config('idle_in_transaction_session_timeout', $3, true)\(settings),
                   pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint AS wal_position
            """, parameters)
    }

    /// The `wal_compression` method the batches set, once `compressFullPageImages()` found one allowed.
    public private(set) var walCompression: String?

    /// For bulk work (a backlog's sweep): from now on the batches compress the full
    /// page images they write (`wal_compression = lz4`, for their transaction only),
    /// when the server has lz4 and this role may set it (a superuser, or
    /// `GRANT SET ON PARAMETER wal_compression` on PostgreSQL 15). Most of a bulk
    /// delete's WAL is the first change of each page after a checkpoint, a full image
    /// of it; lz4 writes a third less of it and costs less CPU than it saves. Not
    /// `zstd` or `pglz`: on the bench's 4M-row DELETE zstd wrote a quarter less again
    /// but took twice lz4's time, longer than no compression.
    /// Returns the method, or nil when it may not be set (nothing changes then).
    @discardableResult
    public func compressFullPageImages() -> String? {
        guard walCompression == nil else { return walCompression }
        let method = "lz4"
        guard (try? connection.query("BEGIN")) != nil else { return nil }
        let allowed = (try? connection.query("SELECT set_config('wal_compression', $1, true)", method)) != nil
        _ = try? connection.query("ROLLBACK")
        walCompression = allowed ? method : nil
        return walCompression
    }

    private func rollingBackOnError<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            if connection.isHealthy { _ = try? connection.query("ROLLBACK") }
            throw error
        }
    }

    // MARK: Rows the app protects

    /// Rows skipped this run because the app's constraints, triggers or locks refused them.
    public private(set) var blocked = BlockedRows()

    /// Counts `id` under `counter` (e.g. `posts_blocked`): `error` refused it for this run.
    public func block(_ counter: String, id: some CustomStringConvertible, _ error: PostgresError) {
        blocked.add(counter, id: "\(id)", cause: error)
    }

    /// Runs `change` for each of `ids` in a transaction of its own, after a batch of
    /// them failed on a row-level cause: a row that fails again (the commit
    /// included) is counted under `counter` and left for the next run, the others
    /// go ahead. Returns what `change` returned for the rows that committed.
    public func oneByOne<ID: CustomStringConvertible, Result>(
        _ ids: [ID], counter: String,
        _ change: (Connection, ID) throws -> Result
    ) throws -> [Result] {
        var committed: [Result] = []
        for id in ids where !recordStopIfDue() {
            do {
                committed.append(try inBatch { try change($0, id) })
            } catch let error as PostgresError where error.isRowLevel {
                block(counter, id: id, error)
            }
        }
        return committed
    }

    /// One batch that changes up to `batch_size` rows with the single statement
    /// `change`. When a row the app protects refuses it, the batch again one row
    /// at a time (`oneByOne`): `candidates`, with the same parameters, selects the
    /// batch's keys (its first column), and `changeOne` changes one of them. Returns
    /// how many rows the batch looked at (what `repeatBatches` wants) and how many
    /// it changed.
    public func changeBatch(
        _ change: String, orOneByOne candidates: String, _ parameters: [any PostgresBindable],
        counter: String, _ changeOne: (Connection, String) throws -> Int
    )
        throws -> (handled: Int, changed: Int)
    {
        do {
            let changed = try inBatch { try $0.query(change, parameters).affectedRows }
            return (changed, changed)
        } catch let error as PostgresError where error.isRowLevel {
            let keys = try inBatch { try $0.query(candidates, parameters).rows.compactMap { $0[0] } }
            let changed = try oneByOne(keys, counter: counter, changeOne)
            return (keys.count, changed.reduce(0, +))
        }
    }

    /// The ids counted under `counter` so far, as an array parameter for a query to
    /// leave them out (`id <> ALL($n)`: PostgreSQL takes the type from `id`).
    public func blockedIDs(_ counter: String) -> PostgresArray {
        PostgresArray(blocked.ids(counter))
    }

    /// The end of every run, called by the runner with the stats the job returned:
    /// adds the blocked-row counters and the time spent throttled or waiting for
    /// standbys, and logs one warning naming the causes when rows were blocked.
    package func finish(_ stats: JobStats) -> JobStats {
        var stats = stats
        for (counter, count) in blocked.counts { stats.add(counter, count) }
        pacer.addStats(to: &stats)
        if !blocked.isEmpty {
            var metadata: Logger.Metadata = ["cause": "\(blocked.causes)", "ids": "\(blocked.sampleIDs)"]
            for (counter, count) in blocked.counts { metadata[counter] = "\(count)" }
            logger.warning("rows the app protects were skipped; they wait for the next run", metadata: metadata)
        }
        return stats
    }

    /// `"2000ms"`: a value `set_config` understands for the timeout settings.
    static func milliseconds(_ duration: Duration) -> String {
        "\(max(1, duration.microseconds / 1000))ms"
    }
}

/// Rows a run skipped because the app refused them, by counter, with their causes.
public struct BlockedRows: Sendable {
    /// How many ids the warning names per counter, and how many distinct causes.
    static let sampleSize = 5
    static let causesShown = 3
    private var ids: [(counter: String, ids: [String])] = []
    private var seen: Set<String> = []
    private var causeTexts: [String] = []
    private var moreCauses = false

    public var isEmpty: Bool { ids.isEmpty }

    /// `[("posts_blocked", 2)]`, in the order first seen; each id counts once per run.
    public var counts: [(String, Int)] { ids.map { ($0.counter, $0.ids.count) } }

    /// `constraint reports_post_id_fkey (SQLSTATE 23503); …`: the first few distinct causes.
    public var causes: String { causeTexts.joined(separator: "; ") + (moreCauses ? "; …" : "") }

    /// `posts 17, 18; packs 3`: the first few ids of each counter.
    public var sampleIDs: String {
        ids.map { entry in
            let name = entry.counter.replacing("_blocked", with: "")
            let shown = entry.ids.prefix(Self.sampleSize).joined(separator: ", ")
            return "\(name) \(shown)" + (entry.ids.count > Self.sampleSize ? ", …" : "")
        }.joined(separator: "; ")
    }

    func ids(_ counter: String) -> [String] {
        ids.first { $0.counter == counter }?.ids ?? []
    }

    mutating func add(_ counter: String, id: String, cause error: PostgresError) {
        guard seen.insert(counter + "\u{0}" + id).inserted else { return }
        if let index = ids.firstIndex(where: { $0.counter == counter }) {
            ids[index].ids.append(id)
        } else {
            ids.append((counter, [id]))
        }
        let cause = Self.describe(error)
        guard !causeTexts.contains(cause) else { return }
        if causeTexts.count < Self.causesShown { causeTexts.append(cause) } else { moreCauses = true }
    }

    /// The constraint's name when there is one, else the server's message (a
    /// trigger's `RAISE` text, "deadlock detected", …), with the SQLSTATE.
    static func describe(_ error: PostgresError) -> String {
        let what = error.constraint.map { "constraint \($0)" } ?? String(error.message.prefix(120))
        return "\(what) (SQLSTATE \(error.sqlState ?? "?"))"
    }
}

/// How a transaction body ends its transaction (`JobContext.inTransaction`).
public enum TransactionCompletion: Sendable {
    case commit, rollback
}
