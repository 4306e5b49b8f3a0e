import Postgres
import Testing

@testable import CaretakerCore
@testable import CaretakerJobs

/// `send-temp-passwords`' decision for one request (SPEC §3 steps 1–3, in order).
@Suite struct ResetDecisionTests {
    let request = ResetRequest(id: 1, email: "a@example.test", attempts: 0)
    let account = ResetAccount(id: 7, email: "a@example.test", displayName: "A")

    func decide(_ request: ResetRequest, _ account: ResetAccount?, recentSends: Int = 0) -> ResetDecision {
        ResetDecision.decide(request, account, recentSends: recentSends, maxPerHour: 3, maxAttempts: 5)
    }

    @Test("a live account with a valid address, under the rate limit, attempts left: send to it")
    func send() throws {
        #expect(decide(request, account) == .send(account, try MailAddress("a@example.test")))
    }

    @Test("no account, or a deleted one: ignored, whatever else is wrong")
    func noAccount() {
        let ignored = ResetDecision.settle(status: "ignored", reason: "no such account")
        #expect(decide(request, nil) == ignored)
        let deleted = ResetAccount(id: 7, email: "not an address", deleted: true)
        #expect(decide(ResetRequest(id: 1, email: "x", attempts: 9), deleted, recentSends: 9) == ignored)
    }

    @Test("max_per_hour: the third mail in an hour goes, the fourth is ignored as rate limited")
    func rateLimit() throws {
        #expect(decide(request, account, recentSends: 2) == .send(account, try MailAddress("a@example.test")))
        #expect(decide(request, account, recentSends: 3) == .settle(status: "ignored", reason: "rate limited"))
        let invalid = ResetAccount(id: 7, email: "not an address")
        #expect(
            decide(request, invalid, recentSends: 3) == .settle(status: "ignored", reason: "rate limited"),
            "the rate limit comes before the address check")
    }

    @Test("an address that is not one valid mailbox: failed, invalid address")
    func invalidAddress() {
        for email in ["not an address", "a@example.test, b@example.test"] {
            #expect(
                decide(request, ResetAccount(id: 7, email: email))
                    == .settle(status: "failed", reason: MailError.invalidAddress.description), "\(email)")
        }
    }

    @Test("attempts used up: failed with the last error, or a count when there is none")
    func attemptsUsedUp() throws {
        #expect(
            decide(ResetRequest(id: 1, email: "a@example.test", attempts: 4), account)
                == .send(account, try MailAddress("a@example.test")))
        #expect(
            decide(ResetRequest(id: 1, email: "a@example.test", attempts: 5, lastError: "smtp said no"), account)
                == .settle(status: "failed", reason: "smtp said no"))
        #expect(
            decide(ResetRequest(id: 1, email: "a@example.test", attempts: 6), account)
                == .settle(status: "failed", reason: "gave up after 6 attempts"))
    }
}

/// `leader-succession`'s decision once the eligible member is known.
@Suite struct SuccessionDecisionTests {
    @Test("the chosen member is appointed, as successor or by seniority")
    func appoint() {
        let successor = SuccessionDecision(
            previousLeader: 1, reason: "leader_left",
            chosen: .init(userID: 5, isSuccessor: true))
        #expect(
            successor
                == SuccessionDecision(previousLeader: 1, reason: "leader_left", newLeader: 5, chosenBy: "successor"))
        let senior = SuccessionDecision(
            previousLeader: nil, reason: "no_leader", chosen: .init(userID: 6, isSuccessor: false))
        #expect(senior?.newLeader == 6 && senior?.chosenBy == "seniority")
    }

    @Test("nobody eligible: archived, except that an inactive leader stays")
    func nobody() {
        for reason in ["no_leader", "leader_deleted", "leader_left"] {
            #expect(
                SuccessionDecision(previousLeader: 1, reason: reason, chosen: nil)
                    == SuccessionDecision(previousLeader: 1, reason: reason, newLeader: nil, chosenBy: "none"))
        }
        #expect(SuccessionDecision(previousLeader: 1, reason: "leader_inactive", chosen: nil) == nil)
    }

    @Test("each outcome counts under its counter; blocked ones are counted by the context, healthy ones not at all")
    func counters() {
        #expect(SuccessionOutcome.appointed.counter == "leaders_appointed")
        #expect(SuccessionOutcome.archived.counter == "communities_archived")
        #expect(SuccessionOutcome.skipped.counter == "communities_skipped")
        #expect(SuccessionOutcome.inactiveLeaderKept.counter == "inactive_leaders_kept")
        #expect(SuccessionOutcome.healthy.counter == nil && SuccessionOutcome.blocked.counter == nil)
    }
}

/// The keyset cursor the jobs page with.
@Suite struct KeysetCursorTests {
    @Test("starts before every row and moves past the last row of each batch")
    func advance() {
        var cursor = KeysetCursor(orderedBy: "created_at")
        #expect(cursor.parameters.map(\.postgresText) == ["-infinity", "\(Int64.min)"])
        cursor.advance(past: [
            Row(columns: ["id", "created_at"], values: ["4", "2024-01-01 00:00:00+00"]),
            Row(columns: ["id", "created_at"], values: ["9", "2024-01-02 00:00:00+00"]),
        ])
        #expect(cursor.parameters.map(\.postgresText) == ["2024-01-02 00:00:00+00", "9"])
        cursor.advance(past: [])
        #expect(cursor.parameters.map(\.postgresText) == ["2024-01-02 00:00:00+00", "9"], "an empty batch moved it")
    }

    @Test("ordered by id alone, its one parameter is the last id")
    func idOnly() {
        var cursor = KeysetCursor()
        #expect(cursor.parameters.map(\.postgresText) == ["\(Int64.min)"])
        cursor.advance(past: [Row(columns: ["id"], values: ["12"])])
        #expect(cursor.parameters.map(\.postgresText) == ["12"])
    }
}

/// `expire-content`'s choice between the index path and the page sweep, from a sample of the heap.
@Suite struct PostPathTests {
    @Test("a large table with a fifth or more of its sample due is swept; a little less stays on the index path")
    func share() {
        #expect(ExpireContent.postPath(pages: 2_000, sampled: 100, due: 20) == .sweep(pages: 2_000))
        #expect(ExpireContent.postPath(pages: 2_000, sampled: 100, due: 19) == .index)
        #expect(ExpireContent.postPath(pages: 50_000, sampled: 1_000, due: 1_000) == .sweep(pages: 50_000))
    }

    @Test("below 2,000 pages, or with nothing sampled, the index path")
    func smallOrEmpty() {
        #expect(ExpireContent.postPath(pages: 1_999, sampled: 100, due: 100) == .index)
        #expect(ExpireContent.postPath(pages: 2_000, sampled: 0, due: 0) == .index)
    }
}
