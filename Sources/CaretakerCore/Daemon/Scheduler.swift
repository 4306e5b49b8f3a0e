import CaretakerConfig
import CaretakerJobs
import CaretakerSchedule

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The daemon's scheduling policy, apart from all I/O: which run to start
/// (with its trigger, slot and attempt), which slot to record `skipped` and why,
/// when to ask a job's deadline query, and when to wake next.
///
/// Each job is in one `JobState`, which only the event methods here change; every
/// event returns the `Action`s to carry out, and the daemon reports back what
/// happened as further events (`finished`, `deadlineAnswered`, `skipRecorded`, …),
/// never reading the state itself. Every method takes the database clock's `now`
/// from the caller; nothing here reads a clock, touches the database or starts a
/// thread. It knows no job names: what can wake a job besides its schedule comes
/// from the job's `JobWakeups`.
struct Scheduler {
    /// Retries of a failed run wait `retryBaseDelay × 2^(attempt−1)`, never past the next slot.
    static let retryBaseDelay: Duration = .seconds(10)
    /// A deadline check looks this long after the deadline, so `<= now()` holds on the server.
    static let deadlineMargin: TimeInterval = 0.05

    /// What the daemon is to do now.
    enum Action: Sendable {
        /// Run this request on a free connection (`couldNotStart` when there is none;
        /// `finished` with its outcome when it ends).
        case start(JobRunner.Request)
        /// Claim this slot and record it `skipped` (`skipRecorded` with the outcome).
        case recordSkipped(PendingSkip)
        /// Ask the job's deadline query, with when its last run here started (`deadlineAnswered`).
        case askDeadline(JobConfiguration, since: Date?)
        /// Record the slots nobody ran while no worker was up, as one `skipped` row.
        case recordMissedSlots(JobConfiguration, MissedSlots)
        /// A retry was planned: say so in the log.
        case retryPlanned(job: String, attempt: Int, at: Date, reason: RetryReason)
    }

    /// Why a retry was planned, as the log says it.
    enum RetryReason: String, Sendable {
        case runFailed = "the run failed"
        case workStillDue = "its work is still due after the run"
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

    private(set) var jobs: [JobConfiguration]
    private var tracked: [String: TrackedJob] = [:]
    private var pendingSkips: [PendingSkip] = []
    private(set) var maxConcurrentJobs: Int
    /// Deadline queries are asked (normal mode; low-footprint mode sleeps until the next slot).
    let deadlineChecks: Bool

    /// Plans each enabled job's next slot after `now`; a job with a deadline query asks it at once.
    init(jobs: [JobConfiguration], maxConcurrentJobs: Int, deadlineChecks: Bool, now: Date) {
        self.jobs = jobs.filter(\.enabled)
        self.maxConcurrentJobs = maxConcurrentJobs
        self.deadlineChecks = deadlineChecks
        for job in self.jobs {
            tracked[job.name] = TrackedJob(
                nextSlot: job.schedule.nextDate(after: now),
                state: asksDeadlines(job) ? .waitingForDeadline(.init(at: now)) : .idle)
        }
    }

    // MARK: Reading

    /// The state of job `name` (nil for a job never enabled here).
    func state(of name: String) -> JobState? { tracked[name]?.state }

    /// The next slot of job `name`.
    func nextSlot(of name: String) -> Date? { tracked[name]?.nextSlot }

    /// When `job`'s last run here started (what its deadline query is asked with).
    func lastStart(of job: JobConfiguration) -> Date? { tracked[job.name]?.lastStart }

    /// Runs in progress.
    var runningCount: Int { tracked.values.count { $0.state.isRunning } }

    /// Skipped slots wait to be recorded (a low-footprint connection must not close meanwhile).
    var hasSkipsToRecord: Bool { !pendingSkips.isEmpty }

    // MARK: Start-up

    /// After downtime: at most one catch-up run (for the most recent slot, when
    /// `catch_up` is on and no worker looked after that slot), and the other slots
    /// since `lastLookedAfter` (the job's latest claimed slot or run) as one summary
    /// to record. A job that never ran has nothing to summarise: its catch-up counts
    /// from `installedAt`, when caretaker's schema was installed.
    mutating func catchUp(_ job: JobConfiguration, lastLookedAfter: Date?, installedAt: Date, now: Date) -> [Action] {
        guard let latest = job.schedule.previousDate(atOrBefore: now), latest > (lastLookedAfter ?? installedAt) else {
            return []
        }
        if job.catchUp, tracked[job.name] != nil {
            tracked[job.name]?.state = .queued(JobRunner.Request(job: job, trigger: .catchUp, slot: latest))
        }
        guard let lastLookedAfter else { return [] }
        // The catch-up run's own slot is not missed.
        let through = job.catchUp ? latest.addingTimeInterval(-0.001) : latest
        guard let missed = Self.slots(of: job.schedule, after: lastLookedAfter, through: through) else { return [] }
        return [.recordMissedSlots(job, missed)]
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

    /// A NOTIFY on `channel` arrived: the jobs that listen to it run soon (after their
    /// current run). Nothing to do before the next `dispatch`.
    mutating func notified(channel: String) -> [Action] {
        for job in jobs where job.wakeups.notifyChannel == channel { notify(job.name) }
        return []
    }

    /// The LISTEN connection was re-established: NOTIFYs may have been missed, so every listening job runs once.
    mutating func listenReconnected() -> [Action] {
        for job in jobs where job.wakeups.notifyChannel != nil { notify(job.name) }
        return []
    }

    /// idle, waiting for a retry or a deadline → notified; running → running, then notified.
    /// A queued or notified job stays as it is: the run it waits for does the work.
    private mutating func notify(_ name: String) {
        guard let state = tracked[name]?.state else { return }
        switch state {
        case .idle, .waitingForRetry, .waitingForDeadline:
            tracked[name]?.state = .notified(retry: state.retry)
        case .running(nil):
            tracked[name]?.state = .running(then: .notified)
        case .running(.some), .queued, .notified:
            break
        }
    }

    /// The channels to LISTEN on for the enabled ones of `jobs`.
    static func notifyChannels(of jobs: [JobConfiguration]) -> [String] {
        Array(Set(jobs.filter(\.enabled).compactMap(\.wakeups.notifyChannel))).sorted()
    }

    /// The deadline queries to ask now: those of jobs waiting for a deadline whose time has come.
    func deadlinesToAsk(now: Date) -> [Action] {
        jobs.compactMap { job in
            guard let track = tracked[job.name], case .waitingForDeadline(let check) = track.state, check.at <= now
            else { return nil }
            return .askDeadline(job, since: track.lastStart)
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
    ///
    /// idle, waiting for a retry or a deadline → queued (a deadline run), waiting for
    /// the next deadline check, waiting for a retry, or idle. A job that is running,
    /// queued or notified ignores the answer: the run it has does the work, and asks again after.
    mutating func deadlineAnswered(_ job: JobConfiguration, _ answer: DeadlineAnswer, now: Date) -> [Action] {
        guard var track = tracked[job.name] else { return [] }
        let lastRun: JobState.LastRun?
        switch track.state {
        case .idle, .waitingForRetry: lastRun = nil
        case .waitingForDeadline(let check): lastRun = check.lastRun
        case .notified, .queued, .running: return []
        }
        if let lastRun {
            if answer.stuck {
                track.failedAttempts = max(track.failedAttempts, lastRun.request.attempt)
            } else if !lastRun.failed {
                track.failedAttempts = 0
            }
        }
        var next: JobState = track.state.retry.map { .waitingForRetry($0) } ?? .idle
        if let wait = answer.secondsUntilNext, wait <= 0 {
            if track.failedAttempts <= job.maxRetries {
                next = .queued(
                    JobRunner.Request(job: job, trigger: .deadline, attempt: track.failedAttempts + 1))
            }
        } else if let lookahead = job.wakeups.deadlineLookahead?.seconds {
            // The next check comes at the deadline, and at the latest one lookahead from
            // now (work that appears later cannot come due before then). A slot that
            // comes first covers it.
            let seconds = min(answer.secondsUntilNext.map { $0 + Self.deadlineMargin } ?? lookahead, lookahead)
            let check = now.addingTimeInterval(seconds)
            if track.nextSlot.map({ check < $0 }) ?? true {
                next = .waitingForDeadline(.init(at: check, retry: track.state.retry))
            }
        }
        track.state = next
        tracked[job.name] = track
        // A failed run has its retry planned already; one that succeeded yet left work due counts as failed.
        guard let lastRun, answer.stuck, !lastRun.failed else { return [] }
        return planRetry(after: lastRun.request, now: now, reason: .workStillDue)
    }

    private func asksDeadlines(_ job: JobConfiguration) -> Bool {
        deadlineChecks && job.wakeups.nextDeadline != nil
    }

    // MARK: Dispatch

    /// Moves due slots on, queues due retries, NOTIFY and deadline runs, and returns
    /// what to do: slots to record `skipped` (only when `canRecord`: low-footprint
    /// mode's one connection may be lent to a run) and runs to start, at most
    /// `freePlaces` of them (nothing new when `stopping`).
    ///
    /// A due slot: running → running (the slot recorded skipped); any other state →
    /// queued. A due retry: waiting for it (or notified, or waiting for a deadline,
    /// with it) → queued. Notified → queued. Queued → running, given a place.
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
            guard var track = tracked[job.name], case .queued(let request) = track.state else { continue }
            track.state = .running(then: nil)
            track.lastStart = now
            tracked[job.name] = track
            places -= 1
            actions.append(.start(request))
        }
        return actions
    }

    /// A started run could not get a connection: running → queued, for the next dispatch.
    mutating func couldNotStart(_ request: JobRunner.Request) -> [Action] {
        tracked[request.job.name]?.state = .queued(request)
        return []
    }

    /// What recording a skipped slot came to. Not due yet on the database: it waits
    /// until it is. The previous run had ended (on the database clock) before the slot
    /// came, though its end had not reached the scheduler yet: the slot runs after all,
    /// once the run's end is handled (running → running, then the slot; otherwise →
    /// queued). When another slot already waits to run, the newer one replaces it as
    /// usual, and the older is recorded `skipped` for want of a place.
    mutating func skipRecorded(_ skip: PendingSkip, _ outcome: RunOutcome) -> [Action] {
        switch outcome {
        case .slotNotDue:
            pendingSkips.append(skip)
        case .previousRunEnded:
            guard var track = tracked[skip.job.name] else { return [] }
            if case .running(let then) = track.state {
                let waiting: JobRunner.Request? = if case .run(let request)? = then { request } else { nil }
                track.state = .running(then: .run(queueSlot(skip.slot, of: skip.job, replacing: waiting)))
            } else {
                let waiting: JobRunner.Request? = if case .queued(let request) = track.state { request } else { nil }
                track.state = .queued(queueSlot(skip.slot, of: skip.job, replacing: waiting))
            }
            track.failedAttempts = 0
            tracked[skip.job.name] = track
        case .finished, .busy, .skipped, .alreadyClaimed:
            break
        }
        return []
    }

    /// The database failed while recording these skipped slots: they wait for the next dispatch.
    mutating func skipsNotRecorded(_ skips: [PendingSkip]) -> [Action] {
        pendingSkips.append(contentsOf: skips)
        return []
    }

    /// The request that runs `slot` of `job` instead of `waiting`. A scheduled slot
    /// already waiting for a place is replaced by the newer of the two, and the older
    /// is recorded `skipped` (no free place): one run per slot, every slot on record.
    private mutating func queueSlot(
        _ slot: Date, of job: JobConfiguration, replacing waiting: JobRunner.Request?
    ) -> JobRunner.Request {
        var newest = slot
        if let waitingSlot = waiting?.slot {
            pendingSkips.append(PendingSkip(job: job, slot: min(waitingSlot, slot), reason: .noFreePlace))
            newest = max(waitingSlot, slot)
        }
        return JobRunner.Request(job: job, trigger: .schedule, slot: newest)
    }

    private mutating func queueDue(_ job: JobConfiguration, now: Date) {
        guard var track = tracked[job.name] else { return }
        defer { tracked[job.name] = track }
        if let slot = track.nextSlot, slot <= now {
            // However many slots passed (a suspended host), only the latest runs: never a flood.
            let latest = job.schedule.previousDate(atOrBefore: now) ?? slot
            track.nextSlot = job.schedule.nextDate(after: latest)
            if track.state.isRunning {
                pendingSkips.append(PendingSkip(job: job, slot: latest, reason: .previousRunStillGoing))
                return
            }
            // A slot still waiting never found a free place: this newer one replaces it, on record.
            let waiting: JobRunner.Request? = if case .queued(let request) = track.state { request } else { nil }
            track.state = .queued(queueSlot(latest, of: job, replacing: waiting))
            track.failedAttempts = 0
            return
        }
        switch track.state {
        case .notified(let retry):
            if let retry, retry.at <= now {
                track.state = .queued(JobRunner.Request(job: job, trigger: .retry, attempt: retry.attempt))
            } else {
                track.state = .queued(JobRunner.Request(job: job, trigger: .notify))
            }
        case .waitingForRetry, .waitingForDeadline:
            if let retry = track.state.retry, retry.at <= now {
                track.state = .queued(JobRunner.Request(job: job, trigger: .retry, attempt: retry.attempt))
            }
        case .idle, .queued, .running:
            break
        }
    }

    // MARK: Completion

    /// A run ended (`outcome`, or the error its bookkeeping threw). running → the
    /// slot that waited for it (queued); a job with a deadline query → waiting for it
    /// now (`deadlinesToAsk`), before anything else of it starts; a NOTIFY that came
    /// meanwhile → notified; a failure under the retry rules → waiting for a retry;
    /// else idle. A slot that was not due yet on the database is asked again.
    mutating func finished(
        _ request: JobRunner.Request, _ outcome: Result<RunOutcome, any Error>, now: Date, stopping: Bool = false
    ) -> [Action] {
        let name = request.job.name
        guard var track = tracked[name], case .running(let then) = track.state else { return [] }
        let failed: Bool
        switch outcome {
        case .failure, .success(.finished(_, .failed, _, _)): failed = true
        case .success(.slotNotDue):
            // The server's clock stepped back: ask again when the database agrees.
            if let slot = request.slot { track.nextSlot = min(track.nextSlot ?? slot, slot) }
            failed = false
        case .success: failed = false
        }
        if failed, request.trigger != .manual {
            track.failedAttempts = max(track.failedAttempts, request.attempt)
        }
        track.state = .idle
        tracked[name] = track
        // A job disabled by a reload meanwhile: nothing follows its run.
        guard jobs.contains(where: { $0.name == name }) else { return [] }
        if case .run(let slotRun)? = then {
            // The slot that waited does the work of a retry.
            tracked[name]?.state = .queued(slotRun)
            return []
        }
        let retryActions = failed && !stopping ? planRetry(after: request, now: now, reason: .runFailed) : []
        let retry = tracked[name]?.state.retry
        if case .notified? = then {
            tracked[name]?.state = .notified(retry: retry)
        } else if asksDeadlines(request.job) {
            tracked[name]?.state = .waitingForDeadline(
                .init(at: now, lastRun: .init(request: request, failed: failed), retry: retry))
        }
        return retryActions
    }

    /// Plans attempt `n + 1` after attempt `n` of `request` did not get its work done:
    /// `retryBaseDelay × 2^(n−1)` later, when that is before the next slot and `n ≤ max_retries`.
    /// idle → waiting for the retry; waiting for a retry or a deadline → the same, with
    /// this retry. Says so in the log.
    private mutating func planRetry(
        after request: JobRunner.Request, now: Date, reason: RetryReason
    ) -> [Action] {
        guard request.trigger != .manual, request.attempt <= request.job.maxRetries,
            var track = tracked[request.job.name]
        else { return [] }
        let retry = JobState.Retry(
            at: now.addingTimeInterval(Self.retryDelay(afterAttempt: request.attempt).seconds),
            attempt: request.attempt + 1)
        if let next = track.nextSlot, retry.at >= next { return [] }
        switch track.state {
        case .idle, .waitingForRetry: track.state = .waitingForRetry(retry)
        case .waitingForDeadline(var check):
            check.retry = retry
            track.state = .waitingForDeadline(check)
        case .notified, .queued, .running:
            // The run that comes next does the work.
            return []
        }
        tracked[request.job.name] = track
        return [.retryPlanned(job: request.job.name, attempt: retry.attempt, at: retry.at, reason: reason)]
    }

    static func retryDelay(afterAttempt attempt: Int) -> Duration {
        retryBaseDelay * (1 << min(attempt - 1, 16))
    }

    // MARK: Reload

    /// After a reload: a job whose schedule changed (or that was just enabled) gets
    /// its next slot under the new schedule; an unchanged one keeps its slot, which
    /// may be due right now; a disabled one loses what was planned for it (→ idle; a
    /// run in progress still ends normally, with nothing after it). A job that asks
    /// deadlines waits for one now, one that no longer does stops waiting for it.
    mutating func reload(jobs newJobs: [JobConfiguration], maxConcurrentJobs: Int, now: Date) -> [Action] {
        let previous = Dictionary(jobs.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        self.maxConcurrentJobs = maxConcurrentJobs
        jobs = newJobs.filter(\.enabled)
        for job in newJobs {
            var track = tracked[job.name] ?? TrackedJob()
            if !job.enabled {
                track = TrackedJob(state: track.state.isRunning ? .running(then: nil) : .idle)
                tracked[job.name] = track
                continue
            }
            if previous[job.name]?.schedule != job.schedule || track.nextSlot == nil {
                track.nextSlot = job.schedule.nextDate(after: now)
            }
            switch track.state {
            case .idle where asksDeadlines(job):
                track.state = .waitingForDeadline(.init(at: now))
            case .waitingForRetry(let retry) where asksDeadlines(job):
                track.state = .waitingForDeadline(.init(at: now, retry: retry))
            case .waitingForDeadline(let check) where !asksDeadlines(job):
                track.state = check.retry.map { .waitingForRetry($0) } ?? .idle
            case .queued(var request):
                // Queued requests carry the job's configuration: take the new one.
                request.job = job
                track.state = .queued(request)
            case .running(.run(var request)):
                request.job = job
                track.state = .running(then: .run(request))
            default:
                break
            }
            tracked[job.name] = track
        }
        let enabled = Set(jobs.map(\.name))
        pendingSkips.removeAll { !enabled.contains($0.job.name) }
        return []
    }

    // MARK: Waking

    /// When the scheduler has something to do next: `now` when a queued or notified
    /// run could start (given a free place) or a deadline query is due, else the
    /// earliest planned time; nil when nothing is planned. A job that is running
    /// counts only with its next slot (what follows its run waits for the run to
    /// end, whose event wakes the scheduler).
    func nextWake(now: Date, freePlaces: Int, canRecord: Bool) -> Date? {
        var earliest: Date? = canRecord ? pendingSkips.map(\.slot).min() : nil
        let canStart = min(freePlaces, maxConcurrentJobs - runningCount) > 0
        for job in jobs {
            guard let track = tracked[job.name] else { continue }
            if canStart && track.state.canStart { return now }
            for date in [track.nextSlot].compactMap({ $0 }) + track.state.plannedTimes {
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
