import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Synchronization
import Testing

/// `PoolerCheck` against a direct connection and a real PgBouncer in each pool mode.
@Suite struct PoolerCheckTests {
    /// A connector for `conninfo` with a 2 s connect (and answer) timeout.
    func connector(_ conninfo: String) throws -> DatabaseConnector {
        let text = "[database]\nurl = \"\(conninfo)\"\nconnect_timeout = \"2s\"\n"
        return try DatabaseConnector(options: ConfigurationLoader.parse(text, file: "test.toml").database)
    }

    /// Probes as `check` does: through a first connection the connector opened.
    func probe(_ conninfo: String) throws -> PoolerCheck.Verdict {
        let connector = try connector(conninfo)
        return try PoolerCheck.probe(connector.connect(), connector: connector)
    }

    @Test("a direct connection keeps its own session, and no pooler is seen")
    func direct() throws {
        let db = try TestDatabase(migrated: false)
        #expect(try probe(db.conninfo) == .ownSessions(pooled: false))
    }

    @Test("PgBouncer in session mode: own sessions, through a pooler (no false alarm)")
    func sessionMode() throws {
        let db = try TestDatabase(migrated: false)
        let bouncer = try TestPgBouncer(poolMode: .session)
        #expect(try probe(bouncer.conninfo(database: db.name)) == .ownSessions(pooled: true), "\(bouncer.log)")
    }

    @Test(
        "PgBouncer in transaction or statement mode, caretaker the only client: shared sessions",
        arguments: [
            TestPgBouncer.PoolMode.transaction, .statement,
        ])
    func sharingModes(_ mode: TestPgBouncer.PoolMode) throws {
        let db = try TestDatabase(migrated: false)
        let bouncer = try TestPgBouncer(poolMode: mode)
        let verdict = try probe(bouncer.conninfo(database: db.name))
        guard case .sharedSessions(let evidence) = verdict else {
            Issue.record("expected shared sessions, got \(verdict)")
            return
        }
        #expect(evidence.hasPrefix("two connections open at the same time both ran on server process"))
    }

    @Test("transaction mode while other clients hold server connections in open transactions")
    func transactionModeWithOpenTransactions() throws {
        let db = try TestDatabase(migrated: false)
        let bouncer = try TestPgBouncer(poolMode: .transaction, poolSize: 3)
        var holders: [Connection] = []
        for _ in 0..<2 {
            let holder = try Connection(.init(conninfo: bouncer.conninfo(database: db.name)))
            try holder.query("BEGIN")
            try holder.query("SELECT 1")
            holders.append(holder)
        }
        #expect(!(try probe(bouncer.conninfo(database: db.name)).keepsOwnSessions))
        for holder in holders { try holder.query("COMMIT") }
    }

    @Test("transaction mode while another client keeps running statements")
    func transactionModeUnderLoad() throws {
        let db = try TestDatabase(migrated: false)
        let bouncer = try TestPgBouncer(poolMode: .transaction)
        let conninfo = bouncer.conninfo(database: db.name)
        let stop = Atomic(false)
        let answered = Atomic(0)
        let failed = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let busy = try Connection(.init(conninfo: conninfo))
        // A thread of its own: the busy client keeps going whatever the test's tasks do.
        Thread.detachNewThread {
            while !stop.load(ordering: .relaxed) {
                do {
                    try busy.query("SELECT pg_sleep(0.001)")
                    answered.add(1, ordering: .relaxed)
                } catch {
                    failed.withLock { $0.append("\(error)") }
                }
            }
            done.signal()
        }
        defer {
            stop.store(true, ordering: .relaxed)
            done.wait()
        }
        // The busy client is running before the first probe, and keeps running through them.
        #expect(eventually { answered.load(ordering: .relaxed) > 0 }, "the busy client never got an answer")
        let before = answered.load(ordering: .relaxed)
        for _ in 0..<5 {
            let verdict = try probe(conninfo)
            #expect(!verdict.keepsOwnSessions, "\(verdict)")
            if case .inconclusive = verdict { Issue.record("\(verdict)") }
        }
        #expect(
            answered.load(ordering: .relaxed) > before, "no busy statement ran while the probes did: not under load")
        #expect(failed.withLock { $0 } == [], "the busy client's statements failed")
    }

    @Test(
        "a pool the first connection fills: the second gets no answer, and the probe gives up after connect_timeout",
        .timeLimit(.minutes(1)))
    func fullPoolDoesNotHang() throws {
        let db = try TestDatabase(migrated: false)
        let bouncer = try TestPgBouncer(poolMode: .session, poolSize: 1)
        let verdict = try probe(bouncer.conninfo(database: db.name))
        guard case .inconclusive(let reason) = verdict else {
            Issue.record("expected an inconclusive probe, got \(verdict)")
            return
        }
        #expect(reason == "a second connection got no answer: no answer from the server within 2 s")
    }
}
