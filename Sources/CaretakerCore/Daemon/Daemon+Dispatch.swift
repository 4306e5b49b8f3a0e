#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Postgres

extension Daemon {
    /// Retries of a failed run wait `retryBaseDelay × 2^(attempt−1)`, never past the next slot.
    static let retryBaseDelay: Duration = .seconds(10)
    /// A deadline check for `logout-inactive` looks this long after the deadline, so `<= now()` holds on the server.
    static let deadlineMargin: TimeInterval = 0.05

    var enabledJobs: [JobConfiguration] { configuration.jobs.filter(\.enabled) }

    /// True when another run may start now under `max_concurrent_jobs`.
    var hasFreePlace: Bool { runningCount < configuration.worker.maxConcurrentJobs && !controlLent }

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
        refreshDeadlineCheck()
    }

    /// After a reload: a job whose schedule changed (or that was just enabled) gets
    /// its next slot under the new schedule; an unchanged one keeps its slot, which
    /// may be due right now; a disabled one loses what was planned for it.
    func replanAfterReload(previous: Configuration) {
        let now = clock.now
        for job in configuration.jobs {
            var state = states[job.name, default: JobState()]
            let before = previous.job(named: job.name)
            if !job.enabled {
                state = JobState(running: state.running)
            } else if before?.enabled != true || before?.schedule != job.schedule || state.nextSlot == nil {
                state.nextSlot = job.schedule.nextDate(after: now)
            }
            states[job.name] = state
        }
        refreshDeadlineCheck()
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

    /// How long the scheduler may sleep: until the next run (or, while the
    /// database is unreachable, the next connection attempt) or watchdog ping;
    /// `nil` (until an event) when nothing is planned.
    func timeUntilNextWake() -> Duration? {
        var wait = timeUntilNextRun()
        if let untilAttempt = timeUntilReconnectAttempt() {
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

    /// While the database is unreachable, how long until the next connection attempt.
    func timeUntilReconnectAttempt() -> Duration? {
        reconnect.map { max(.zero, ContinuousClock.now.duration(to: $0.at)) }
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

    /// How long until the scheduler has something to start or record: zero when
    /// a queued or notified run can start now, else the earliest planned time.
    /// A job that is running counts only with its next slot (a retry, NOTIFY or
    /// deadline check waits for the run to end, whose event wakes the scheduler).
    func timeUntilNextRun() -> Duration? {
        var earliest: Date? = controlLent ? nil : pendingSkips.map(\.slot).min()
        for job in enabledJobs {
            guard let state = states[job.name] else { continue }
            if hasFreePlace && state.canStart { return .zero }
            for date in state.plannedTimes.compactMap({ $0 }) {
                earliest = min(earliest ?? date, date)
            }
        }
        return earliest.map { clock.duration(until: $0) }
    }

    // MARK: Dispatch

    /// Queues what is due and starts queued runs while places are free.
    func dispatchDueRuns() {
        guard hasDueWork() else { return }
        guard !controlLent else {
            // Low-footprint mode: the only connection is running a job, so nothing
            // can start; still move the slots on, so that a slot of the running job
            // is remembered as skipped (recorded when the connection is back).
            queueDueJobs(now: clock.now)
            return
        }
        guard let connection = ensureControl() else { return }
        // Decide on a fresh reading of the database clock, not on the estimate alone.
        do { try clock.refresh(connection) } catch { return controlLost(error) }
        recordPendingSkips(on: connection)
        let now = clock.now
        queueDueJobs(now: now)
        checkSessionDeadlines(now: now)
        startQueuedRuns()
    }

    private func hasDueWork() -> Bool {
        let now = clock.now
        if !controlLent, pendingSkips.contains(where: { $0.slot <= now }) { return true }
        return enabledJobs.contains { job in
            guard let state = states[job.name] else { return false }
            return (hasFreePlace && state.canStart) || state.plannedTimes.contains { $0.map { $0 <= now } ?? false }
        }
    }

    private func queueDueJobs(now: Date) {
        for job in enabledJobs {
            queueDue(job, now: now)
        }
    }

    private func queueDue(_ job: JobConfiguration, now: Date) {
        var state = states[job.name, default: JobState()]
        if let slot = state.nextSlot, slot <= now {
            // However many slots passed (a suspended host), only the latest runs: never a flood.
            let latest = job.schedule.previousDate(atOrBefore: now) ?? slot
            state.nextSlot = job.schedule.nextDate(after: latest)
            state.deadlineCheck = nil
            state.retry = nil
            if state.running {
                states[job.name] = state
                recordSkippedSlot(job, slot: latest, reason: .previousRunStillGoing)
                return
            }
            if let waiting = state.queued?.slot {
                // Its run never found a free place: the newer slot replaces it, on record.
                recordSkippedSlot(job, slot: waiting, reason: .noFreePlace)
            }
            state.queued = JobRunner.Request(job: job, trigger: .schedule, slot: latest)
        }
        defer { states[job.name] = state }
        guard !state.running, state.queued == nil else { return }
        if let retry = state.retry, retry.at <= now {
            state.retry = nil
            state.queued = JobRunner.Request(job: job, trigger: .retry, attempt: retry.attempt)
        } else if state.notified {
            state.notified = false
            state.queued = JobRunner.Request(job: job, trigger: .notify)
        }
    }

    /// A due slot whose job is still running here: claim it and record it
    /// `skipped` (or find that another instance already took it). Without a
    /// free connection (low-footprint mode lent it to the run) the slot waits in
    /// `pendingSkips`.
    private func recordSkippedSlot(_ job: JobConfiguration, slot: Date, reason: JobRunner.SkipReason) {
        pendingSkips.append((job, slot, reason))
        if !controlLent, let connection = control { recordPendingSkips(on: connection) }
    }

    /// Records the pending skipped slots that are due on the database clock; the rest wait.
    func recordPendingSkips(on connection: Connection) {
        var remaining = pendingSkips[...]
        var notDue: [PendingSkip] = []
        while let skip = remaining.first {
            do {
                _ = try runner.recordSkippedSlot(job: skip.job, slot: skip.slot, reason: skip.reason, on: connection)
            } catch is JobRunner.SlotNotDue {
                notDue.append(skip)
            } catch {
                pendingSkips = notDue + remaining
                return controlLost(error)
            }
            remaining.removeFirst()
        }
        pendingSkips = notDue
    }

    /// Starts queued runs while places are free; nothing new once SIGTERM arrived
    /// (the signal thread sets the flag at once, possibly in the middle of a dispatch).
    private func startQueuedRuns() {
        for job in enabledJobs where hasFreePlace && !stopRequested.load(ordering: .relaxed) {
            guard var state = states[job.name], let request = state.queued, !state.running else { continue }
            guard let connection = borrowConnection() else { return }
            state.start()
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
        OSThread.start(name: "caretaker/\(request.job.name)", stackSize: 512 * 1024) {
            let result: RunResult
            do {
                result = .outcome(try runner.run(request, on: connection, stopRequested: stop))
            } catch is JobRunner.SlotNotDue {
                result = .slotNotDue
            } catch let error as PostgresError {
                result = .databaseError(error)
            } catch {
                result = .databaseError(PostgresError(kind: .query, message: "\(error)"))
            }
            events.post(.finished(request: request, result: result, connection: connection))
        }
    }

    // MARK: Completion

    func finished(_ request: JobRunner.Request, result: RunResult, connection: Connection?) {
        runningCount -= 1
        if let connection { busyConnections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(connection)) } }
        let name = request.job.name
        states[name, default: JobState()].running = false
        giveBack(connection)
        switch result {
        case .slotNotDue:
            // The clock estimate ran a little ahead: ask again when the database agrees.
            if let slot = request.slot, var state = states[name] {
                state.nextSlot = min(state.nextSlot ?? slot, slot)
                states[name] = state
            }
        case .outcome(.finished(_, .failed, _, _)):
            planRetry(after: request)
        case .outcome:
            break
        case .databaseError(let error):
            logger.error("run aborted: database error", metadata: ["job": "\(name)", "error": "\(error)"])
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

    // MARK: logout-inactive deadlines

    /// `logout-inactive` and its settings, when it is enabled and deadline checks apply.
    ///
    /// Normal mode only: low-footprint mode sleeps until the next slot (SPEC §5),
    /// so there idle sessions are revoked on the job's schedule.
    private var deadlineJob: (JobConfiguration, LogoutInactiveSettings)? {
        guard !lowFootprint, let job = configuration.job(named: BuiltInJob.logoutInactive.rawValue), job.enabled,
              case .logoutInactive(let settings) = job.settings else { return nil }
        return (job, settings)
    }

    /// At a planned deadline check, asks the database whether a session's idle
    /// deadline has passed: if so `logout-inactive` runs now, else the next check is planned.
    private func checkSessionDeadlines(now: Date) {
        guard let (job, _) = deadlineJob, let state = states[job.name], !state.running, state.queued == nil,
              let check = state.deadlineCheck, check <= now else { return }
        guard let wait = secondsUntilNextDeadline() else { return }
        if let wait, wait <= 0 {
            states[job.name]?.deadlineCheck = nil
            states[job.name]?.queued = JobRunner.Request(job: job, trigger: .schedule)
        } else {
            planDeadlineCheck(wait: wait)
        }
    }

    /// `logout-inactive`: plans the next look at the sessions, so that every idle
    /// session is revoked within moments of its deadline rather than at the next slot.
    func refreshDeadlineCheck() {
        guard deadlineJob != nil, let wait = secondsUntilNextDeadline() else { return }
        planDeadlineCheck(wait: wait)
    }

    /// Seconds until the earliest active session's deadline (`.some(nil)`: no
    /// active session); nil when the database could not be asked.
    private func secondsUntilNextDeadline() -> Double?? {
        guard let (_, settings) = deadlineJob, !controlLent, let connection = control else { return nil }
        do {
            return .some(try LogoutInactive.secondsUntilNextDeadline(
                connection, schema: quoteIdentifier(configuration.database.appSchema), idleTimeout: settings.idleTimeout))
        } catch {
            controlLost(error)
            return nil
        }
    }

    /// The next check comes at the earliest deadline, and at the latest one
    /// `idle_timeout` from now: a session that starts later cannot reach its
    /// deadline before then, so none is missed. A slot that comes first covers it.
    private func planDeadlineCheck(wait: Double?) {
        guard let (job, settings) = deadlineJob else { return }
        let lookahead = settings.idleTimeout.seconds
        let seconds = min(wait.map { max($0, 0) + Self.deadlineMargin } ?? lookahead, lookahead)
        let check = clock.now.addingTimeInterval(seconds)
        var state = states[job.name, default: JobState()]
        state.deadlineCheck = (state.nextSlot.map { check < $0 } ?? true) ? check : nil
        states[job.name] = state
    }
}
