import Foundation
import Testing

@testable import CaretakerConfig
@testable import CaretakerCore
@testable import CaretakerDatabase
@testable import CaretakerJobs
@testable import CaretakerMail

/// The daemon's scheduling policy against fixed dates: no database, no process, no clock.
@Suite("Scheduler policy")
struct SchedulerTests {
    static let builtIns = BuiltInJob.allCases.map(\.rawValue)

    /// The jobs of a configuration: every built-in disabled except `keep`, plus `extra` TOML.
    static func jobs(
        keep: Set<String> = [], _ extra: String = "", timezone: String = "UTC"
    ) throws -> [JobConfiguration] {
        let disabled = builtIns.filter { !keep.contains($0) }.map { "[jobs.\($0)]\nenabled = false\n" }.joined()
        return try ConfigurationLoader.parse(
            "[worker]\ntimezone = \"\(timezone)\"\n" + disabled + extra, file: "jobs.toml"
        ).jobs
    }

    static func job(_ name: String, _ jobs: [JobConfiguration]) throws -> JobConfiguration {
        try #require(jobs.first { $0.name == name })
    }

    static func sqlJob(_ name: String, _ schedule: String, _ extra: String = "") -> String {
        "\n[jobs.\(name)]\nschedule = \"\(schedule)\"\nsql = \"SELECT 1\"\n\(extra)\n"
    }

    static func at(_ text: String) -> Date {
        ISO8601DateFormatter().date(from: text)!
    }

    static func scheduler(
        _ jobs: [JobConfiguration], maxConcurrentJobs: Int = 2, deadlineChecks: Bool = true,
        now: String
    ) -> Scheduler {
        Scheduler(jobs: jobs, maxConcurrentJobs: maxConcurrentJobs, deadlineChecks: deadlineChecks, now: at(now))
    }

    static func starts(_ actions: [Scheduler.Action]) -> [JobRunner.Request] {
        actions.compactMap { if case .start(let request) = $0 { request } else { nil } }
    }

    static func skips(_ actions: [Scheduler.Action]) -> [Scheduler.PendingSkip] {
        actions.compactMap { if case .recordSkipped(let skip) = $0 { skip } else { nil } }
    }

    static func missed(_ actions: [Scheduler.Action]) -> Scheduler.MissedSlots? {
        actions.lazy.compactMap { if case .recordMissedSlots(_, let missed) = $0 { missed } else { nil } }.first
    }

    static func deadlines(_ actions: [Scheduler.Action]) -> [String] {
        actions.compactMap { if case .askDeadline(let job, _) = $0 { job.name } else { nil } }
    }

    /// "job attempt reason" of each retry planned.
    static func retriesPlanned(_ actions: [Scheduler.Action]) -> [String] {
        actions.compactMap {
            if case .retryPlanned(let job, let attempt, _, let reason) = $0 {
                "\(job) \(attempt) \(reason)"
            } else {
                nil
            }
        }
    }

    static let succeeded: Result<RunOutcome, any Error> = .success(
        .finished(runID: 1, status: .succeeded, stats: JobStats(), error: nil))
    static let failed: Result<RunOutcome, any Error> = .success(
        .finished(runID: 1, status: .failed, stats: JobStats(), error: "boom"))

    /// The retry a job waits for, in whichever state keeps it.
    static func retry(_ scheduler: Scheduler, _ name: String) -> JobState.Retry? {
        scheduler.state(of: name)?.retry
    }

    /// When a job's deadline query is to be asked; nil when it waits for none.
    static func deadlineCheck(_ scheduler: Scheduler, _ name: String) -> Date? {
        if case .waitingForDeadline(let check)? = scheduler.state(of: name) { check.at } else { nil }
    }

    static func queued(_ scheduler: Scheduler, _ name: String) -> JobRunner.Request? {
        if case .queued(let request)? = scheduler.state(of: name) { request } else { nil }
    }

    /// "name trigger slot attempt", for readable expectations.
    static func describe(_ requests: [JobRunner.Request]) -> [String] {
        requests.map { request in
            let slot = request.slot.map { ISO8601DateFormatter().string(from: $0) } ?? "-"
            return "\(request.job.name) \(request.trigger.rawValue) \(slot) \(request.attempt)"
        }
    }

    // MARK: Triggers

    @Test("schedule: a slot runs when it comes, with its slot, as attempt 1; nothing before")
    func scheduleTrigger() throws {
        var scheduler = Self.scheduler(try Self.jobs(Self.sqlJob("a", "*/5 * * * *")), now: "2026-01-01T10:00:30Z")
        #expect(
            scheduler.nextWake(now: Self.at("2026-01-01T10:00:30Z"), freePlaces: .max, canRecord: true)
                == Self.at("2026-01-01T10:05:00Z"))
        #expect(scheduler.dispatch(now: Self.at("2026-01-01T10:04:59Z"), freePlaces: .max, canRecord: true).isEmpty)
        let actions = scheduler.dispatch(now: Self.at("2026-01-01T10:05:00Z"), freePlaces: .max, canRecord: true)
        #expect(Self.describe(Self.starts(actions)) == ["a schedule 2026-01-01T10:05:00Z 1"])
        #expect(scheduler.runningCount == 1)
    }

    @Test("after a suspended host, only the latest of the passed slots runs")
    func onlyTheLatestPassedSlotRuns() throws {
        var scheduler = Self.scheduler(try Self.jobs(Self.sqlJob("a", "*/5 * * * *")), now: "2026-01-01T10:00:30Z")
        let actions = scheduler.dispatch(now: Self.at("2026-01-01T13:07:00Z"), freePlaces: .max, canRecord: true)
        #expect(Self.describe(Self.starts(actions)) == ["a schedule 2026-01-01T13:05:00Z 1"])
        #expect(Self.skips(actions).isEmpty)
    }

    @Test("catch-up: one run for the latest slot after downtime of any length, the other slots summed up once")
    func catchUpAfterDowntime() throws {
        let jobs = try Self.jobs(
            Self.sqlJob("a", "*/5 * * * *") + Self.sqlJob("b", "@every 1s")
                + Self.sqlJob("c", "*/5 * * * *", "catch_up = false"))
        let (a, b, c) = (try Self.job("a", jobs), try Self.job("b", jobs), try Self.job("c", jobs))
        var scheduler = Self.scheduler(jobs, now: "2026-01-01T10:02:00Z")
        let now = Self.at("2026-01-01T10:02:00Z")
        // Down from 09:00 (its last claimed slot): slots 09:05 … 10:00; 10:00 is caught up.
        let missed = Self.missed(
            scheduler.catchUp(
                a, lastLookedAfter: Self.at("2026-01-01T09:00:00Z"), installedAt: .distantPast, now: now))
        #expect(
            missed == .init(count: 11, first: Self.at("2026-01-01T09:05:00Z"), last: Self.at("2026-01-01T09:55:00Z")))
        // A year down, every second: still one run.
        let yearAgo = Self.at("2025-01-01T10:02:00Z")
        let missedEverySecond = Self.missed(
            scheduler.catchUp(b, lastLookedAfter: yearAgo, installedAt: .distantPast, now: now))
        #expect(missedEverySecond?.count == 365 * 86_400 - 1)
        #expect(missedEverySecond?.last == now.addingTimeInterval(-1))
        // Without catch_up the latest slot is missed too, and nothing runs.
        let missedWithout = Self.missed(
            scheduler.catchUp(
                c, lastLookedAfter: Self.at("2025-12-01T10:00:00Z"), installedAt: .distantPast, now: now))
        #expect(missedWithout?.count == 31 * 24 * 12)
        #expect(missedWithout?.last == Self.at("2026-01-01T10:00:00Z"))
        let actions = scheduler.dispatch(now: now, freePlaces: .max, canRecord: true)
        #expect(
            Self.describe(Self.starts(actions)) == [
                "a catch-up 2026-01-01T10:00:00Z 1", "b catch-up 2026-01-01T10:02:00Z 1",
            ])
        #expect(Self.skips(actions).isEmpty)
    }

    @Test("catch-up: nothing when the latest slot was looked after, or only the catch-up slot was missed")
    func noCatchUpWithoutDowntime() throws {
        let jobs = try Self.jobs(Self.sqlJob("a", "*/5 * * * *"))
        let a = try Self.job("a", jobs)
        var scheduler = Self.scheduler(jobs, now: "2026-01-01T10:02:00Z")
        let now = Self.at("2026-01-01T10:02:00Z")
        #expect(
            scheduler.catchUp(a, lastLookedAfter: Self.at("2026-01-01T10:00:00Z"), installedAt: .distantPast, now: now)
                .isEmpty)
        #expect(
            Self.starts(scheduler.dispatch(now: Self.at("2026-01-01T10:02:00Z"), freePlaces: .max, canRecord: true))
                .isEmpty)
        #expect(
            scheduler.catchUp(a, lastLookedAfter: Self.at("2026-01-01T09:55:00Z"), installedAt: .distantPast, now: now)
                .isEmpty)
        #expect(
            Self.describe(Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true)))
                == ["a catch-up 2026-01-01T10:00:00Z 1"])
        // Never ran: caught up when the schema was installed before the slot, with nothing to summarise.
        var fresh = Self.scheduler(jobs, now: "2026-01-01T10:02:00Z")
        #expect(fresh.catchUp(a, lastLookedAfter: nil, installedAt: Self.at("2026-01-01T10:01:00Z"), now: now).isEmpty)
        #expect(fresh.dispatch(now: now, freePlaces: .max, canRecord: true).isEmpty)
        #expect(fresh.catchUp(a, lastLookedAfter: nil, installedAt: Self.at("2025-01-01T00:00:00Z"), now: now).isEmpty)
        #expect(
            Self.describe(Self.starts(fresh.dispatch(now: now, freePlaces: .max, canRecord: true)))
                == ["a catch-up 2026-01-01T10:00:00Z 1"])
    }

    @Test("notify: a NOTIFY on a job's channel runs it (after its current run); other channels do nothing")
    func notifyTrigger() throws {
        let jobs = try Self.jobs(keep: ["send-temp-passwords", "leader-succession"])
        var scheduler = Self.scheduler(jobs, now: "2026-01-01T10:00:30Z")
        let now = Self.at("2026-01-01T10:00:31Z")
        _ = scheduler.notified(channel: "something_else")
        #expect(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true).isEmpty)
        _ = scheduler.notified(channel: SendTempPasswords.notifyChannel!)
        #expect(scheduler.nextWake(now: now, freePlaces: .max, canRecord: true) == now)
        let first = Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true))
        #expect(Self.describe(first) == ["send-temp-passwords notify - 1"])
        // A NOTIFY while it runs waits for the run to end.
        _ = scheduler.notified(channel: SendTempPasswords.notifyChannel!)
        #expect(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true).isEmpty)
        _ = scheduler.finished(first[0], Self.succeeded, now: now)
        #expect(
            Self.describe(Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true)))
                == ["send-temp-passwords notify - 1"])
        // A new LISTEN connection may have missed NOTIFYs: every listening job runs once.
        _ = scheduler.listenReconnected()
        #expect(
            Self.describe(Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true)))
                == ["leader-succession notify - 1"])
        #expect(
            Scheduler.notifyChannels(of: jobs) == [
                LeaderSuccession.notifyChannel!, SendTempPasswords.notifyChannel!,
            ])
    }

    @Test("retry: backoff 10 s, 20 s, 40 s; at most max_retries; never past the next slot; never for manual runs")
    func retries() throws {
        var scheduler = Self.scheduler(try Self.jobs(Self.sqlJob("a", "@hourly")), now: "2026-01-01T09:59:59Z")
        var now = Self.at("2026-01-01T10:00:00Z")
        var request = try #require(Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true)).first)
        var attempts: [String] = Self.describe([request])
        while true {
            now = now.addingTimeInterval(1)
            _ = scheduler.finished(request, Self.failed, now: now)
            guard let wake = scheduler.nextWake(now: now, freePlaces: .max, canRecord: true),
                wake < Self.at("2026-01-01T11:00:00Z")
            else { break }
            #expect(scheduler.dispatch(now: wake.addingTimeInterval(-0.001), freePlaces: .max, canRecord: true).isEmpty)
            #expect(wake.timeIntervalSince(now) == Scheduler.retryDelay(afterAttempt: request.attempt).seconds)
            now = wake
            request = try #require(Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true)).first)
            attempts += Self.describe([request])
        }
        #expect(attempts == ["a schedule 2026-01-01T10:00:00Z 1", "a retry - 2", "a retry - 3", "a retry - 4"])

        // A failure 5 s before the next slot: the retry would come after it, so none.
        let late = Self.at("2026-01-01T11:59:55Z")
        let slotRun = try #require(
            Self.starts(scheduler.dispatch(now: Self.at("2026-01-01T11:00:00Z"), freePlaces: .max, canRecord: true))
                .first)
        _ = scheduler.finished(slotRun, Self.failed, now: late)
        #expect(Self.retry(scheduler, "a") == nil)
        // A manual run is never retried.
        let manual = JobRunner.Request(job: slotRun.job, trigger: .manual)
        _ = scheduler.finished(manual, Self.failed, now: Self.at("2026-01-01T12:00:01Z"))
        #expect(Self.retry(scheduler, "a") == nil)
    }

    @Test("a slot that comes while the job still runs is recorded skipped, once, saying why")
    func overlapIsSkipped() throws {
        var scheduler = Self.scheduler(try Self.jobs(Self.sqlJob("a", "@every 1m")), now: "2026-01-01T10:00:30Z")
        let run = Self.starts(
            scheduler.dispatch(now: Self.at("2026-01-01T10:01:00Z"), freePlaces: .max, canRecord: true))
        #expect(run.count == 1)
        let actions = scheduler.dispatch(now: Self.at("2026-01-01T10:02:00Z"), freePlaces: .max, canRecord: true)
        #expect(Self.starts(actions).isEmpty)
        let skips = Self.skips(actions)
        #expect(skips.map(\.slot) == [Self.at("2026-01-01T10:02:00Z")])
        #expect(skips.first?.reason == .previousRunStillGoing)
        #expect(scheduler.dispatch(now: Self.at("2026-01-01T10:02:30Z"), freePlaces: .max, canRecord: true).isEmpty)
    }

    @Test("a run that waits for a free place until its next slot: that slot is recorded skipped, the new one queued")
    func noFreePlaceIsSkipped() throws {
        let jobs = try Self.jobs(Self.sqlJob("a", "@every 1m") + Self.sqlJob("b", "@every 1m"))
        var scheduler = Self.scheduler(jobs, maxConcurrentJobs: 1, now: "2026-01-01T10:00:30Z")
        let first = scheduler.dispatch(now: Self.at("2026-01-01T10:01:00Z"), freePlaces: .max, canRecord: true)
        #expect(Self.describe(Self.starts(first)) == ["a schedule 2026-01-01T10:01:00Z 1"])
        let second = scheduler.dispatch(now: Self.at("2026-01-01T10:02:00Z"), freePlaces: .max, canRecord: true)
        let skips = Self.skips(second)
        #expect(
            skips.map { "\($0.job.name) \($0.slot) \($0.reason)" }.sorted() == [
                "a 2026-01-01 10:02:00 +0000 previousRunStillGoing", "b 2026-01-01 10:01:00 +0000 noFreePlace",
            ])
        #expect(Self.queued(scheduler, "b")?.slot == Self.at("2026-01-01T10:02:00Z"))
    }

    @Test("skipped slots wait while nothing can record them, and when the database says they are not due yet")
    func skipsWait() throws {
        var scheduler = Self.scheduler(try Self.jobs(Self.sqlJob("a", "@every 1m")), now: "2026-01-01T10:00:30Z")
        _ = scheduler.dispatch(now: Self.at("2026-01-01T10:01:00Z"), freePlaces: .max, canRecord: true)
        #expect(scheduler.dispatch(now: Self.at("2026-01-01T10:02:00Z"), freePlaces: 0, canRecord: false).isEmpty)
        #expect(scheduler.hasSkipsToRecord)
        let skip = try #require(
            Self.skips(scheduler.dispatch(now: Self.at("2026-01-01T10:02:01Z"), freePlaces: 0, canRecord: true)).first)
        _ = scheduler.skipRecorded(skip, .slotNotDue)
        #expect(scheduler.nextWake(now: Self.at("2026-01-01T10:02:01Z"), freePlaces: 0, canRecord: true) == skip.slot)
        #expect(
            Self.skips(scheduler.dispatch(now: Self.at("2026-01-01T10:02:02Z"), freePlaces: 0, canRecord: true)).count
                == 1)
    }

    @Test("a slot that came after the previous run ended on the database, before the scheduler heard, runs after all")
    func slotAfterTheRunEndedRuns() throws {
        var scheduler = Self.scheduler(try Self.jobs(Self.sqlJob("a", "@every 1m")), now: "2026-01-01T10:00:30Z")
        let run = try #require(
            Self.starts(scheduler.dispatch(now: Self.at("2026-01-01T10:01:00Z"), freePlaces: .max, canRecord: true))
                .first)
        let skip = try #require(
            Self.skips(scheduler.dispatch(now: Self.at("2026-01-01T10:02:00Z"), freePlaces: .max, canRecord: true))
                .first)
        _ = scheduler.skipRecorded(skip, .previousRunEnded)
        // Nothing starts before the run's end is handled: a job never overlaps itself.
        #expect(
            Self.starts(scheduler.dispatch(now: Self.at("2026-01-01T10:02:00Z"), freePlaces: .max, canRecord: true))
                .isEmpty)
        _ = scheduler.finished(run, Self.succeeded, now: Self.at("2026-01-01T10:02:01Z"))
        #expect(
            scheduler.nextWake(now: Self.at("2026-01-01T10:02:01Z"), freePlaces: .max, canRecord: true)
                == Self.at("2026-01-01T10:02:01Z"))
        let actions = scheduler.dispatch(now: Self.at("2026-01-01T10:02:01Z"), freePlaces: .max, canRecord: true)
        #expect(Self.describe(Self.starts(actions)) == ["a schedule 2026-01-01T10:02:00Z 1"])
        #expect(Self.skips(actions).isEmpty)
    }

    @Test("two slots found after the run ended: the newer runs, the older is recorded skipped for want of a place")
    func newerEndedSlotReplacesOlder() throws {
        var scheduler = Self.scheduler(try Self.jobs(Self.sqlJob("a", "@every 1m")), now: "2026-01-01T10:00:30Z")
        _ = scheduler.dispatch(now: Self.at("2026-01-01T10:01:00Z"), freePlaces: .max, canRecord: true)
        for minute in ["02", "03"] {
            let skip = try #require(
                Self.skips(
                    scheduler.dispatch(now: Self.at("2026-01-01T10:\(minute):00Z"), freePlaces: .max, canRecord: true)
                ).first)
            _ = scheduler.skipRecorded(skip, .previousRunEnded)
        }
        // Still running: the newer slot runs once the run's end is handled.
        guard case .running(.run(let next))? = scheduler.state(of: "a") else {
            Issue.record("no slot waits behind the run: \(String(describing: scheduler.state(of: "a")))")
            return
        }
        #expect(next.slot == Self.at("2026-01-01T10:03:00Z"))
        #expect(
            Self.skips(scheduler.dispatch(now: Self.at("2026-01-01T10:03:00Z"), freePlaces: .max, canRecord: true))
                .map { "\($0.slot) \($0.reason)" } == ["2026-01-01 10:02:00 +0000 noFreePlace"])
    }

    @Test("a run that could not get a connection waits queued; a slot not yet due on the database is asked again")
    func startFailures() throws {
        var scheduler = Self.scheduler(try Self.jobs(Self.sqlJob("a", "@every 1m")), now: "2026-01-01T10:00:30Z")
        let now = Self.at("2026-01-01T10:01:00Z")
        let request = try #require(Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true)).first)
        _ = scheduler.couldNotStart(request)
        #expect(scheduler.runningCount == 0)
        let again = try #require(Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true)).first)
        #expect(again.slot == request.slot)
        _ = scheduler.finished(again, .success(.slotNotDue), now: now)
        #expect(scheduler.nextSlot(of: "a") == request.slot)
    }

    // MARK: Deadline wake-ups

    static let logout = "[jobs.logout-inactive]\nschedule = \"@hourly\"\nidle_timeout = \"10m\"\nmax_retries = 3\n"

    @Test(
        "deadline: the query is asked at start, at the deadline, and at the latest idle_timeout later; due work runs as 'deadline'"
    )
    func deadlineTrigger() throws {
        let jobs = try Self.jobs(keep: ["logout-inactive"], Self.logout)
        let start = Self.at("2026-01-01T10:00:30Z")
        var scheduler = Scheduler(jobs: jobs, maxConcurrentJobs: 2, deadlineChecks: true, now: start)
        #expect(Self.deadlines(scheduler.deadlinesToAsk(now: start)) == ["logout-inactive"])
        _ = scheduler.deadlineAnswered(
            try Self.job("logout-inactive", jobs), DeadlineAnswer(secondsUntilNext: 30), now: start)
        #expect(scheduler.deadlinesToAsk(now: start).isEmpty)
        let check = try #require(Self.deadlineCheck(scheduler, "logout-inactive"))
        #expect(abs(check.timeIntervalSince(start) - 30.05) < 0.001)
        _ = scheduler.deadlineAnswered(
            try Self.job("logout-inactive", jobs), DeadlineAnswer(secondsUntilNext: 0), now: check)
        let run = Self.starts(scheduler.dispatch(now: check, freePlaces: .max, canRecord: true))
        #expect(Self.describe(run) == ["logout-inactive deadline - 1"])
        // Done, no session active: look again idle_timeout later (a new session cannot be due before).
        _ = scheduler.finished(run[0], Self.succeeded, now: check)
        #expect(Self.deadlines(scheduler.deadlinesToAsk(now: check)) == ["logout-inactive"])
        _ = scheduler.deadlineAnswered(
            try Self.job("logout-inactive", jobs), DeadlineAnswer(secondsUntilNext: nil), now: check)
        #expect(Self.deadlineCheck(scheduler, "logout-inactive") == check.addingTimeInterval(600))
        // A check that would come after the next slot (11:00) is left to the slot.
        _ = scheduler.deadlineAnswered(
            try Self.job("logout-inactive", jobs), DeadlineAnswer(secondsUntilNext: nil),
            now: Self.at("2026-01-01T10:55:00Z"))
        #expect(Self.deadlineCheck(scheduler, "logout-inactive") == nil)
    }

    /// Runs the policy as the daemon would for `duration`, every run ending at once
    /// with `end`, the deadline query always answering "due now" (a locked idle
    /// session, or a revocation that fails). Returns the runs started.
    static func simulateStuckDeadline(
        end: Result<RunOutcome, any Error>, from start: Date, for duration: TimeInterval
    ) throws -> [JobRunner.Request] {
        let jobs = try Self.jobs(keep: ["logout-inactive"], Self.logout)
        var scheduler = Scheduler(jobs: jobs, maxConcurrentJobs: 2, deadlineChecks: true, now: start)
        var now = start
        var started: [JobRunner.Request] = []
        for _ in 0..<10_000 {
            for case .askDeadline(let job, let since) in scheduler.deadlinesToAsk(now: now) {
                // The session was due before any run started: stuck after a run, new work before the first.
                let stuck = since != nil
                _ = scheduler.deadlineAnswered(
                    job, DeadlineAnswer(stuck: stuck, secondsUntilNext: stuck ? nil : -5), now: now)
            }
            for request in Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true)) {
                started.append(request)
                _ = scheduler.finished(request, end, now: now.addingTimeInterval(0.02))
            }
            guard let wake = scheduler.nextWake(now: now, freePlaces: .max, canRecord: true) else { break }
            now = max(wake, now.addingTimeInterval(0.001))
            if now >= start.addingTimeInterval(duration) { break }
        }
        return started
    }

    @Test(
        "an idle session that stays locked, or a revocation that always fails: 1 + max_retries runs per slot, never a loop",
        arguments: [false, true])
    func stuckDeadlineDoesNotSpin(failing: Bool) throws {
        let start = Self.at("2026-01-01T10:00:30Z")
        let runs = try Self.simulateStuckDeadline(
            end: failing ? Self.failed : Self.succeeded, from: start, for: 3600 + 1800)
        // Until 11:00: the first deadline run and three retries; from 11:00: the slot and three retries.
        #expect(
            Self.describe(runs) == [
                "logout-inactive deadline - 1", "logout-inactive retry - 2", "logout-inactive retry - 3",
                "logout-inactive retry - 4",
                "logout-inactive schedule 2026-01-01T11:00:00Z 1", "logout-inactive retry - 2",
                "logout-inactive retry - 3",
                "logout-inactive retry - 4",
            ])
    }

    @Test(
        "work that came due after the last run started runs at once; work stuck since before it waits for the retries")
    func newWorkRunsAtOnceStuckWorkWaits() throws {
        let jobs = try Self.jobs(keep: ["logout-inactive"], Self.logout)
        let job = try Self.job("logout-inactive", jobs)
        let start = Self.at("2026-01-01T10:00:30Z")
        var scheduler = Scheduler(jobs: jobs, maxConcurrentJobs: 2, deadlineChecks: true, now: start)
        _ = scheduler.deadlineAnswered(job, DeadlineAnswer(secondsUntilNext: 0), now: start)
        var now = start
        var runs: [String] = []
        // Sessions keep going idle every 20 ms: each run finds the next one due already.
        for _ in 0..<3 {
            let run = Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true))
            runs += Self.describe(run)
            #expect(scheduler.lastStart(of: job) == now)
            now = now.addingTimeInterval(0.1)
            _ = scheduler.finished(run[0], Self.succeeded, now: now)
            _ = scheduler.deadlineAnswered(job, DeadlineAnswer(stuck: false, secondsUntilNext: -0.05), now: now)
        }
        #expect(runs == Array(repeating: "logout-inactive deadline - 1", count: 3))
        #expect(Self.retry(scheduler, job.name) == nil)
        // Now one session stays locked: retries, and the new work's runs count as the next attempts, up to max_retries.
        var attempts: [String] = []
        for _ in 0..<10 {
            guard let run = Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true)).first else {
                break
            }
            attempts += Self.describe([run])
            now = now.addingTimeInterval(0.1)
            _ = scheduler.finished(run, Self.succeeded, now: now)
            _ = scheduler.deadlineAnswered(job, DeadlineAnswer(stuck: true, secondsUntilNext: -0.05), now: now)
        }
        #expect(
            attempts == [
                "logout-inactive deadline - 1", "logout-inactive deadline - 2", "logout-inactive deadline - 3",
                "logout-inactive deadline - 4",
            ])
        #expect(Self.deadlineCheck(scheduler, job.name) == nil && Self.retry(scheduler, job.name) == nil)
        // The next slot gives a fresh budget.
        let slot = Self.starts(
            scheduler.dispatch(now: Self.at("2026-01-01T11:00:00Z"), freePlaces: .max, canRecord: true))
        #expect(Self.describe(slot) == ["logout-inactive schedule 2026-01-01T11:00:00Z 1"])
    }

    @Test("a deadline that comes while a retry is pending runs as that attempt, not as a fresh attempt 1")
    func deadlineRunCountsAsThePendingAttempt() throws {
        let jobs = try Self.jobs(keep: ["logout-inactive"], Self.logout)
        let start = Self.at("2026-01-01T10:00:30Z")
        var scheduler = Scheduler(jobs: jobs, maxConcurrentJobs: 2, deadlineChecks: true, now: start)
        _ = scheduler.deadlineAnswered(
            try Self.job("logout-inactive", jobs), DeadlineAnswer(secondsUntilNext: 0), now: start)
        let first = Self.starts(scheduler.dispatch(now: start, freePlaces: .max, canRecord: true))
        _ = scheduler.finished(first[0], Self.failed, now: start)
        // The failure was elsewhere: nothing is due, the next deadline is in 2 s; the retry in 10 s.
        _ = scheduler.deadlineAnswered(
            try Self.job("logout-inactive", jobs), DeadlineAnswer(secondsUntilNext: 2), now: start)
        let check = start.addingTimeInterval(2.05)
        #expect(scheduler.nextWake(now: start, freePlaces: .max, canRecord: true) == check)
        _ = scheduler.deadlineAnswered(
            try Self.job("logout-inactive", jobs), DeadlineAnswer(secondsUntilNext: 0), now: check)
        #expect(
            Self.describe(Self.starts(scheduler.dispatch(now: check, freePlaces: .max, canRecord: true)))
                == ["logout-inactive deadline - 2"])
    }

    // MARK: Low-footprint rules

    @Test("low-footprint: no deadline queries, one run at a time, nothing starts while the connection is lent")
    func lowFootprintRules() throws {
        let jobs = try Self.jobs(
            keep: ["logout-inactive"], Self.logout + Self.sqlJob("a", "@hourly") + Self.sqlJob("b", "@hourly"))
        let start = Self.at("2026-01-01T10:59:00Z")
        var scheduler = Scheduler(jobs: jobs, maxConcurrentJobs: 1, deadlineChecks: false, now: start)
        #expect(scheduler.deadlinesToAsk(now: start).isEmpty)
        #expect(scheduler.nextWake(now: start, freePlaces: .max, canRecord: true) == Self.at("2026-01-01T11:00:00Z"))
        let slot = Self.at("2026-01-01T11:00:00Z")
        #expect(Self.starts(scheduler.dispatch(now: slot, freePlaces: 0, canRecord: false)).isEmpty)
        let one = Self.starts(scheduler.dispatch(now: slot, freePlaces: .max, canRecord: true))
        #expect(one.count == 1)
        #expect(Self.starts(scheduler.dispatch(now: slot, freePlaces: .max, canRecord: true)).isEmpty)
        _ = scheduler.finished(one[0], Self.succeeded, now: slot)
        #expect(scheduler.deadlinesToAsk(now: slot).isEmpty)
        #expect(Self.starts(scheduler.dispatch(now: slot, freePlaces: .max, canRecord: true)).count == 1)
    }

    // MARK: Reload

    @Test(
        "reload: a changed schedule replans, an unchanged one keeps its slot, a disabled job loses its plans, a new one gets a slot"
    )
    func reloadReplans() throws {
        let before = try Self.jobs(
            Self.sqlJob("a", "*/5 * * * *") + Self.sqlJob("b", "*/5 * * * *") + Self.sqlJob("c", "@hourly"))
        var scheduler = Self.scheduler(before, now: "2026-01-01T10:00:30Z")
        let run = Self.starts(
            scheduler.dispatch(now: Self.at("2026-01-01T10:05:00Z"), freePlaces: .max, canRecord: true))
        for request in run where request.job.name == "c" { Issue.record("c ran: \(request)") }
        for request in run { _ = scheduler.finished(request, Self.failed, now: Self.at("2026-01-01T10:05:01Z")) }
        #expect(Self.retry(scheduler, "b") != nil)
        let after = try Self.jobs(
            Self.sqlJob("a", "*/7 * * * *") + Self.sqlJob("b", "*/5 * * * *", "enabled = false")
                + Self.sqlJob("c", "@hourly") + Self.sqlJob("d", "@every 30s"))
        let now = Self.at("2026-01-01T10:06:00Z")
        _ = scheduler.reload(jobs: after, maxConcurrentJobs: 3, now: now)
        #expect(scheduler.nextSlot(of: "a") == Self.at("2026-01-01T10:07:00Z"))
        #expect(scheduler.nextSlot(of: "b") == nil && Self.retry(scheduler, "b") == nil)
        #expect(scheduler.nextSlot(of: "c") == Self.at("2026-01-01T11:00:00Z"))
        #expect(scheduler.nextSlot(of: "d") == Self.at("2026-01-01T10:06:30Z"))
        #expect(scheduler.maxConcurrentJobs == 3)
        #expect(scheduler.jobs.map(\.name) == ["a", "c", "d"])
    }

    // MARK: State transitions not covered above

    @Test("a NOTIFY while a retry waits: the job runs soon as notify, or as that retry when it has come due by then")
    func notifyWhileARetryWaits() throws {
        let jobs = try Self.jobs(keep: ["send-temp-passwords"])
        let channel = try #require(SendTempPasswords.notifyChannel)
        var scheduler = Self.scheduler(jobs, now: "2026-01-01T10:00:30Z")
        var now = Self.at("2026-01-01T10:01:00Z")
        let first = try #require(Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true)).first)
        #expect(
            Self.retriesPlanned(scheduler.finished(first, Self.failed, now: now))
                == ["send-temp-passwords 2 runFailed"])
        guard case .waitingForRetry(let retry)? = scheduler.state(of: "send-temp-passwords") else {
            Issue.record("not waiting for its retry: \(String(describing: scheduler.state(of: "send-temp-passwords")))")
            return
        }
        // waiting for a retry → notified (the retry kept): before the retry's time, a notify run.
        _ = scheduler.notified(channel: channel)
        #expect(Self.retry(scheduler, "send-temp-passwords") == retry)
        now = now.addingTimeInterval(1)
        let notifyRun = Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true))
        #expect(Self.describe(notifyRun) == ["send-temp-passwords notify - 1"])
        // notified, with the retry come due by the dispatch → queued as that retry.
        _ = scheduler.finished(notifyRun[0], Self.failed, now: now)
        _ = scheduler.notified(channel: channel)
        let due = try #require(Self.retry(scheduler, "send-temp-passwords")).at
        #expect(
            Self.describe(Self.starts(scheduler.dispatch(now: due, freePlaces: .max, canRecord: true)))
                == ["send-temp-passwords retry - 2"])
        // A NOTIFY while queued changes nothing: the queued run does the work.
        var full = Self.scheduler(jobs, maxConcurrentJobs: 0, now: "2026-01-01T10:00:30Z")
        _ = full.notified(channel: channel)
        _ = full.dispatch(now: Self.at("2026-01-01T10:00:31Z"), freePlaces: .max, canRecord: true)
        _ = full.notified(channel: channel)
        #expect(Self.queued(full, "send-temp-passwords")?.trigger == .notify)
    }

    @Test("a slot replaces a waiting retry or NOTIFY: the slot's run does their work")
    func slotReplacesRetryAndNotify() throws {
        let jobs = try Self.jobs(keep: ["send-temp-passwords"])
        var scheduler = Self.scheduler(jobs, now: "2026-01-01T10:00:30Z")
        let run = try #require(
            Self.starts(scheduler.dispatch(now: Self.at("2026-01-01T10:01:00Z"), freePlaces: .max, canRecord: true))
                .first)
        _ = scheduler.finished(run, Self.failed, now: Self.at("2026-01-01T10:01:55Z"))
        #expect(Self.retry(scheduler, "send-temp-passwords") == nil, "the retry would come after the next slot")
        _ = scheduler.finished(run, Self.failed, now: Self.at("2026-01-01T10:01:01Z"))
        #expect(Self.retry(scheduler, "send-temp-passwords") == nil, "an end for a job not running is ignored")
        // running → waiting for a retry, then → queued by the slot.
        let again = try #require(
            Self.starts(scheduler.dispatch(now: Self.at("2026-01-01T10:02:00Z"), freePlaces: .max, canRecord: true))
                .first)
        _ = scheduler.finished(again, Self.failed, now: Self.at("2026-01-01T10:02:01Z"))
        #expect(Self.retry(scheduler, "send-temp-passwords")?.attempt == 2)
        #expect(
            Self.describe(
                Self.starts(scheduler.dispatch(now: Self.at("2026-01-01T10:03:00Z"), freePlaces: 0, canRecord: true))
            )
            .isEmpty)
        #expect(Self.queued(scheduler, "send-temp-passwords")?.trigger == .schedule)
        // notified → queued by the slot.
        var notified = Self.scheduler(jobs, maxConcurrentJobs: 0, now: "2026-01-01T10:00:30Z")
        _ = notified.notified(channel: try #require(SendTempPasswords.notifyChannel))
        _ = notified.dispatch(now: Self.at("2026-01-01T10:01:00Z"), freePlaces: .max, canRecord: true)
        #expect(Self.queued(notified, "send-temp-passwords")?.slot == Self.at("2026-01-01T10:01:00Z"))
    }

    @Test("a slot found to run after the run's end was handled (recorded late, low-footprint): queued at once")
    func endedSlotAfterTheEndIsHandled() throws {
        var scheduler = Self.scheduler(
            try Self.jobs(Self.sqlJob("a", "@every 1m")), maxConcurrentJobs: 1, deadlineChecks: false,
            now: "2026-01-01T10:00:30Z")
        let run = try #require(
            Self.starts(scheduler.dispatch(now: Self.at("2026-01-01T10:01:00Z"), freePlaces: .max, canRecord: true))
                .first)
        // The connection is lent: the slot waits to be recorded; the run ends first.
        #expect(scheduler.dispatch(now: Self.at("2026-01-01T10:02:00Z"), freePlaces: 0, canRecord: false).isEmpty)
        _ = scheduler.finished(run, Self.succeeded, now: Self.at("2026-01-01T10:02:01Z"))
        #expect(scheduler.runningCount == 0)
        let skip = try #require(
            Self.skips(scheduler.dispatch(now: Self.at("2026-01-01T10:02:01Z"), freePlaces: 0, canRecord: true)).first)
        _ = scheduler.skipRecorded(skip, .previousRunEnded)
        #expect(Self.queued(scheduler, "a")?.slot == Self.at("2026-01-01T10:02:00Z"))
        // Recorded: nothing changes; the database failing: the slot waits for the next dispatch.
        _ = scheduler.skipRecorded(skip, .skipped(runID: 7))
        #expect(!scheduler.hasSkipsToRecord)
        _ = scheduler.skipsNotRecorded([skip])
        #expect(scheduler.hasSkipsToRecord)
    }

    @Test(
        "deadline answers: ignored while a run is queued or going; a stuck run that succeeded plans a retry and says so; a retry outlives a far deadline"
    )
    func deadlineAnswerTransitions() throws {
        let jobs = try Self.jobs(keep: ["logout-inactive"], Self.logout)
        let job = try Self.job("logout-inactive", jobs)
        let start = Self.at("2026-01-01T10:00:30Z")
        var scheduler = Scheduler(jobs: jobs, maxConcurrentJobs: 2, deadlineChecks: true, now: start)
        #expect(Self.deadlineCheck(scheduler, job.name) == start)
        _ = scheduler.deadlineAnswered(job, DeadlineAnswer(secondsUntilNext: 0), now: start)
        // queued: another answer changes nothing.
        _ = scheduler.deadlineAnswered(job, DeadlineAnswer(secondsUntilNext: nil), now: start)
        #expect(Self.queued(scheduler, job.name)?.trigger == .deadline)
        let run = try #require(Self.starts(scheduler.dispatch(now: start, freePlaces: .max, canRecord: true)).first)
        // running: ignored too.
        #expect(scheduler.deadlineAnswered(job, DeadlineAnswer(secondsUntilNext: 0), now: start).isEmpty)
        #expect(scheduler.state(of: job.name)?.isRunning == true)
        // running → waiting for the deadline, asked with the run's start.
        _ = scheduler.finished(run, Self.succeeded, now: start.addingTimeInterval(1))
        let asks = scheduler.deadlinesToAsk(now: start.addingTimeInterval(1))
        guard case .askDeadline(_, let since)? = asks.first else {
            Issue.record("no deadline query asked after the run: \(asks)")
            return
        }
        #expect(since == start)
        // Stuck after a successful run: waiting for the deadline, with a retry planned (and logged).
        let planned = scheduler.deadlineAnswered(
            job, DeadlineAnswer(stuck: true, secondsUntilNext: nil), now: start.addingTimeInterval(1))
        #expect(Self.retriesPlanned(planned) == ["logout-inactive 2 workStillDue"])
        #expect(Self.deadlineCheck(scheduler, job.name) == start.addingTimeInterval(601))
        #expect(Self.retry(scheduler, job.name)?.attempt == 2)
        // A deadline check past the next slot is dropped; the retry still waits.
        _ = scheduler.deadlineAnswered(
            job, DeadlineAnswer(secondsUntilNext: nil), now: Self.at("2026-01-01T10:55:00Z"))
        guard case .waitingForRetry(let retry)? = scheduler.state(of: job.name) else {
            Issue.record("the retry was lost: \(String(describing: scheduler.state(of: job.name)))")
            return
        }
        #expect(retry.attempt == 2)
        // A reload asks the deadline again at once, keeping the retry.
        _ = scheduler.reload(jobs: jobs, maxConcurrentJobs: 2, now: Self.at("2026-01-01T10:55:01Z"))
        #expect(Self.deadlineCheck(scheduler, job.name) == Self.at("2026-01-01T10:55:01Z"))
        #expect(Self.retry(scheduler, job.name) == retry)
    }

    /// The built-in jobs disabled, and `WakeupTestJob` with its deadline query on or off.
    static func wakeupTestJobs(asksDeadline: Bool = true) throws -> [JobConfiguration] {
        let disabled = builtIns.map { "[jobs.\($0)]\nenabled = false\n" }.joined()
        return try ConfigurationLoader.parse(
            "[worker]\ntimezone = \"UTC\"\n" + disabled
                + "[jobs.\(WakeupTestJob.name)]\ndeadline = \(asksDeadline)\n", file: "jobs.toml",
            catalogue: BuiltInJob.allCases + [BuiltInJob(WakeupTestJob.self)]
        ).jobs
    }

    @Test(
        "reload: a job that no longer asks deadlines stops waiting for one: to idle, or to the retry that waited beside it"
    )
    func reloadEndsDeadlineWait() throws {
        let asking = try Self.wakeupTestJobs(asksDeadline: true)
        let notAsking = try Self.wakeupTestJobs(asksDeadline: false)
        let start = Self.at("2026-01-01T10:00:30Z")
        var scheduler = Scheduler(jobs: asking, maxConcurrentJobs: 2, deadlineChecks: true, now: start)
        #expect(Self.deadlineCheck(scheduler, WakeupTestJob.name) == start)
        // Waiting for a deadline, no retry → idle.
        _ = scheduler.reload(jobs: notAsking, maxConcurrentJobs: 2, now: start.addingTimeInterval(1))
        guard case .idle? = scheduler.state(of: WakeupTestJob.name) else {
            Issue.record("still waiting: \(String(describing: scheduler.state(of: WakeupTestJob.name)))")
            return
        }
        #expect(scheduler.deadlinesToAsk(now: start.addingTimeInterval(2)).isEmpty)

        // Waiting for a deadline with a retry beside it (a run failed) → waiting for the retry.
        _ = scheduler.reload(jobs: asking, maxConcurrentJobs: 2, now: start.addingTimeInterval(3))
        let job = try Self.job(WakeupTestJob.name, asking)
        _ = scheduler.deadlineAnswered(job, DeadlineAnswer(secondsUntilNext: 0), now: start.addingTimeInterval(3))
        let run = try #require(
            Self.starts(scheduler.dispatch(now: start.addingTimeInterval(3), freePlaces: .max, canRecord: true)).first)
        _ = scheduler.finished(run, Self.failed, now: start.addingTimeInterval(4))
        let retry = try #require(Self.retry(scheduler, WakeupTestJob.name))
        #expect(Self.deadlineCheck(scheduler, WakeupTestJob.name) == start.addingTimeInterval(4))
        _ = scheduler.reload(jobs: notAsking, maxConcurrentJobs: 2, now: start.addingTimeInterval(5))
        guard case .waitingForRetry(let kept)? = scheduler.state(of: WakeupTestJob.name) else {
            Issue.record("not waiting for the retry: \(String(describing: scheduler.state(of: WakeupTestJob.name)))")
            return
        }
        #expect(kept == retry)
    }

    @Test(
        "reload: queued runs take the new configuration; a disabled job that runs ends normally; a newly enabled deadline job asks at once"
    )
    func reloadTransitions() throws {
        let before = try Self.jobs(Self.sqlJob("a", "@every 1m", "max_retries = 1") + Self.sqlJob("b", "@every 1m"))
        var scheduler = Self.scheduler(before, maxConcurrentJobs: 1, now: "2026-01-01T10:00:30Z")
        let actions = scheduler.dispatch(now: Self.at("2026-01-01T10:01:00Z"), freePlaces: .max, canRecord: true)
        let run = try #require(Self.starts(actions).first)
        #expect(run.job.name == "a")
        let after = try Self.jobs(
            keep: ["logout-inactive"],
            Self.logout + Self.sqlJob("a", "@every 1m", "enabled = false")
                + Self.sqlJob("b", "@every 1m", "max_retries = 5"))
        _ = scheduler.reload(jobs: after, maxConcurrentJobs: 1, now: Self.at("2026-01-01T10:01:01Z"))
        #expect(Self.queued(scheduler, "b")?.job.maxRetries == 5)
        #expect(scheduler.state(of: "a")?.isRunning == true)
        #expect(Self.deadlineCheck(scheduler, "logout-inactive") == Self.at("2026-01-01T10:01:01Z"))
        // The disabled job's run ends: nothing follows it, not even a retry.
        #expect(scheduler.finished(run, Self.failed, now: Self.at("2026-01-01T10:01:02Z")).isEmpty)
        guard case .idle? = scheduler.state(of: "a") else {
            Issue.record("a disabled job is not idle after its run: \(String(describing: scheduler.state(of: "a")))")
            return
        }
        #expect(scheduler.runningCount == 0)
    }

    @Test("a slot waiting behind a run: a NOTIFY leaves it, a reload gives it the new configuration")
    func slotBehindARun() throws {
        let jobs = try Self.jobs(keep: ["send-temp-passwords"])
        var scheduler = Self.scheduler(jobs, now: "2026-01-01T10:00:30Z")
        let run = try #require(
            Self.starts(scheduler.dispatch(now: Self.at("2026-01-01T10:01:00Z"), freePlaces: .max, canRecord: true))
                .first)
        let skip = try #require(
            Self.skips(scheduler.dispatch(now: Self.at("2026-01-01T10:02:00Z"), freePlaces: .max, canRecord: true))
                .first)
        _ = scheduler.skipRecorded(skip, .previousRunEnded)
        _ = scheduler.notified(channel: try #require(SendTempPasswords.notifyChannel))
        let after = try Self.jobs(keep: ["send-temp-passwords"], "[jobs.send-temp-passwords]\nmax_retries = 7\n")
        _ = scheduler.reload(jobs: after, maxConcurrentJobs: 2, now: Self.at("2026-01-01T10:02:01Z"))
        guard case .running(.run(let next))? = scheduler.state(of: "send-temp-passwords") else {
            Issue.record("the slot no longer waits: \(String(describing: scheduler.state(of: "send-temp-passwords")))")
            return
        }
        #expect(next.slot == Self.at("2026-01-01T10:02:00Z") && next.job.maxRetries == 7)
        _ = scheduler.finished(run, Self.succeeded, now: Self.at("2026-01-01T10:02:02Z"))
        #expect(
            Self.describe(
                Self.starts(scheduler.dispatch(now: Self.at("2026-01-01T10:02:02Z"), freePlaces: .max, canRecord: true))
            )
                == ["send-temp-passwords schedule 2026-01-01T10:02:00Z 1"])
    }

    @Test("a NOTIFY while a job waits for its deadline query: notified, keeping a waiting retry")
    func notifyWhileWaitingForADeadline() throws {
        let jobs = try Self.wakeupTestJobs()
        let job = try Self.job(WakeupTestJob.name, jobs)
        let start = Self.at("2026-01-01T10:00:30Z")
        var scheduler = Scheduler(jobs: jobs, maxConcurrentJobs: 2, deadlineChecks: true, now: start)
        _ = scheduler.deadlineAnswered(job, DeadlineAnswer(secondsUntilNext: 0), now: start)
        let run = try #require(Self.starts(scheduler.dispatch(now: start, freePlaces: .max, canRecord: true)).first)
        _ = scheduler.finished(run, Self.failed, now: start)
        let retry = try #require(Self.retry(scheduler, job.name))
        #expect(Self.deadlineCheck(scheduler, job.name) == start)
        _ = scheduler.notified(channel: WakeupTestJob.notifyChannel!)
        guard case .notified(let kept)? = scheduler.state(of: job.name) else {
            Issue.record("not notified: \(String(describing: scheduler.state(of: job.name)))")
            return
        }
        #expect(kept == retry)
        #expect(scheduler.deadlinesToAsk(now: start).isEmpty)
        #expect(
            Self.describe(Self.starts(scheduler.dispatch(now: start, freePlaces: .max, canRecord: true)))
                == ["\(WakeupTestJob.name) notify - 1"])
    }

    // MARK: DST

    @Test(
        "DST: a daily 02:30 job in Berlin runs at 03:00 CEST on the spring-forward night, once on the fall-back night")
    func dailyJobAcrossDST() throws {
        let jobs = try Self.jobs(Self.sqlJob("a", "30 2 * * *"), timezone: "Europe/Berlin")
        var scheduler = Self.scheduler(jobs, now: "2026-03-28T12:00:00Z")
        var now = Self.at("2026-03-28T12:00:00Z")
        var slots: [String] = []
        while slots.count < 4, let wake = scheduler.nextWake(now: now, freePlaces: .max, canRecord: true) {
            now = wake
            for request in Self.starts(scheduler.dispatch(now: now, freePlaces: .max, canRecord: true)) {
                slots += Self.describe([request])
                _ = scheduler.finished(request, Self.succeeded, now: now)
            }
        }
        #expect(
            slots == [
                "a schedule 2026-03-29T01:00:00Z 1", "a schedule 2026-03-30T00:30:00Z 1",
                "a schedule 2026-03-31T00:30:00Z 1", "a schedule 2026-04-01T00:30:00Z 1",
            ])
        scheduler = Self.scheduler(jobs, now: "2026-10-24T12:00:00Z")
        #expect(
            scheduler.nextWake(now: Self.at("2026-10-24T12:00:00Z"), freePlaces: .max, canRecord: true)
                == Self.at("2026-10-25T00:30:00Z"))
        _ = scheduler.dispatch(now: Self.at("2026-10-25T00:30:00Z"), freePlaces: .max, canRecord: true)
        #expect(scheduler.nextSlot(of: "a") == Self.at("2026-10-26T01:30:00Z"))
    }
}

/// SIGHUP and `low_footprint`: applied as a whole at the next start, never half now.
@Suite("Reload of low_footprint")
struct ReloadLowFootprintTests {
    func write(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString).toml")
            .path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("a file switching low_footprint on is read with the running normal mode and its defaults")
    func switchingOnWaitsForRestart() throws {
        let path = try write("[worker]\nlow_footprint = true\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (configuration, ignored) = try Daemon.loadForReload(
            path: path, runningLowFootprint: false, lowFootprintFlag: false)
        #expect(ignored)
        #expect(!configuration.worker.lowFootprint)
        #expect(configuration.worker.maxConcurrentJobs == 2)
        #expect(configuration.worker.batchPause == .zero)
        #expect(configuration.job(named: "expire-content")?.batchSize == 1000)
        guard
            let settings = configuration.job(named: "send-temp-passwords")?.settings(as: SendTempPasswordsSettings.self)
        else {
            Issue.record("no send-temp-passwords")
            return
        }
        #expect(settings.bcryptCost == 12)
    }

    @Test("a file switching low_footprint off keeps the running low-footprint mode and its defaults")
    func switchingOffWaitsForRestart() throws {
        let path = try write("[worker]\nlow_footprint = false\nmax_concurrent_jobs = 4\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (configuration, ignored) = try Daemon.loadForReload(
            path: path, runningLowFootprint: true, lowFootprintFlag: false)
        #expect(ignored)
        #expect(configuration.worker.lowFootprint && configuration.worker.maxConcurrentJobs == 1)
        #expect(configuration.job(named: "expire-content")?.batchSize == 200)
    }

    @Test("an unchanged mode (or the --low-footprint flag) reloads as written, nothing ignored")
    func unchangedMode() throws {
        let path = try write("[worker]\nmax_concurrent_jobs = 4\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (normal, ignoredNormal) = try Daemon.loadForReload(
            path: path, runningLowFootprint: false, lowFootprintFlag: false)
        #expect(!ignoredNormal && normal.worker.maxConcurrentJobs == 4)
        let (flagged, ignoredFlagged) = try Daemon.loadForReload(
            path: path, runningLowFootprint: true, lowFootprintFlag: true)
        #expect(!ignoredFlagged && flagged.worker.lowFootprint)
    }
}

/// A job that both a NOTIFY and a deadline query wake (no built-in job is both), whose
/// deadline query its own setting turns off (`deadline = false`; the built-in job that
/// asks deadlines always does), so that a reload can stop it asking.
struct WakeupTestJob: JobDefinition {
    static let name = "wakeup-test"
    static let defaultSchedule = "@hourly"
    static var notifyChannel: String? { "wakeup_test" }

    static func readSettings(
        _ table: inout TableReader, file: String, worker: WorkerOptions
    ) throws(ConfigurationError) -> Bool {
        try table.bool("deadline", default: true)
    }

    static func make(_ asksDeadline: Bool, mail: (any MailTransport)?, mailOptions: MailOptions) -> Self { Self() }

    static func wakeups(_ asksDeadline: Bool) -> JobWakeups {
        guard asksDeadline else { return JobWakeups(notifyChannel: notifyChannel) }
        return JobWakeups(
            notifyChannel: notifyChannel, nextDeadline: { _, _, _ in DeadlineAnswer(secondsUntilNext: nil) },
            deadlineLookahead: .seconds(600))
    }

    static var appTablePrivileges: [String: RuntimeGrants.TablePrivileges] { [:] }
    static var appColumns: [SchemaCheck.AppTable] { [] }
    static var stats: [StatDeclaration] { [] }

    func run(_ context: JobContext) throws -> JobStats { JobStats() }
}
