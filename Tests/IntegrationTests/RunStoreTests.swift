import CaretakerCore
import CaretakerTestSupport
import Foundation
import Logging
import Postgres
import Testing

/// `RunStore`, the one owner of SQL on caretaker's tables: its error rule, and that nobody else writes that SQL.
@Suite struct RunStoreTests {
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
        let store = RunStore(db.connection)
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
        let store = RunStore(db.connection)
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
        #expect(try RunStore(holder).tryLock(job: "tick"))
        #expect(try skip(at: try now() - 0.001))
        RunStore(holder).unlock(job: "tick")
        #expect(try ended(at: try now() - 0.001))
    }

    @Test("finishing a run with releasingLock lets go of the job's lock in that statement; without, the lock stays")
    func finishReleasesLock() throws {
        let db = try TestDatabase()
        let store = RunStore(db.connection)
        let other = RunStore(try TemporaryPostgres.shared.connect(database: db.name))
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
        let store = RunStore(db.connection)
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

    @Test(
        "no source file but RunStore's (History/RunStore.swift, Monitoring/RunStore+Monitoring.swift) and the migrations names caretaker's tables in SQL"
    )
    func oneOwner() throws {
        let tables = ["caretaker.job_runs", "caretaker.job_slots", "caretaker.job_alerts"]
        var offenders: [String] = []
        let files = try #require(FileManager.default.enumerator(atPath: Self.sources.path))
        for case let path as String in files where path.hasSuffix(".swift") {
            if path.hasSuffix("History/RunStore.swift") || path.hasSuffix("Monitoring/RunStore+Monitoring.swift")
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
        #expect(
            FileManager.default.fileExists(
                atPath: Self.sources.appendingPathComponent("CaretakerCore/History/RunStore.swift").path))
    }
}
