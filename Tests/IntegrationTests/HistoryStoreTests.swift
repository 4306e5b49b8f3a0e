import CaretakerCore
import CaretakerTestSupport
import Foundation
import Logging
import Postgres
import Testing

/// The history's stores by role (`RunRecorder` writes, `RunHistory` reads, `AlertStates`),
/// the only owners of SQL on caretaker's tables: their error rules, the typed row, and
/// that nobody else writes that SQL.
@Suite struct HistoryStoreTests {
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    @Test("an insert that hands back no id throws, for a run, a skipped slot and missed slots alike")
    func insertWithoutID() throws {
        let db = try TestDatabase()
        // A trigger that swallows every new row: INSERT … RETURNING id then returns no row.
        try db.connection.execute(
            script: """
                CREATE FUNCTION swallow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
                CREATE TRIGGER swallow BEFORE INSERT ON caretaker.job_runs FOR EACH ROW EXECUTE FUNCTION swallow();
                """)
        let store = RunRecorder(db.connection)
        let past = Date(timeIntervalSince1970: 1_700_000_000)
        func isMissingID(_ error: any Error) -> Bool {
            "\(error)".contains("gave no id") && (error as? PostgresError)?.kind == .query
        }
        #expect(
            performing: {
                try store.startRun(job: "tick", trigger: .manual, slot: nil, dryRun: false, attempt: 1)
            }, throws: isMissingID)
        #expect(
            performing: {
                try store.recordSkipped(job: "tick", trigger: .schedule, slot: past, reason: "test")
            }, throws: isMissingID)
        #expect(
            performing: {
                try store.recordMissed(
                    job: "tick", count: 2, first: past, last: past.addingTimeInterval(60), reason: "test")
            }, throws: isMissingID)

        // Through the runner: the skipped slot is claimed, then the failure reaches the caller.
        let configuration = try db.configuration("[jobs.tick]\nschedule = \"@hourly\"\nsql = \"SELECT 1\"\n")
        let runner = JobRunner(configuration: configuration, mail: nil, logger: Logger(label: "test"))
        let job = try #require(configuration.job(named: "tick"))
        #expect(
            performing: {
                try runner.recordSkippedSlot(job: job, slot: past, reason: .noFreePlace, on: db.connection)
            }, throws: isMissingID)
    }

    @Test(
        "a slot is recorded skipped only when a run was going as it came: running, holding the lock, or finished after it"
    )
    func skipOnlyWhileARunWasGoing() throws {
        let db = try TestDatabase()
        let configuration = try db.configuration("[jobs.tick]\nschedule = \"@hourly\"\nsql = \"SELECT 1\"\n")
        let runner = JobRunner(configuration: configuration, mail: nil, logger: Logger(label: "test"))
        let job = try #require(configuration.job(named: "tick"))
        let store = RunRecorder(db.connection)
        func now() throws -> Double {
            try #require(
                try db.connection.query("SELECT extract(epoch FROM clock_timestamp())::float8 AS t").first?.double("t"))
        }
        func skip(at seconds: Double) throws -> Bool {
            let outcome = try runner.recordSkippedSlot(
                job: job, slot: Date(timeIntervalSince1970: seconds), on: db.connection)
            if case .skipped = outcome { return true }
            return false
        }
        func ended(at seconds: Double) throws -> Bool {
            let outcome = try runner.recordSkippedSlot(
                job: job, slot: Date(timeIntervalSince1970: seconds), on: db.connection)
            if case .previousRunEnded = outcome { return true }
            return false
        }

        // No run ever: nothing was going.
        #expect(try ended(at: try now() - 30))
        // A run that is going: a slot that came meanwhile is skipped.
        let runID = try store.startRun(job: "tick", trigger: .schedule, slot: nil, dryRun: false, attempt: 1)
        #expect(try skip(at: try now() - 20))
        // Finished: a slot before its end was skipped; one after it was not.
        let beforeEnd = try now() - 0.001
        try store.finishRun(runID, status: .succeeded, stats: JobStats(), error: nil)
        Thread.sleep(forTimeInterval: 0.02)
        #expect(try skip(at: beforeEnd))
        let afterEnd = try now() - 0.001
        #expect(try ended(at: afterEnd))
        // Nothing was claimed for it: the run that takes it instead finds it free.
        #expect(try store.claimSlot(Date(timeIntervalSince1970: afterEnd), job: "tick") == .claimed)
        // Another session holds the job's lock (a run between taking it and its row): skipped.
        let holder = try TemporaryPostgres.shared.connect(database: db.name)
        #expect(try RunRecorder(holder).tryLock(job: "tick"))
        #expect(try skip(at: try now() - 0.001))
        RunRecorder(holder).unlock(job: "tick")
        #expect(try ended(at: try now() - 0.001))
    }

    @Test("finishing a run with releasingLock lets go of the job's lock in that statement; without, the lock stays")
    func finishReleasesLock() throws {
        let db = try TestDatabase()
        let store = RunRecorder(db.connection)
        let other = RunRecorder(try TemporaryPostgres.shared.connect(database: db.name))
        #expect(try store.tryLock(job: "tick"))
        let runID = try store.startRun(job: "tick", trigger: .manual, slot: nil, dryRun: false, attempt: 1)
        try store.finishRun(runID, status: .succeeded, stats: JobStats(), error: nil)
        #expect(try !other.tryLock(job: "tick"), "finishing without releasingLock kept the lock")
        let second = try store.startRun(job: "tick", trigger: .manual, slot: nil, dryRun: false, attempt: 1)
        try store.finishRun(second, status: .succeeded, stats: JobStats(), error: nil, releasingLock: true)
        #expect(try other.tryLock(job: "tick"))
        #expect(try db.count("SELECT count(*) FROM caretaker.job_runs WHERE status = 'succeeded'") == 2)
    }

    @Test("a slot is not due before the database clock reaches it, claimed once, taken after, and answered by its run")
    func slots() throws {
        let db = try TestDatabase()
        let store = RunRecorder(db.connection)
        let now = try #require(
            try db.connection.query("SELECT extract(epoch FROM clock_timestamp())::float8 AS t").first?.double("t"))
        #expect(try store.claimSlot(Date(timeIntervalSince1970: now + 3600), job: "tick") == .notDue)
        let slot = Date(timeIntervalSince1970: (now - 60).rounded(.down))
        #expect(try store.claimSlot(slot, job: "tick") == .claimed)
        #expect(try store.claimSlot(slot, job: "tick") == .taken)
        let runID = try store.recordSkipped(job: "tick", trigger: .schedule, slot: slot, reason: "test")
        try store.attach(runID: runID, toSlot: slot, job: "tick")
        #expect(try db.count("SELECT run_id FROM caretaker.job_slots WHERE job = 'tick'") == Int(runID))
        #expect(try store.lastLookedAfter(job: "tick") == slot)
        #expect(try store.lastLookedAfter(job: "other") == nil)
    }

    @Test("every status and trigger is stored as the table's text and read back as the same case")
    func typedRoundTrip() throws {
        let db = try TestDatabase()
        let recorder = RunRecorder(db.connection)
        var written: [Int64: (RunTrigger, RunStatus)] = [:]
        for (index, trigger) in RunTrigger.allCases.enumerated() {
            let status = RunStatus.allCases[index % RunStatus.allCases.count]
            let runID = try recorder.startRun(job: "tick", trigger: trigger, slot: nil, dryRun: false, attempt: 1)
            if status != .running { try recorder.finishRun(runID, status: status, stats: JobStats(), error: nil) }
            written[runID] = (trigger, status)
        }
        // More triggers than statuses: every status was written at least once.
        #expect(Set(written.values.map(\.1)) == Set(RunStatus.allCases))
        let read = try RunHistory(db.connection).recent(.init(job: "tick", limit: 100))
        #expect(read.count == RunTrigger.allCases.count)
        for record in read {
            #expect(record.trigger == written[record.id]?.0)
            #expect(record.status == written[record.id]?.1)
        }
        for status in RunStatus.allCases {
            let filtered = try RunHistory(db.connection).recent(.init(status: status, limit: 100))
            #expect(!filtered.isEmpty && filtered.allSatisfy { $0.status == status })
        }
    }

    @Test("a status or trigger this caretaker does not know is refused with the row, the column and the value")
    func unknownValue() throws {
        let db = try TestDatabase()
        let recorder = RunRecorder(db.connection)
        let known = try recorder.startRun(job: "tick", trigger: .manual, slot: nil, dryRun: false, attempt: 1)
        try recorder.finishRun(known, status: .failed, stats: JobStats(), error: "boom")
        // A newer caretaker's migration widened the table's checks and wrote a value this one does not know.
        try db.connection.execute(
            script: """
                ALTER TABLE caretaker.job_runs DROP CONSTRAINT job_runs_status_check;
                ALTER TABLE caretaker.job_runs DROP CONSTRAINT job_runs_trigger_check;
                """)
        let paused = try #require(
            try db.connection.query(
                """
                INSERT INTO caretaker.job_runs (job, trigger, status, host, pid)
                VALUES ('tick', 'manual', 'paused', 'h', 1) RETURNING id
                """
            ).first?.int64("id"))
        let history = RunHistory(db.connection)
        #expect(
            throws: UnknownHistoryValue(column: "status", value: "paused", runID: paused),
            performing: { try history.recent(.init(job: "tick")) })
        #expect(
            throws: UnknownHistoryValue(column: "status", value: "paused", runID: paused),
            performing: { try history.latest(.anyRow, job: "tick") })
        let message = UnknownHistoryValue(column: "status", value: "paused", runID: paused).description
        #expect(message.contains("run \(paused) in the run history") && message.contains("status 'paused'"))
        #expect(message.contains("newer caretaker"))
        // Reads that only pick known statuses are not disturbed by it.
        #expect(try history.latest(.finished, job: "tick")?.status == .failed)
        #expect(try history.facts(jobs: ["tick"], blockedRuns: 3)["tick"]?.lastStatus == .failed)

        try db.connection.query(
            "UPDATE caretaker.job_runs SET status = 'failed', trigger = 'cron' WHERE id = $1", paused)
        #expect(
            throws: UnknownHistoryValue(column: "trigger", value: "cron", runID: paused),
            performing: { try history.recent(.init(job: "tick")) })
    }

    @Test("one statement reads the facts of every job, each as its own rows say, and a job without rows gets none")
    func factsOfEveryJob() throws {
        let db = try TestDatabase()
        let recorder = RunRecorder(db.connection)
        func run(_ job: String, _ status: RunStatus, stats: String = "{}", dryRun: Bool = false) throws {
            let id = try recorder.startRun(job: job, trigger: .manual, slot: nil, dryRun: dryRun, attempt: 1)
            var counters = JobStats()
            if stats != "{}" { counters.add("posts_blocked", 2) }
            try recorder.finishRun(id, status: status, stats: counters, error: status == .failed ? "boom" : nil)
        }
        try run("a", .succeeded)
        try run("a", .failed)
        try run("a", .succeeded, dryRun: true)
        for _ in 0..<3 { try run("b", .succeeded, stats: "blocked") }
        let before = db.connection.statementsSent
        let facts = try RunHistory(db.connection).facts(jobs: ["a", "b", "c"], blockedRuns: 3)
        #expect(db.connection.statementsSent == before + 1)
        let a = try #require(facts["a"])
        #expect(a.lastStatus == .failed && a.lastError == "boom")
        #expect(a.lastSuccess != nil && a.lastRun != nil && a.lastSuccess! < a.lastRun!)
        #expect(a.firstSeen != nil && a.recentRuns == 2 && a.recentBlocked == 0)
        let b = try #require(facts["b"])
        #expect(b.lastStatus == .succeeded && b.recentRuns == 3 && b.recentBlocked == 3)
        #expect(b.latestBlocked == "posts_blocked=2")
        let c = try #require(facts["c"])
        #expect(c.lastStatus == nil && c.lastSuccess == nil && c.firstSeen == nil && c.recentRuns == 0)
    }

    @Test(
        "no source file but the history's stores (History/RunRecorder.swift, RunHistory.swift, AlertStates.swift, PrunableRows.swift) and the migrations names caretaker's tables in SQL"
    )
    func oneOwner() throws {
        let tables = ["caretaker.job_runs", "caretaker.job_slots", "caretaker.job_alerts"]
        let owners = ["RunRecorder.swift", "RunHistory.swift", "AlertStates.swift", "PrunableRows.swift"]
        var offenders: [String] = []
        let files = try #require(FileManager.default.enumerator(atPath: Self.sources.path))
        for case let path as String in files where path.hasSuffix(".swift") {
            if owners.contains(where: { path.hasSuffix("CaretakerDatabase/History/" + $0) })
                || path.contains("/Migrations/")
            {
                continue
            }
            let text = try String(contentsOf: Self.sources.appendingPathComponent(path), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                // Doc comments and help texts may name the tables; SQL may not.
                if code.hasPrefix("//") || code.contains("abstract:") { continue }
                if tables.contains(where: { code.contains($0) }) { offenders.append("\(path):\(number + 1): \(code)") }
            }
        }
        #expect(offenders.isEmpty, "\(offenders.joined(separator: "\n"))")
        for owner in owners {
            #expect(
                FileManager.default.fileExists(
                    atPath: Self.sources.appendingPathComponent("CaretakerDatabase/History/" + owner).path))
        }
    }
}
