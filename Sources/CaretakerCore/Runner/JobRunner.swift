import CaretakerConfig
import CaretakerDatabase
import CaretakerJobs
import CaretakerMail
import CaretakerMonitoring
import CaretakerSupport
import Logging
import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Runs one job once: takes its slot and advisory lock, records the run in
/// `job_runs`, calls the job, and logs start and finish.
///
/// The advisory lock is session-level and held for the whole run, so a run
/// whose process dies loses it with its connection; the next taker of the lock
/// marks such rows `interrupted` (no fixed timeout involved).
public struct JobRunner: Sendable {
    public let configuration: Configuration
    public let mail: (any MailTransport)?
    public let logger: Logger
    /// Told when a run starts and finishes (metrics, alerts, pings).
    public let observer: (any RunObserver)?

    public init(
        configuration: Configuration, mail: (any MailTransport)?, logger: Logger,
        observer: (any RunObserver)? = nil
    ) {
        self.configuration = configuration
        self.mail = mail
        self.logger = logger
        self.observer = observer
    }

    /// What to run and why.
    public struct Request: Sendable {
        public var job: JobConfiguration
        public var trigger: RunTrigger
        /// The scheduled slot this run is for; `nil` for manual and notify runs.
        public var slot: Date?
        public var dryRun: Bool = false
        public var attempt: Int = 1

        public init(
            job: JobConfiguration, trigger: RunTrigger, slot: Date? = nil, dryRun: Bool = false, attempt: Int = 1
        ) {
            self.job = job
            self.trigger = trigger
            self.slot = slot
            self.dryRun = dryRun
            self.attempt = attempt
        }
    }

    /// Runs `request` on `connection`, which nobody else may use meanwhile.
    /// Throws when the database itself fails (connection lost, bookkeeping missing);
    /// `.slotNotDue` when `request.slot` has not come yet on the database clock.
    public func run(
        _ request: Request, on connection: Connection,
        stopRequested: @escaping @Sendable () -> Bool = { false }
    ) throws -> RunOutcome {
        let name = request.job.name
        let store = RunRecorder(connection)
        if let slot = request.slot {
            switch try store.claimSlot(slot, job: name) {
            case .claimed: break
            case .taken: return .alreadyClaimed
            case .notDue: return .slotNotDue
            }
        }
        guard try store.tryLock(job: name) else {
            guard let slot = request.slot else { return .busy }
            return .skipped(runID: try recordSkipped(request, slot: slot, in: store))
        }
        // `execute` lets go of the lock with the statement that records the run's end.
        var lockReleased = false
        defer { if !lockReleased { store.unlock(job: name) } }
        try connection.query("SELECT set_config('application_name', $1, false)", "caretaker/\(name)")
        defer { _ = try? connection.query("SELECT set_config('application_name', 'caretaker', false)") }

        let orphans = try store.interruptOrphans(job: name)
        if orphans > 0 {
            logger.warning(
                "marked runs of a dead process interrupted", metadata: ["job": "\(name)", "runs": "\(orphans)"])
        }
        let runID = try store.startRun(
            job: name, trigger: request.trigger, slot: request.slot,
            dryRun: request.dryRun, attempt: request.attempt)
        if let slot = request.slot { try store.attach(runID: runID, toSlot: slot, job: name) }
        return try execute(
            request, runID: runID, on: connection, stopRequested: stopRequested, lockReleased: &lockReleased)
    }

    /// Runs the job and records its end, releasing the job's lock in that same
    /// statement (`lockReleased` says whether it did).
    private func execute(
        _ request: Request, runID: Int64, on connection: Connection,
        stopRequested: @escaping @Sendable () -> Bool, lockReleased: inout Bool
    ) throws -> RunOutcome {
        var runLogger = logger
        runLogger[metadataKey: "job"] = "\(request.job.name)"
        runLogger[metadataKey: "run_id"] = "\(runID)"
        var startMetadata: Logger.Metadata = [
            "trigger": "\(request.trigger.rawValue)", "dry_run": "\(request.dryRun)",
            "attempt": "\(request.attempt)",
        ]
        if let slot = request.slot { startMetadata["slot"] = "\(slot.formatted(.iso8601))" }
        runLogger.info("run started", metadata: startMetadata)
        observer?.runStarted(request.job, runID: runID, dryRun: request.dryRun)
        let context = JobContext(
            connection: connection, job: request.job,
            schema: quoteIdentifier(configuration.database.appSchema),
            dryRun: request.dryRun, runID: runID, logger: runLogger, stopRequested: stopRequested)
        let started = ContinuousClock.now
        let (status, stats, message) = outcome(of: request, in: context)
        if !connection.isHealthy {
            throw PostgresError(
                kind: .connection, message: "lost the database connection during \(request.job.name): \(message ?? "")")
        }
        let elapsed = ContinuousClock.now - started
        do {
            try RunRecorder(connection).finishRun(
                runID, status: status, stats: stats, error: message, releasingLock: true)
            lockReleased = true
        } catch {
            // The job ran (its changes are committed): say how it ended, since job_runs cannot.
            runLogger.error(
                "run ended but its end could not be recorded; the row stays running until the job's next run",
                metadata: ["status": "\(status.rawValue)", "error": "\(error)"])
            throw error
        }
        var metadata: Logger.Metadata = [
            "trigger": "\(request.trigger.rawValue)", "status": "\(status.rawValue)",
            "duration_ms": "\(elapsed.microseconds / 1000)",
        ]
        for counter in stats.counters { metadata[counter.name] = .stringConvertible(JobStatValue(counter.value)) }
        if let message { metadata["error"] = "\(message)" }
        runLogger.log(level: status == .failed ? .error : .info, "run finished", metadata: metadata)
        let undeclared = request.job.declaredStats.undeclared(in: stats)
        if !undeclared.isEmpty {
            // The metrics export a counter by its declared kind: one without a declaration is left out.
            runLogger.warning(
                "the run reported stats its job does not declare; they are in job_runs.stats but not exported",
                metadata: ["stats": "\(undeclared.joined(separator: ","))"])
        }
        observer?.runFinished(
            request.job, runID: runID, status: status, stats: stats, duration: elapsed,
            dryRun: request.dryRun, on: connection)
        return .finished(runID: runID, status: status, stats: stats, error: message)
    }

    private func outcome(of request: Request, in context: JobContext) -> (RunStatus, JobStats, String?) {
        let job = request.job.makeJob(mail: mail, mailOptions: configuration.mail)
        do {
            let stats = context.finish(try job.run(context))
            // A job that stopped for shutdown with work left returns what it did: the run is interrupted.
            if context.stoppedFor == .shutdown { return (.interrupted, stats, "stopped by shutdown between batches") }
            return (.succeeded, stats, nil)
        } catch  where context.isShuttingDown {
            // The shutdown grace ran out and the running statement was cancelled.
            return (.interrupted, JobStats(), "stopped by shutdown: \(error)")
        } catch {
            return (.failed, JobStats(), "\(error)")
        }
    }

    /// Records `slot` of `job` as `skipped` without running it, for `reason` (the
    /// job's previous run was still going here, or the run found no free place
    /// before the next slot). Claims the slot first, so a slot another instance
    /// already took leaves no trace.
    ///
    /// Unlike `run`, this never takes the job's lock (the scheduler thread must not
    /// run a job). For `previousRunStillGoing`, it first asks the database whether
    /// a run was going when the slot came: the scheduler hears of a run's end only
    /// after the run recorded it, and a slot that came due in between is one to run,
    /// not to skip: it answers `.previousRunEnded` and records nothing.
    public func recordSkippedSlot(
        job: JobConfiguration, slot: Date, reason: SkipReason = .previousRunStillGoing,
        on connection: Connection
    ) throws -> RunOutcome {
        let store = RunRecorder(connection)
        if case .previousRunStillGoing = reason, try !store.runWasGoing(atSlot: slot, job: job.name) {
            return .previousRunEnded
        }
        switch try store.claimSlot(slot, job: job.name) {
        case .claimed: break
        case .taken: return .alreadyClaimed
        case .notDue: return .slotNotDue
        }
        return .skipped(
            runID: try recordSkipped(
                Request(job: job, trigger: .schedule, slot: slot), slot: slot,
                reason: reason, in: store))
    }

    /// Records the slots of `job` that nobody ran while no worker was up, as one
    /// `skipped` row (reason `missedWhileDown`, the count and the first and last in
    /// its stats). Claims `last` first, so of several instances starting at once
    /// only one records it. False when another instance already did (or, the server's
    /// clock having stepped back, `last` has not come yet).
    public func recordMissedSlots(
        job: JobConfiguration, first: Date, last: Date, count: Int,
        on connection: Connection
    ) throws -> Bool {
        let store = RunRecorder(connection)
        guard try store.claimSlot(last, job: job.name) == .claimed else { return false }
        let runID = try store.recordMissed(
            job: job.name, count: count, first: first, last: last,
            reason: SkipReason.missedWhileDown.text)
        try store.attach(runID: runID, toSlot: last, job: job.name)
        return true
    }

    /// Why a due slot was not run; the text goes to `job_runs.error` and the log.
    public enum SkipReason: Sendable {
        /// The job's previous run was still going.
        case previousRunStillGoing
        /// The run waited for a place under `worker.max_concurrent_jobs` (or, in
        /// low-footprint mode, for the one connection) until the job's next slot came.
        case noFreePlace
        /// No worker ran while the slot came (the daemon was down); one row stands for all such slots.
        case missedWhileDown

        var text: String {
            switch self {
            case .previousRunStillGoing: "the previous run of this job was still going"
            case .noFreePlace: "it waited for a free place (worker.max_concurrent_jobs) until the next slot came"
            case .missedWhileDown: "missed while no worker ran"
            }
        }
    }

    private func recordSkipped(
        _ request: Request, slot: Date, reason: SkipReason = .previousRunStillGoing,
        in store: RunRecorder
    ) throws -> Int64 {
        let runID = try store.recordSkipped(
            job: request.job.name, trigger: request.trigger, slot: slot, reason: reason.text)
        try store.attach(runID: runID, toSlot: slot, job: request.job.name)
        logger.warning(
            "slot skipped: \(reason.text)",
            metadata: ["job": "\(request.job.name)", "run_id": "\(runID)", "status": "skipped"])
        return runID
    }
}
