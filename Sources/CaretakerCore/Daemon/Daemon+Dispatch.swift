import CaretakerDatabase
import CaretakerSupport
import Logging
import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Daemon {
    // MARK: Start-up

    /// Plans each job's next slot and, after downtime, its catch-up run and the
    /// record of the slots nobody ran (one `skipped` row per job).
    func startScheduling() {
        scheduler = Scheduler(
            jobs: configuration.jobs, maxConcurrentJobs: configuration.worker.maxConcurrentJobs,
            deadlineChecks: !lowFootprint, now: clock.now)
        guard let control = ensureControl() else { return }
        for job in configuration.jobs where job.enabled {
            do {
                let installedAt = try Migrator.installedAt(on: control) ?? Date(timeIntervalSince1970: 0)
                let lastLookedAfter = try RunRecorder(control).lastLookedAfter(job: job.name)
                guard
                    carryOut(
                        scheduler.catchUp(
                            job, lastLookedAfter: lastLookedAfter, installedAt: installedAt, now: clock.now))
                else { return }
            } catch {
                return pool.controlFailed(error)
            }
        }
    }

    // MARK: Dispatch

    /// Asks the scheduler what is due on a fresh reading of the database clock and carries it out.
    func dispatchDueWork() {
        guard scheduler.hasDueWork(now: clock.now, freePlaces: pool.placesFree, canRecord: pool.canRecord) else {
            return
        }
        guard pool.canRecord else {
            // Low-footprint mode: the only connection is running a job, so nothing
            // can start; still move the slots on, so that a slot of the running job
            // is remembered as skipped (recorded when the connection is back).
            carryOut(scheduler.dispatch(now: clock.now, freePlaces: 0, canRecord: false))
            return
        }
        guard let control = ensureControl() else { return }
        // Decide on a fresh reading of the database clock, not on the estimate alone:
        // the reading is a lower bound of the server's clock, so a slot found due here
        // is due when its run claims it.
        do { try clock.refresh(control) } catch { return pool.controlFailed(error) }
        guard carryOut(scheduler.deadlinesToAsk(now: clock.now)) else { return }
        carryOut(
            scheduler.dispatch(
                now: clock.now, freePlaces: pool.placesFree, canRecord: true,
                stopping: stopRequested.load(ordering: .relaxed)))
    }

    // MARK: Carrying out

    /// Carries out the scheduler's actions in order, reporting each result back to
    /// the scheduler as an event (whose actions are carried out in turn). False when
    /// the scheduler's connection failed on the way (the rest that needed it waits).
    @discardableResult
    func carryOut(_ actions: [Scheduler.Action]) -> Bool {
        var databaseWorked = true
        for action in actions {
            switch action {
            case .start(let request):
                start(request)
            case .recordSkipped(let skip):
                guard databaseWorked, let control = pool.control else {
                    carryOut(scheduler.skipsNotRecorded([skip]))
                    continue
                }
                do {
                    let outcome = try runner.recordSkippedSlot(
                        job: skip.job, slot: skip.slot, reason: skip.reason, on: control)
                    carryOut(scheduler.skipRecorded(skip, outcome))
                } catch {
                    carryOut(scheduler.skipsNotRecorded([skip]))
                    pool.controlFailed(error)
                    databaseWorked = false
                }
            case .askDeadline(let job, let since):
                guard databaseWorked, let control = pool.control, let query = job.wakeups.nextDeadline else {
                    continue
                }
                do {
                    let answer = try query(control, quoteIdentifier(configuration.database.appSchema), since)
                    carryOut(scheduler.deadlineAnswered(job, answer, now: clock.now))
                } catch {
                    pool.controlFailed(error)
                    databaseWorked = false
                }
            case .recordMissedSlots(let job, let missed):
                guard databaseWorked, let control = pool.control else { continue }
                do {
                    if try runner.recordMissedSlots(
                        job: job, first: missed.first, last: missed.last, count: missed.count, on: control)
                    {
                        logger.warning(
                            "slots missed while no worker ran",
                            metadata: [
                                "job": "\(job.name)", "missed_slots": "\(missed.count)",
                                "first_missed": "\(missed.first)", "last_missed": "\(missed.last)",
                            ])
                    }
                } catch {
                    pool.controlFailed(error)
                    databaseWorked = false
                }
            case .retryPlanned(let job, let attempt, let at, let reason):
                logger.info(
                    "retry planned",
                    metadata: [
                        "job": "\(job)", "attempt": "\(attempt)", "reason": "\(reason.rawValue)",
                        "retry_in_ms": "\(Int64(at.timeIntervalSince(clock.now) * 1000))",
                    ])
            }
        }
        return databaseWorked
    }

    /// Runs `request` on a thread of its own; the outcome comes back as an event.
    private func start(_ request: JobRunner.Request) {
        guard let connection = borrowConnection() else {
            carryOut(scheduler.couldNotStart(request))
            return
        }
        idleMemoryReleased = false
        let runner = self.runner
        let events = self.events
        let stop: @Sendable () -> Bool = { [weak self] in self?.stopRequested.load(ordering: .relaxed) ?? true }
        OSThread.start(name: "caretaker/\(request.job.name)", stackSize: 512 * 1024) {
            let outcome = Result { try runner.run(request, on: connection, stopRequested: stop) }
            events.post(.finished(request: request, outcome: outcome, connection: connection))
        }
    }

    // MARK: Completion

    func finished(_ request: JobRunner.Request, outcome: Result<RunOutcome, any Error>, connection: Connection?) {
        pool.giveBack(connection)
        if case .failure(let error) = outcome {
            // The run's bookkeeping failed (the database), with the error as thrown: not relabelled.
            let cause = error is PostgresError ? "database error" : "error"
            logger.error("run aborted: \(cause)", metadata: ["job": "\(request.job.name)", "error": "\(error)"])
        }
        carryOut(
            scheduler.finished(request, outcome, now: clock.now, stopping: stopRequested.load(ordering: .relaxed)))
        notifier.status(statusLine())
    }

    // MARK: Waking

    /// How long the scheduler may sleep: until the next run (or, while the
    /// database is unreachable, the next connection attempt) or watchdog ping;
    /// `nil` (until an event) when nothing is planned.
    func timeUntilNextWake() -> Duration? {
        var wait = timeUntilNextRun()
        if let untilAttempt = pool.timeUntilReconnectAttempt {
            // Nothing can start before the next connection attempt. Normal mode
            // reconnects even with nothing due: its LISTEN connection must be up.
            if let planned = wait {
                wait = max(planned, untilAttempt)
            } else if !lowFootprint {
                wait = untilAttempt
            }
        }
        return Self.earliest(wait, timeUntilWatchdogPing())
    }

    /// How long until the scheduler has something to do (zero when it can start something now).
    func timeUntilNextRun() -> Duration? {
        scheduler.nextWake(now: clock.now, freePlaces: pool.placesFree, canRecord: pool.canRecord)
            .map { clock.duration(until: $0) }
    }

    /// How long until systemd's watchdog wants the next ping; nil when it is off.
    func timeUntilWatchdogPing() -> Duration? {
        notifier.watchdogInterval.map { max(.zero, $0 - (ContinuousClock.now - lastWatchdog)) }
    }

    static func earliest(_ a: Duration?, _ b: Duration?) -> Duration? {
        guard let a else { return b }
        guard let b else { return a }
        return min(a, b)
    }
}
