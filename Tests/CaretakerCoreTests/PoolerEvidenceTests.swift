import CaretakerCore
import Testing

/// `PoolerCheck`'s decision from the server process ids it saw, without a database.
@Suite struct PoolerEvidenceTests {
    func check(_ observations: [(PoolerCheck.Side, Int)]) -> PoolerCheck {
        var check = PoolerCheck()
        for (side, pid) in observations { check.observe(side, serverPID: pid) }
        return check
    }

    @Test("each connection on a process of its own, every time: no evidence")
    func ownSessions() {
        #expect(check([]).evidence == nil)
        #expect(check([(.first, 10)]).evidence == nil)
        #expect(check([(.first, 10), (.second, 11), (.first, 10), (.second, 11), (.first, 10)]).evidence == nil)
    }

    @Test("two connections open at once on the same server process prove a pooler")
    func sameProcessForBoth() {
        #expect(
            check([(.first, 10), (.second, 10)]).evidence
                == "two connections open at the same time both ran on server process 10")
        #expect(
            check([(.first, 10), (.second, 11), (.first, 11)]).evidence?.hasPrefix("one connection's") == true,
            "a connection that moved is named first")
    }

    @Test("one connection moving to another server process proves a pooler, on either side")
    func connectionMoved() {
        #expect(
            check([(.first, 10), (.second, 11), (.first, 12)]).evidence
                == "one connection's statements ran on server processes 10, 12")
        #expect(
            check([(.first, 10), (.second, 11), (.first, 10), (.second, 12), (.first, 10), (.second, 11)]).evidence
                == "one connection's statements ran on server processes 11, 12")
    }

    @Test("the verdicts' sentences: the problem names the cause and both fixes")
    func sentences() {
        let shared = PoolerCheck.Verdict.sharedSessions(
            evidence: "two connections open at the same time both ran on server process 10")
        #expect(!shared.keepsOwnSessions)
        #expect(
            "\(shared)".contains(
                "pooler in transaction or statement mode (two connections open at the same time both ran on server process 10)"
            ))
        #expect("\(shared)".contains("set pool_mode = session"))
        #expect("\(shared)".contains("connect caretaker to PostgreSQL directly"))
        #expect(PoolerCheck.Verdict.ownSessions(pooled: true).keepsOwnSessions)
        #expect("\(PoolerCheck.Verdict.ownSessions(pooled: true))".contains("through a pooler in session mode"))
        #expect("\(PoolerCheck.Verdict.ownSessions(pooled: false))".contains("no pooler seen"))
        let unknown = PoolerCheck.Verdict.inconclusive(reason: "a second connection failed: too many clients")
        #expect(!unknown.keepsOwnSessions)
        #expect("\(unknown)".hasPrefix("could not tell whether a pooler shares server sessions"))
    }
}
