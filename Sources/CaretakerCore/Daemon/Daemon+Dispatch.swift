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
        guard let control = pool.ensureControl() else { return }
        for job in scheduler.jobs {
            do {
                let (lastLookedAfter, installedAt) = try history(of: job, on: control)
                guard
                    let missed = scheduler.catchUp(
                        job, lastLookedAfter: lastLookedAfter, installedAt: installedAt,
                        now: clock.now)
                else { continue }
                if try runner.recordMissedSlots(
                    job: job, first: missed.first, last: missed.last, count: missed.count,
                    on: control)
                {
                    logger.warning(
                        "slots missed while no worker ran",
                        metadata: [
                            "job": "\(job.name)", "missed_slots": "\(missed.count)",
                            "first_missed": "\(missed.first)", "last_missed": "\(missed.last)",
                        ])
                }
            } catch {
                return pool.controlFailed(error)
            }
        }
    }

    /// Until when some worker looked after `job` (its latest claimed slot, or its
    /// latest run's slot or start; nil when it never ran), and when caretaker's schema was installed.
    private func history(of job: JobConfiguration, on connection: Connection) throws -> (Date?, Date) {
        let installed = try connection.query(
            """
            SELECT extract(epoch FROM (SELECT min(applied_at) FROM caretaker.schema_migrations))::float8 AS installed
            """
        ).first?.double("installed")
        return (try RunStore(connection).lastLookedAfter(job: job.name), Date(timeIntervalSince1970: installed ?? 0))
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
            _ = scheduler.dispatch(now: clock.now, freePlaces: 0, canRecord: false)
            return
        }
        guard let control = pool.ensureControl() else { return }
        // Decide on a fresh reading of the database clock, not on the estimate alone.
        do { try clock.refresh(control) } catch { return pool.controlFailed(error) }
        guard askDeadlines(on: control) else { return }
        carryOut(
            scheduler.dispatch(
                now: clock.now, freePlaces: pool.placesFree, canRecord: true,
                stopping: stopRequested.load(ordering: .relaxed)), control: control)
    }

    /// Asks the deadline queries that are due; false when the database failed.
    private func askDeadlines(on control: Connection) -> Bool {
        let schema = quoteIdentifier(configuration.database.appSchema)
        for job in scheduler.deadlinesToAsk(now: clock.now) {
            guard let query = job.wakeups.nextDeadline else { continue }
            do {
                let answer = try query(control, schema, scheduler.lastStart(of: job))
                let retryBefore = scheduler.states[job.name]?.retry?.attempt
                scheduler.deadlineAnswered(job, answer, now: clock.now)
                logRetryIfPlanned(job, before: retryBefore, reason: "its work is still due after the run")
            } catch {
                pool.controlFailed(error)
                return false
            }
        }
        return true
    }

    /// Records skipped slots on the scheduler's connection and starts runs.
    func carryOut(_ actions: [Scheduler.Action], control: Connection) {
        var skips: [Scheduler.PendingSkip] = actions.compactMap {
            if case .recordSkipped(let skip) = $0 { skip } else { nil }
        }
        while let skip = skips.first {
            do {
                _ = try runner.recordSkippedSlot(job: skip.job, slot: skip.slot, reason: skip.reason, on: control)
            } catch is JobRunner.SlotNotDue {
                scheduler.skipNotDue(skip)
            } catch is JobRunner.PreviousRunEnded {
                scheduler.previousRunEnded(before: skip)
            } catch {
                scheduler.skipsNotRecorded(skips)
                pool.controlFailed(error)
                break
            }
            skips.removeFirst()
        }
        for case .start(let request) in actions {
            start(request)
        }
    }

    /// Runs `request` on a thread of its own; the result comes back as an event.
    private func start(_ request: JobRunner.Request) {
        guard let connection = pool.borrow() else { return scheduler.couldNotStart(request) }
        idleMemoryReleased = false
        let runner = self.runner
        let events = self.events
        let stop: @Sendable () -> Bool = { [weak self] in self?.stopRequested.load(ordering: .relaxed) ?? true }
        OSThread.start(name: "caretaker/\(request.job.name)", stackSize: 512 * 1024) {
            let result: RunResult
            do {
                result = .outcome(try runner.run(request, on: connection, stopRequested: stop))
            } catch is JobRunner.SlotNotDue {
                result = .slotNotDue
            } catch {
                result = .aborted(error)
            }
            events.post(.finished(request: request, result: result, connection: connection))
        }
    }

    // MARK: Completion

    func finished(_ request: JobRunner.Request, result: RunResult, connection: Connection?) {
        pool.giveBack(connection)
        let end: Scheduler.RunEnd
        switch result {
        case .slotNotDue: end = .slotNotDue
        case .outcome(.finished(_, .failed, _, _)): end = .failed
        case .outcome(.finished(_, .succeeded, _, _)): end = .succeeded
        case .outcome: end = .other
        case .aborted(let error):
            let cause = error is PostgresError ? "database error" : "error"
            logger.error("run aborted: \(cause)", metadata: ["job": "\(request.job.name)", "error": "\(error)"])
            end = .failed
        }
        let retryBefore = scheduler.states[request.job.name]?.retry?.attempt
        scheduler.finished(request, end, now: clock.now, stopping: stopRequested.load(ordering: .relaxed))
        logRetryIfPlanned(request.job, before: retryBefore, reason: "the run failed")
        notifier.status(statusLine())
    }

    private func logRetryIfPlanned(_ job: JobConfiguration, before: Int?, reason: String) {
        guard let retry = scheduler.states[job.name]?.retry, retry.attempt != before else { return }
        logger.info(
            "retry planned",
            metadata: [
                "job": "\(job.name)", "attempt": "\(retry.attempt)", "reason": "\(reason)",
                "retry_in_ms": "\(Int64(retry.at.timeIntervalSince(clock.now) * 1000))",
            ])
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
