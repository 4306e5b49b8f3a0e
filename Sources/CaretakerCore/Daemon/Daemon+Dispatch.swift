import Foundation
import Logging
import Postgres

extension Daemon {
    /// Retries of a failed run wait `retryBaseDelay × 2^(attempt−1)`, never past the next slot.
    static let retryBaseDelay: Duration = .seconds(10)
    /// A deadline check for `logout-inactive` runs this long after the deadline, so `<= now()` holds on the server.
    static let deadlineMargin: TimeInterval = 0.05

    var enabledJobs: [JobConfiguration] { configuration.jobs.filter(\.enabled) }

    // MARK: Planning

    /// Sets each job's next slot and queues at most one catch-up run per job.
    func planInitialRuns() {
        let now = clock.now
        for job in enabledJobs {
            var state = JobState()
            state.nextSlot = job.schedule.nextDate(after: now)
            if job.catchUp, let missed = missedSlot(of: job, now: now) {
                state.queued = JobRunner.Request(job: job, trigger: .catchUp, slot: missed)
            }
            states[job.name] = state
        }
        if !lowFootprint { refreshDeadlineCheck() }
    }

    /// The most recent slot at or before `now`, when nobody ran it and the job
    /// existed then (it ran before, or the schema was migrated before that slot).
    private func missedSlot(of job: JobConfiguration, now: Date) -> Date? {
        guard let slot = job.schedule.previousDate(atOrBefore: now), let control else { return nil }
        do {
            let row = try control.query("""
                SELECT EXISTS (SELECT 1 FROM caretaker.job_slots WHERE job = $1 AND slot = to_timestamp($2::float8)) AS taken,
                       EXISTS (SELECT 1 FROM caretaker.job_runs WHERE job = $1) AS ran_before,
                       (SELECT min(applied_at) FROM caretaker.schema_migrations) < to_timestamp($2::float8) AS installed_before
                """, job.name, slot.timeIntervalSince1970).first
            guard row?.bool("taken") == false else { return nil }
            return row?.bool("ran_before") == true || row?.bool("installed_before") == true ? slot : nil
        } catch {
            controlLost(error)
            return nil
        }
    }

    /// How long the scheduler may sleep: until the earliest slot, retry, deadline
    /// check or watchdog ping; `nil` (forever) when nothing is planned.
    func timeUntilNextWake() -> Duration? {
        var earliest: Date?
        for job in enabledJobs {
            guard let state = states[job.name] else { continue }
            if state.queued != nil || (state.notified && !state.running) { return .zero }
            for date in [state.nextSlot, state.retry?.at, state.deadlineCheck].compactMap({ $0 }) {
                earliest = min(earliest ?? date, date)
            }
        }
        var wait = earliest.map { clock.duration(until: $0) }
        if let interval = notifier.watchdogInterval {
            let untilPing = max(.zero, interval - (ContinuousClock.now - lastWatchdog))
            wait = min(wait ?? untilPing, untilPing)
        }
        return wait
    }

    // MARK: Dispatch

    /// Queues what is due and starts queued runs while places are free.
    func dispatchDueRuns() {
        guard hasDueWork() else { return }
        // Decide on a fresh reading of the database clock, not on the estimate alone.
        if !runningOnControl, let connection = ensureControl() {
            do { try clock.refresh(connection) } catch { controlLost(error) }
        }
        let now = clock.now
        for job in enabledJobs {
            queueDue(job, now: now)
        }
        startQueuedRuns()
    }

    private func hasDueWork() -> Bool {
        let now = clock.now
        return enabledJobs.contains { job in
            guard let state = states[job.name] else { return false }
            return state.queued != nil || state.notified
                || [state.nextSlot, state.retry?.at, state.deadlineCheck].contains { $0.map { $0 <= now } ?? false }
        }
    }

    private func queueDue(_ job: JobConfiguration, now: Date) {
        var state = states[job.name, default: JobState()]
        defer { states[job.name] = state }
        if let slot = state.nextSlot, slot <= now {
            // However many slots passed (a suspended host), only the latest runs: never a flood.
            let latest = job.schedule.previousDate(atOrBefore: now) ?? slot
            state.nextSlot = job.schedule.nextDate(after: latest)
            state.deadlineCheck = nil
            state.retry = nil
            if state.running {
                recordSkippedSlot(job, slot: latest)
            } else {
                state.queued = JobRunner.Request(job: job, trigger: .schedule, slot: latest)
            }
        }
        guard !state.running, state.queued == nil else { return }
        if let retry = state.retry, retry.at <= now {
            state.retry = nil
            state.queued = JobRunner.Request(job: job, trigger: .retry, attempt: retry.attempt)
        } else if state.notified {
            state.notified = false
            state.queued = JobRunner.Request(job: job, trigger: .notify)
        } else if let deadline = state.deadlineCheck, deadline <= now {
            state.deadlineCheck = nil
            state.queued = JobRunner.Request(job: job, trigger: .schedule)
        }
    }

    /// A due slot whose job is still running here: claim it and record it `skipped`
    /// (or find that another instance already took it). Low-footprint mode has lent
    /// its only connection to the run, so the slot simply passes.
    private func recordSkippedSlot(_ job: JobConfiguration, slot: Date) {
        guard !runningOnControl, let connection = ensureControl() else { return }
        do {
            _ = try runner.run(JobRunner.Request(job: job, trigger: .schedule, slot: slot), on: connection)
        } catch {
            controlLost(error)
        }
    }

    private func startQueuedRuns() {
        for job in enabledJobs where runningCount < configuration.worker.maxConcurrentJobs {
            guard var state = states[job.name], let request = state.queued, !state.running else { continue }
            guard let connection = borrowConnection() else { return }
            state.queued = nil
            state.running = true
            states[job.name] = state
            start(request, on: connection)
        }
    }

    /// Runs `request` on a thread of its own; the result comes back as an event.
    private func start(_ request: JobRunner.Request, on connection: Connection) {
        runningCount += 1
        let key = ObjectIdentifier(connection)
        busyConnections.withLock { $0[key] = connection }
        let runner = self.runner
        let events = self.events
        let stop: @Sendable () -> Bool = { [weak self] in self?.stopRequested.load(ordering: .relaxed) ?? true }
        let thread = Thread {
            let outcome: Result<JobRunner.Outcome, PostgresError>
            do {
                outcome = .success(try runner.run(request, on: connection, stopRequested: stop))
            } catch let error as PostgresError {
                outcome = .failure(error)
            } catch {
                outcome = .failure(PostgresError(kind: .query, message: "\(error)"))
            }
            events.post(.finished(request: request, outcome: outcome, connection: connection))
        }
        thread.name = "caretaker/\(request.job.name)"
        thread.stackSize = 512 * 1024
        thread.start()
    }

    // MARK: Completion

    func finished(_ request: JobRunner.Request, outcome: Result<JobRunner.Outcome, PostgresError>, connection: Connection?) {
        runningCount -= 1
        if let connection { busyConnections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(connection)) } }
        let name = request.job.name
        states[name, default: JobState()].running = false
        switch outcome {
        case .success(.finished(_, .failed, _, _)):
            planRetry(after: request)
            giveBack(connection)
        case .success:
            giveBack(connection)
        case .failure(let error):
            logger.error("run aborted: database error", metadata: ["job": "\(name)", "error": "\(error)"])
            if lowFootprint { control = nil }
            planRetry(after: request)
        }
        if name == BuiltInJob.logoutInactive.rawValue { refreshDeadlineCheck() }
        notifier.status(statusLine())
    }

    private func planRetry(after request: JobRunner.Request) {
        guard request.trigger != .manual, request.attempt <= request.job.maxRetries,
              !stopRequested.load(ordering: .relaxed) else { return }
        let delay = Self.retryBaseDelay * (1 << min(request.attempt - 1, 16))
        let at = clock.now.addingTimeInterval(delay.seconds)
        var state = states[request.job.name, default: JobState()]
        if let next = state.nextSlot, at >= next { return }
        state.retry = (at, request.attempt + 1)
        states[request.job.name] = state
        logger.info("retry planned", metadata: ["job": "\(request.job.name)", "attempt": "\(request.attempt + 1)",
                                                "retry_in_ms": "\(delay.microseconds / 1000)"])
    }

    /// `logout-inactive`: look again when the next active session reaches its idle deadline.
    func refreshDeadlineCheck() {
        let name = BuiltInJob.logoutInactive.rawValue
        guard let job = configuration.job(named: name), job.enabled,
              case .logoutInactive(let settings) = job.settings,
              !runningOnControl, let connection = ensureControl() else { return }
        do {
            let wait = try LogoutInactive.secondsUntilNextDeadline(
                connection, schema: quoteIdentifier(configuration.database.appSchema), idleTimeout: settings.idleTimeout)
            try clock.refresh(connection)
            var state = states[name, default: JobState()]
            if let wait {
                let deadline = clock.now.addingTimeInterval(max(wait, 0) + Self.deadlineMargin)
                state.deadlineCheck = (state.nextSlot.map { deadline < $0 } ?? true) ? deadline : nil
            } else {
                state.deadlineCheck = nil
            }
            states[name] = state
        } catch {
            controlLost(error)
        }
    }
}
