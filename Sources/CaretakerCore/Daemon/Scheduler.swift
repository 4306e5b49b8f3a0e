#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The daemon's scheduling policy, apart from all I/O: which run to start
/// (with its trigger, slot and attempt), which slot to record `skipped` and why,
/// when to ask a job's deadline query, and when to wake next.
///
/// Every method takes the database clock's `now` from the caller; nothing here
/// reads a clock, touches the database or starts a thread. The daemon carries out
/// the actions and reports back what happened (`finished`, `deadlineAnswered`, …).
/// It knows no job names: what can wake a job besides its schedule comes from the
/// job's `JobWakeups`.
struct Scheduler {
    /// Retries of a failed run wait `retryBaseDelay × 2^(attempt−1)`, never past the next slot.
    static let retryBaseDelay: Duration = .seconds(10)
    /// A deadline check looks this long after the deadline, so `<= now()` holds on the server.
    static let deadlineMargin: TimeInterval = 0.05

    /// What the daemon is to do now.
    enum Action: Sendable {
        /// Run this request on a free connection.
        case start(JobRunner.Request)
        /// Claim this slot and record it `skipped` (report `skipNotDue` when the database says it is not due yet).
        case recordSkipped(PendingSkip)
    }

    /// A slot to record `skipped`, and why.
    struct PendingSkip: Sendable {
        var job: JobConfiguration
        var slot: Date
        var reason: JobRunner.SkipReason
    }

    /// The slots a job's schedule had while no worker ran it (start-up after downtime).
    struct MissedSlots: Sendable, Equatable {
        var count: Int
        var first: Date
        var last: Date
    }

    /// How a run ended, as far as the policy cares.
    enum RunEnd: Sendable {
        case succeeded
        /// Failed, or the database failed under it: retried under `max_retries`.
        case failed
        /// The slot was not due yet on the database clock: nothing was recorded.
        case slotNotDue
        /// Interrupted, skipped, already claimed elsewhere, busy: nothing to retry.
        case other
    }

    private(set) var jobs: [JobConfiguration]
    private(set) var states: [String: JobState] = [:]
    private(set) var pendingSkips: [PendingSkip] = []
    private(set) var runningCount = 0
    var maxConcurrentJobs: Int
    /// Deadline queries are asked (normal mode; low-footprint mode sleeps until the next slot).
    let deadlineChecks: Bool

    /// Plans each enabled job's next slot after `now`; a job with a deadline query asks it at once.
    init(jobs: [JobConfiguration], maxConcurrentJobs: Int, deadlineChecks: Bool, now: Date) {
        self.jobs = jobs.filter(\.enabled)
        self.maxConcurrentJobs = maxConcurrentJobs
        self.deadlineChecks = deadlineChecks
        for job in self.jobs {
            states[job.name] = JobState(nextSlot: job.schedule.nextDate(after: now))
            if asksDeadlines(job) { states[job.name]?.deadlineCheck = now }
        }
    }

    // MARK: Start-up

    /// After downtime: at most one catch-up run (for the most recent slot, when
    /// `catch_up` is on and no worker looked after that slot), and the other slots
    /// since `lastLookedAfter` (the job's latest claimed slot or run) as one summary
    /// to record. A job that never ran has nothing to summarise: its catch-up counts
    /// from `installedAt`, when caretaker's schema was installed.
    mutating func catchUp(_ job: JobConfiguration, lastLookedAfter: Date?, installedAt: Date, now: Date) -> MissedSlots?
    {
        guard let latest = job.schedule.previousDate(atOrBefore: now), latest > (lastLookedAfter ?? installedAt) else {
            return nil
        }
        if job.catchUp {
            states[job.name]?.queued = JobRunner.Request(job: job, trigger: .catchUp, slot: latest)
        }
        guard let lastLookedAfter else { return nil }
        // The catch-up run's own slot is not missed.
        let through = job.catchUp ? latest.addingTimeInterval(-0.001) : latest
        return Self.slots(of: job.schedule, after: lastLookedAfter, through: through)
    }

    /// Counts the slots in `(after, through]`; nil when there are none.
    static func slots(of schedule: Schedule, after start: Date, through end: Date) -> MissedSlots? {
        guard let first = schedule.nextDate(after: start), first <= end,
            let last = schedule.previousDate(atOrBefore: end)
        else { return nil }
        if let interval = schedule.fixedInterval {
            let count = Int((last.timeIntervalSince(first) / interval.seconds).rounded()) + 1
            return MissedSlots(count: count, first: first, last: last)
        }
        var count = 1
        var slot = first
        while let next = schedule.nextDate(after: slot), next <= last {
            count += 1
            slot = next
        }
        return MissedSlots(count: count, first: first, last: last)
    }

    // MARK: Wake-ups

    /// A NOTIFY on `channel` arrived: the jobs that listen to it run soon.
    mutating func notified(channel: String) {
        for job in jobs where job.wakeups.notifyChannel == channel {
            states[job.name]?.notified = true
        }
    }

    /// The LISTEN connection was re-established: NOTIFYs may have been missed, so every listening job runs once.
    mutating func listenReconnected() {
        for job in jobs where job.wakeups.notifyChannel != nil {
            states[job.name]?.notified = true
        }
    }

    /// The channels to LISTEN on for the enabled ones of `jobs`.
    static func notifyChannels(of jobs: [JobConfiguration]) -> [String] {
        Array(Set(jobs.filter(\.enabled).compactMap(\.wakeups.notifyChannel))).sorted()
    }

    /// The jobs whose deadline query is to be asked now (`deadlineAnswered` takes the answer).
    func deadlinesToAsk(now: Date) -> [JobConfiguration] {
        jobs.filter { job in
            guard let state = states[job.name], !state.running, state.queued == nil,
                let check = state.deadlineCheck
            else { return false }
            return check <= now
        }
    }

    /// The answer of a job's deadline query (asked with the start of its last run).
    ///
    /// Work still due that was due when the last run started means that run could not
    /// do it (its rows are locked, or it failed): that counts as a failed attempt and
    /// waits for the retry rules, never for an immediate rerun. Work that came due
    /// after that start runs now, as a `deadline` run that counts as the next attempt
    /// (none once `max_retries` are used up before the next slot); later work is
    /// looked at when it comes due.
    mutating func deadlineAnswered(_ job: JobConfiguration, _ answer: DeadlineAnswer, now: Date) {
        guard var state = states[job.name] else { return }
        let lastRun = state.lastRun
        state.deadlineCheck = nil
        state.lastRun = nil
        if let lastRun {
            if answer.stuck {
                state.failedAttempts = max(state.failedAttempts, lastRun.request.attempt)
            } else if !lastRun.failed {
                state.failedAttempts = 0
            }
        }
        if let wait = answer.secondsUntilNext, wait <= 0 {
            if !state.running, state.queued == nil, state.failedAttempts <= job.maxRetries {
                state.queued = JobRunner.Request(job: job, trigger: .deadline, attempt: state.failedAttempts + 1)
            }
        } else if let lookahead = job.wakeups.deadlineLookahead?.seconds {
            // The next check comes at the deadline, and at the latest one lookahead from
            // now (work that appears later cannot come due before then). A slot that
            // comes first covers it.
            let seconds = min(answer.secondsUntilNext.map { $0 + Self.deadlineMargin } ?? lookahead, lookahead)
            let check = now.addingTimeInterval(seconds)
            state.deadlineCheck = (state.nextSlot.map { check < $0 } ?? true) ? check : nil
        }
        states[job.name] = state
        // A failed run has its retry planned already; one that succeeded yet left work due counts as failed.
        if let lastRun, answer.stuck, !lastRun.failed { planRetry(after: lastRun.request, now: now) }
    }

    /// When `job`'s last run here started: its deadline query's `since`.
    func lastStart(of job: JobConfiguration) -> Date? {
        states[job.name]?.lastStart
    }

    private func asksDeadlines(_ job: JobConfiguration) -> Bool {
        deadlineChecks && job.wakeups.nextDeadline != nil
    }

    // MARK: Dispatch

    /// Moves due slots on, queues due retries, NOTIFY and deadline runs, and returns
    /// what to do: slots to record `skipped` (only when `canRecord`: low-footprint
    /// mode's one connection may be lent to a run) and runs to start, at most
    /// `freePlaces` of them (nothing new when `stopping`).
    mutating func dispatch(now: Date, freePlaces: Int, canRecord: Bool, stopping: Bool = false) -> [Action] {
        for job in jobs { queueDue(job, now: now) }
        var actions: [Action] = []
        if canRecord {
            let due = pendingSkips.filter { $0.slot <= now }
            pendingSkips.removeAll { $0.slot <= now }
            actions += due.map(Action.recordSkipped)
        }
        guard !stopping else { return actions }
        var places = min(freePlaces, maxConcurrentJobs - runningCount)
        for job in jobs where places > 0 {
            guard var state = states[job.name], let request = state.queued, !state.running else { continue }
            state.start()
            state.lastStart = now
            states[job.name] = state
            runningCount += 1
            places -= 1
            actions.append(.start(request))
        }
        return actions
    }

    /// A started run could not get a connection: it waits, queued, for the next dispatch.
    mutating func couldNotStart(_ request: JobRunner.Request) {
        runningCount -= 1
        states[request.job.name]?.running = false
        states[request.job.name]?.queued = request
    }

    /// A skipped slot that the database says is not due yet: it waits until it is.
    mutating func skipNotDue(_ skip: PendingSkip) {
        pendingSkips.append(skip)
    }

    /// The job's previous run had ended (on the database clock) before this slot came,
    /// though its end had not reached the scheduler yet: the slot runs after all, once
    /// the run's end is handled. When another slot already waits to run, the newer one
    /// replaces it as usual, and this one is recorded `skipped` for want of a place.
    mutating func previousRunEnded(before skip: PendingSkip) {
        guard var state = states[skip.job.name] else { return }
        queueSlot(skip.slot, of: skip.job, in: &state)
        states[skip.job.name] = state
    }

    /// Queues `slot` of `job` to run. A scheduled slot already waiting for a place
    /// is replaced by the newer of the two, and the older is recorded `skipped`
    /// (no free place): one run per slot, every slot on record.
    private mutating func queueSlot(_ slot: Date, of job: JobConfiguration, in state: inout JobState) {
        var newest = slot
        if let waiting = state.queued?.slot {
            pendingSkips.append(PendingSkip(job: job, slot: min(waiting, slot), reason: .noFreePlace))
            newest = max(waiting, slot)
        }
        state.queued = JobRunner.Request(job: job, trigger: .schedule, slot: newest)
        state.failedAttempts = 0
    }

    /// The database failed while recording these skipped slots: they wait for the next dispatch.
    mutating func skipsNotRecorded(_ skips: [PendingSkip]) {
        pendingSkips.append(contentsOf: skips)
    }

    private mutating func queueDue(_ job: JobConfiguration, now: Date) {
        guard var state = states[job.name] else { return }
        defer { states[job.name] = state }
        if let slot = state.nextSlot, slot <= now {
            // However many slots passed (a suspended host), only the latest runs: never a flood.
            let latest = job.schedule.previousDate(atOrBefore: now) ?? slot
            state.nextSlot = job.schedule.nextDate(after: latest)
            state.deadlineCheck = nil
            state.retry = nil
            if state.running {
                pendingSkips.append(PendingSkip(job: job, slot: latest, reason: .previousRunStillGoing))
                return
            }
            // A slot still waiting never found a free place: this newer one replaces it, on record.
            queueSlot(latest, of: job, in: &state)
        }
        guard !state.running, state.queued == nil else { return }
        if let retry = state.retry, retry.at <= now {
            state.retry = nil
            state.queued = JobRunner.Request(job: job, trigger: .retry, attempt: retry.attempt)
        } else if state.notified {
            state.notified = false
            state.queued = JobRunner.Request(job: job, trigger: .notify)
        }
    }

    // MARK: Completion

    /// A run ended: a failed one is retried under the retry rules; a job with a
    /// deadline query asks it again (`deadlinesToAsk`) before anything else of it starts.
    mutating func finished(_ request: JobRunner.Request, _ end: RunEnd, now: Date, stopping: Bool = false) {
        let name = request.job.name
        runningCount -= 1
        guard var state = states[name] else { return }
        state.running = false
        if case .slotNotDue = end, let slot = request.slot {
            // The clock estimate ran a little ahead: ask again when the database agrees.
            state.nextSlot = min(state.nextSlot ?? slot, slot)
        }
        if asksDeadlines(request.job) {
            state.deadlineCheck = now
            state.lastRun = (request, end == .failed)
        }
        states[name] = state
        if end == .failed, request.trigger != .manual {
            states[name]?.failedAttempts = max(state.failedAttempts, request.attempt)
        }
        if end == .failed, !stopping { planRetry(after: request, now: now) }
    }

    /// Plans attempt `n + 1` after attempt `n` of `request` did not get its work done:
    /// `retryBaseDelay × 2^(n−1)` later, when that is before the next slot and `n ≤ max_retries`.
    private mutating func planRetry(after request: JobRunner.Request, now: Date) {
        guard request.trigger != .manual, request.attempt <= request.job.maxRetries,
            var state = states[request.job.name]
        else { return }
        let at = now.addingTimeInterval(Self.retryDelay(afterAttempt: request.attempt).seconds)
        if let next = state.nextSlot, at >= next { return }
        state.retry = (at, request.attempt + 1)
        states[request.job.name] = state
    }

    static func retryDelay(afterAttempt attempt: Int) -> Duration {
        retryBaseDelay * (1 << min(attempt - 1, 16))
    }

    // MARK: Reload

    /// After a reload: a job whose schedule changed (or that was just enabled) gets
    /// its next slot under the new schedule; an unchanged one keeps its slot, which
    /// may be due right now; a disabled one loses what was planned for it (a run in
    /// progress still ends normally).
    mutating func reload(jobs newJobs: [JobConfiguration], maxConcurrentJobs: Int, now: Date) {
        let previous = Dictionary(jobs.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        self.maxConcurrentJobs = maxConcurrentJobs
        jobs = newJobs.filter(\.enabled)
        for job in newJobs {
            var state = states[job.name] ?? JobState()
            if !job.enabled {
                state = JobState(running: state.running)
            } else if previous[job.name]?.schedule != job.schedule || state.nextSlot == nil {
                state.nextSlot = job.schedule.nextDate(after: now)
            }
            if job.enabled, asksDeadlines(job), state.deadlineCheck == nil, !state.running { state.deadlineCheck = now }
            if !job.enabled || !asksDeadlines(job) { state.deadlineCheck = nil }
            states[job.name] = state
        }
        let enabled = Set(jobs.map(\.name))
        pendingSkips = pendingSkips.compactMap { skip in
            guard enabled.contains(skip.job.name) else { return nil }
            return skip
        }
        // Queued requests carry the job's configuration: take the new one.
        for job in jobs {
            states[job.name]?.queued?.job = job
        }
    }

    // MARK: Waking

    /// When the scheduler has something to do next: `now` when a queued or notified
    /// run could start (given a free place) or a deadline query is due, else the
    /// earliest planned time; nil when nothing is planned. A job that is running
    /// counts only with its next slot (a retry, NOTIFY or deadline check waits for
    /// the run to end, whose event wakes the scheduler).
    func nextWake(now: Date, freePlaces: Int, canRecord: Bool) -> Date? {
        var earliest: Date? = canRecord ? pendingSkips.map(\.slot).min() : nil
        let canStart = min(freePlaces, maxConcurrentJobs - runningCount) > 0
        for job in jobs {
            guard let state = states[job.name] else { continue }
            if canStart && state.canStart { return now }
            for date in state.plannedTimes.compactMap({ $0 }) {
                earliest = min(earliest ?? date, date)
            }
        }
        return earliest
    }

    /// True when `dispatch` or a deadline query has something to do at `now`.
    func hasDueWork(now: Date, freePlaces: Int, canRecord: Bool) -> Bool {
        nextWake(now: now, freePlaces: freePlaces, canRecord: canRecord).map { $0 <= now } ?? false
    }
}
