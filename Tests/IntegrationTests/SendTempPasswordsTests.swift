import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

/// `send-temp-passwords` against a real PostgreSQL and a real SMTP server (aiosmtpd).
@Suite struct SendTempPasswordsTests {
    let db: TestDatabase
    /// bcrypt cost 4 keeps the tests fast; `defaultCostMailArrives` uses the default once.
    static let cheap = "[jobs.send-temp-passwords]\nbcrypt_cost = 4\n"

    init() throws {
        db = try TestDatabase()
    }

    // MARK: Helpers

    func transport(_ url: String) throws -> SMTPTransport {
        try SMTPTransport(configuration: .init(url: url, connectTimeout: .seconds(3), timeout: .seconds(10)))
    }

    @discardableResult
    func user(_ email: String, name: String? = nil, deleted: Bool = false) throws -> Int64 {
        try db.connection.query(
            """
            INSERT INTO users (email, display_name, password_hash, deleted_at)
            VALUES ($1, $2, 'old-password-hash', CASE WHEN $3::boolean THEN now() END) RETURNING id
            """, email, name, deleted
        ).first!.int64("id")!
    }

    /// A pending request made `age` ago (an interval literal).
    @discardableResult
    func request(_ email: String, age: String = "0 seconds") throws -> Int64 {
        try db.connection.query(
            """
            INSERT INTO password_reset_requests (email, requested_at, next_attempt_at)
            VALUES ($1, now() - $2::interval, now() - $2::interval) RETURNING id
            """, email, age
        ).first!.int64("id")!
    }

    func requestRow(_ id: Int64) throws -> Row {
        try db.connection.query(
            """
            SELECT status, attempts, last_error, sent_at IS NOT NULL AS has_sent_at,
                   extract(epoch FROM next_attempt_at - now()) AS wait
            FROM password_reset_requests WHERE id = $1
            """, id
        ).first!
    }

    func userRow(_ id: Int64) throws -> Row {
        try db.connection.query(
            """
            SELECT password_hash, temp_password_hash, must_change_password, temp_password_expires_at::text AS expires,
                   extract(epoch FROM temp_password_expires_at - now()) AS ttl
            FROM users WHERE id = $1
            """, id
        ).first!
    }

    /// Makes every pending request due again (instead of waiting out the backoff).
    func makeDue() throws {
        try db.connection.query("UPDATE password_reset_requests SET next_attempt_at = now() WHERE status = 'pending'")
    }

    /// The password from the line `Temporary password: <pw>` of a received message.
    func password(in mail: ReceivedMail) throws -> String {
        let line = try #require(
            mail.body.components(separatedBy: "\r\n").first { $0.hasPrefix("Temporary password: ") })
        return String(line.dropFirst("Temporary password: ".count))
    }

    func verifiesWithCrypt(_ password: String, user id: Int64) throws -> Bool {
        try db.connection.query(
            """
            SELECT crypt($1, temp_password_hash) = temp_password_hash AS ok FROM users WHERE id = $2
            """, password, id
        ).first?.bool("ok") == true
    }

    func satisfiesPolicy(_ password: String, length: Int = 16) -> Bool {
        password.count == length
            && password.contains(where: \.isUppercase) && password.contains(where: \.isLowercase)
            && password.contains(where: \.isNumber) && password.contains(where: { "!@#$%^&*-_=+?".contains($0) })
            && !password.contains(where: { "0Oo1lI".contains($0) })
            && password.allSatisfy { TemporaryPassword.alphabet.contains($0) }
    }

    // MARK: Sending

    @Test("with the default bcrypt cost the mail arrives with its headers and a password pgcrypto verifies")
    func defaultCostMailArrives() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        let alice = try user("alice@example.org", name: "Alice Example")
        let req = try request("alice@example.org")

        let stats = try db.runSucceeding("send-temp-passwords", mail: try transport(server.url))
        #expect(stats["sent"] == 1 && stats["ignored"] == 0 && stats["failed"] == 0 && stats["retried"] == 0)

        let received = try server.waitForMessages(count: 1, timeout: .seconds(5))
        #expect(received.count == 1)
        let mail = try #require(received.first)
        #expect(mail.recipients == ["alice@example.org"])
        #expect(mail.mailFrom == "no-reply@example.org")
        for name in ["Date", "Message-ID", "From", "To", "Subject", "MIME-Version"] {
            #expect(mail.header(name) != nil, "missing \(name)")
        }
        #expect(mail.header("From") == "Community <no-reply@example.org>")
        #expect(mail.header("To") == "Alice Example <alice@example.org>")
        #expect(mail.header("Subject") == "Your temporary password")
        #expect(mail.header("MIME-Version") == "1.0")
        #expect(mail.header("Message-ID")?.hasSuffix("@example.org>") == true)
        #expect(mail.body.contains("Hello Alice Example,"))
        #expect(mail.body.contains("your Community account"))

        let pw = try password(in: mail)
        #expect(satisfiesPolicy(pw), "\(pw) breaks the policy")
        #expect(try verifiesWithCrypt(pw, user: alice))
        #expect(!(try verifiesWithCrypt(pw + "x", user: alice)))

        let account = try userRow(alice)
        #expect(account["password_hash"] == "old-password-hash")
        #expect(account["temp_password_hash"]?.hasPrefix("$2a$12$") == true)
        #expect(account.bool("must_change_password") == true)
        let ttl = try #require(account.double("ttl"))
        #expect(abs(ttl - 24 * 3600) < 60, "expiry is now() + 24h, got \(ttl)s")
        // The expiry in the body is the stored one, in UTC.
        let expiresInBody = try #require(
            try db.connection.query(
                """
                SELECT to_char(temp_password_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI "UTC"') AS t FROM users WHERE id = $1
                """, alice
            ).first?["t"])
        #expect(mail.body.contains("It works until \(expiresInBody)"))

        let row = try requestRow(req)
        #expect(row["status"] == "sent")
        #expect(row.bool("has_sent_at") == true)
        #expect(row.int("attempts") == 1)
        #expect(row["last_error"] == nil)
    }

    @Test("the configured TTL and password length are honoured")
    func configuredTTLAndLength() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        let bob = try user("bob@example.org")
        try request("bob@example.org")
        _ = try db.runSucceeding(
            "send-temp-passwords", Self.cheap + "temp_password_ttl = \"2h\"\ntemp_password_length = 20\n",
            mail: try transport(server.url))
        let mail = try #require(try server.waitForMessages(count: 1, timeout: .seconds(5)).first)
        let pw = try password(in: mail)
        #expect(satisfiesPolicy(pw, length: 20))
        #expect(try verifiesWithCrypt(pw, user: bob))
        #expect(abs(try #require(try userRow(bob).double("ttl")) - 7200) < 60)
        #expect(mail.header("To") == "bob@example.org", "no display name: the bare address")
        #expect(mail.body.contains("Hello bob@example.org,"))
    }

    @Test("unknown and deleted accounts are ignored without mail")
    func unknownAndDeletedAccounts() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        let carol = try user("carol@example.org", deleted: true)
        let unknown = try request("nobody@example.org")
        let deleted = try request("carol@example.org")
        let stats = try db.runSucceeding("send-temp-passwords", Self.cheap, mail: try transport(server.url))
        #expect(stats["ignored"] == 2 && stats["sent"] == 0)
        for id in [unknown, deleted] {
            let row = try requestRow(id)
            #expect(row["status"] == "ignored")
            #expect(row["last_error"] == "no such account")
            #expect(row.int("attempts") == 0)
        }
        #expect(try server.messages().isEmpty)
        #expect(try userRow(carol)["temp_password_hash"] == nil)
    }

    @Test("addresses match case-insensitively; the mail goes to the account's own address")
    func caseInsensitiveMatch() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        let dave = try user("Dave.Miller@Example.org", name: "Dave")
        let req = try request("dave.miller@EXAMPLE.ORG")
        let stats = try db.runSucceeding("send-temp-passwords", Self.cheap, mail: try transport(server.url))
        #expect(stats["sent"] == 1)
        let mail = try #require(try server.waitForMessages(count: 1, timeout: .seconds(5)).first)
        #expect(mail.recipients == ["Dave.Miller@Example.org"])
        #expect(try verifiesWithCrypt(try password(in: mail), user: dave))
        #expect(try requestRow(req)["status"] == "sent")
    }

    @Test("at most max_per_hour mails per address in an hour; older sends do not count")
    func rateLimit() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        try user("erin@example.org")
        // Sent more than an hour ago: outside the window.
        try db.connection.query(
            """
            INSERT INTO password_reset_requests (email, requested_at, status, attempts, sent_at)
            SELECT 'erin@example.org', now() - interval '2 hours', 'sent', 1, now() - interval '61 minutes'
            FROM generate_series(1, 3)
            """)
        let ids = try ["erin@example.org", "ERIN@example.org", "erin@example.org", "Erin@Example.org"].enumerated()
            .map { try request($0.element, age: "\(10 - $0.offset) seconds") }
        let stats = try db.runSucceeding("send-temp-passwords", Self.cheap, mail: try transport(server.url))
        #expect(stats["sent"] == 3 && stats["ignored"] == 1)
        #expect(try server.waitForMessages(count: 3, timeout: .seconds(5)).count == 3)
        #expect(try ids.prefix(3).map { try requestRow($0)["status"] } == ["sent", "sent", "sent"])
        let fourth = try requestRow(ids[3])
        #expect(fourth["status"] == "ignored")
        #expect(fourth["last_error"] == "rate limited")

        // Still limited on a later run within the hour.
        let fifth = try request("erin@example.org")
        #expect(
            try db.runSucceeding("send-temp-passwords", Self.cheap, mail: try transport(server.url))["ignored"] == 1)
        #expect(try requestRow(fifth)["last_error"] == "rate limited")
        #expect(try server.messages().count == 3)
    }

    @Test("a mail that went out but whose result was not recorded counts against max_per_hour")
    func unrecordedSendCounts() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        try user("gina@example.org")
        // What a run leaves when the mail went out and transaction B failed (or the
        // worker died mid-send): pending, in flight, attempted a minute ago.
        try db.connection.query(
            """
            INSERT INTO password_reset_requests (email, requested_at, attempts, next_attempt_at, last_error)
            VALUES ('gina@example.org', now() - interval '1 minute', 1, now() + interval '59 seconds',
                    'sending interrupted; delivery unknown')
            """)
        let fresh = try request("gina@example.org")
        let stats = try db.runSucceeding(
            "send-temp-passwords", Self.cheap + "max_per_hour = 1\n", mail: try transport(server.url))
        #expect(stats["ignored"] == 1 && stats["sent"] == 0, "\(stats)")
        #expect(try requestRow(fresh)["last_error"] == "rate limited")
        #expect(try server.messages().isEmpty)
    }

    @Test("a bcrypt_cost that takes longer than a transaction may idle still sends: the hash is made outside it")
    func slowHashOutsideTransaction() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        let alice = try user("alice@example.org")
        let req = try request("alice@example.org")
        // idle_in_transaction_session_timeout is 2 × statement_timeout = 100 ms; cost 13 hashes for far longer.
        let stats = try db.runSucceeding(
            "send-temp-passwords", "[jobs.send-temp-passwords]\nbcrypt_cost = 13\nstatement_timeout = \"50ms\"\n",
            mail: try transport(server.url))
        #expect(stats["sent"] == 1, "\(stats)")
        #expect(try requestRow(req)["status"] == "sent")
        let mail = try #require(try server.waitForMessages(count: 1, timeout: .seconds(5)).first)
        #expect(try verifiesWithCrypt(try password(in: mail), user: alice))
    }

    @Test("max_per_hour is configurable")
    func configuredRateLimit() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        try user("frank@example.org")
        try request("frank@example.org", age: "2 seconds")
        try request("frank@example.org", age: "1 second")
        let stats = try db.runSucceeding(
            "send-temp-passwords", Self.cheap + "max_per_hour = 1\n",
            mail: try transport(server.url))
        #expect(stats["sent"] == 1 && stats["ignored"] == 1)
    }

    @Test("an address carrying a header injection fails as 'invalid address' and nothing reaches the server")
    func headerInjection() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        let victim = try user("victim@example.org\r\nBcc: evil@x.test", name: "Victim")
        let req = try request("victim@example.org\r\nBcc: evil@x.test")
        let stats = try db.runSucceeding("send-temp-passwords", Self.cheap, mail: try transport(server.url))
        #expect(stats["failed"] == 1 && stats["sent"] == 0)
        let row = try requestRow(req)
        #expect(row["status"] == "failed")
        #expect(row["last_error"] == "invalid address")
        #expect(row.int("attempts") == 0)
        #expect(try userRow(victim)["temp_password_hash"] == nil)
        #expect(try server.messages().isEmpty)
    }

    @Test("requests are handled oldest first, across several batches")
    func oldestFirstInBatches() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        // Inserted newest first, so insertion order is not what we observe.
        for index in (0..<5).reversed() {
            try user("user\(index)@example.org")
            try request("user\(index)@example.org", age: "\(10 - index) minutes")
        }
        let stats = try db.runSucceeding(
            "send-temp-passwords", Self.cheap + "batch_size = 2\n",
            mail: try transport(server.url))
        #expect(stats["sent"] == 5)
        let received = try server.waitForMessages(count: 5, timeout: .seconds(5))
        #expect(received.flatMap(\.recipients) == (0..<5).map { "user\($0)@example.org" })
    }

    @Test("a request not yet due is left alone")
    func notYetDue() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        try user("gina@example.org")
        let req = try request("gina@example.org")
        try db.connection.query("UPDATE password_reset_requests SET next_attempt_at = now() + interval '5 minutes'")
        let stats = try db.runSucceeding("send-temp-passwords", Self.cheap, mail: try transport(server.url))
        #expect(stats["sent"] == 0)
        #expect(try requestRow(req)["status"] == "pending")
        #expect(try server.messages().isEmpty)
    }

    @Test("a request the app holds locked is skipped, not waited for, and handled next run")
    func lockedRequestIsSkipped() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        try user("hank@example.org")
        let req = try request("hank@example.org")
        let app = try TemporaryPostgres.shared.connect(database: db.name)
        try app.query("BEGIN")
        try app.query("SELECT 1 FROM password_reset_requests WHERE id = $1 FOR UPDATE", req)
        // A lock_timeout of a minute: a run that waited for the row would take that long
        // (or until the ROLLBACK below, which comes only after it returned).
        let started = ContinuousClock.now
        let stats = try db.runSucceeding(
            "send-temp-passwords", Self.cheap + "lock_timeout = \"60s\"\n", mail: try transport(server.url))
        let took = ContinuousClock.now - started
        #expect(took < .seconds(20), "took \(took): it waited for the locked request (lock_timeout 60 s)")
        #expect(stats["sent"] == 0)
        try app.query("ROLLBACK")
        #expect(try db.runSucceeding("send-temp-passwords", Self.cheap, mail: try transport(server.url))["sent"] == 1)
        #expect(try requestRow(req)["status"] == "sent")
    }

    // MARK: Failures and retries

    @Test("SMTP down: pending with backoff 1m, 2m, then failed after max_attempts; the account is left as it was")
    func smtpDownBacksOffThenFails() throws {
        let server = try TestSMTPServer.start()
        let url = server.url
        server.stop()
        let ivan = try user("ivan@example.org")
        let req = try request("ivan@example.org")
        let config = Self.cheap + "max_attempts = 3\n"

        let first = try db.runSucceeding("send-temp-passwords", config, mail: try transport(url))
        #expect(first["sent"] == 0 && first["failed"] == 0 && first["retried"] == 0 && first["deferred"] == 1)
        var row = try requestRow(req)
        #expect(row["status"] == "pending")
        #expect(row.int("attempts") == 1)
        #expect(
            row["last_error"]?.hasPrefix("could not connect to smtp://127.0.0.1:") == true,
            "\(row["last_error"] ?? "nil")")
        var wait = try #require(row.double("wait"))
        #expect(wait > 50 && wait <= 60, "first backoff is 1 minute, got \(wait)s")
        // The unsent password was taken back.
        let account = try userRow(ivan)
        #expect(account["temp_password_hash"] == nil)
        #expect(account.bool("must_change_password") == false)
        #expect(account["password_hash"] == "old-password-hash")

        // Not due yet: a run right away does not try again.
        #expect(try db.runSucceeding("send-temp-passwords", config, mail: try transport(url))["deferred"] == 0)
        #expect(try requestRow(req).int("attempts") == 1)

        try makeDue()
        let second = try db.runSucceeding("send-temp-passwords", config, mail: try transport(url))
        #expect(second["retried"] == 1 && second["deferred"] == 1)
        row = try requestRow(req)
        #expect(row["status"] == "pending" && row.int("attempts") == 2)
        wait = try #require(row.double("wait"))
        #expect(wait > 110 && wait <= 120, "second backoff is 2 minutes, got \(wait)s")

        try makeDue()
        let third = try db.runSucceeding("send-temp-passwords", config, mail: try transport(url))
        #expect(third["failed"] == 1 && third["retried"] == 1)
        row = try requestRow(req)
        #expect(row["status"] == "failed")
        #expect(row.int("attempts") == 3)
        #expect(row["last_error"]?.hasPrefix("could not connect") == true)
        #expect(try userRow(ivan)["temp_password_hash"] == nil)
    }

    @Test("a failed send restores the temporary password an earlier mail delivered")
    func failureRestoresPreviousTemporaryPassword() throws {
        let server = try TestSMTPServer.start()
        let url = server.url
        server.stop()
        let judy = try user("judy@example.org")
        try db.connection.query(
            """
            UPDATE users SET temp_password_hash = crypt('Earlier-Pass-42', gen_salt('bf', 4)),
                             temp_password_expires_at = now() + interval '10 hours', must_change_password = true
            WHERE id = $1
            """, judy)
        let before = try userRow(judy)
        try request("judy@example.org")
        #expect(try db.runSucceeding("send-temp-passwords", Self.cheap, mail: try transport(url))["deferred"] == 1)
        let after = try userRow(judy)
        #expect(after["temp_password_hash"] == before["temp_password_hash"])
        #expect(after["expires"] == before["expires"])
        #expect(after.bool("must_change_password") == true)
        #expect(try verifiesWithCrypt("Earlier-Pass-42", user: judy))
    }

    @Test("a 4xx rejection is retried and the retry mails a new password")
    func transientRejectionIsRetriedWithANewPassword() throws {
        let refusing = try TestSMTPServer.start(.init(rejectRecipientCode: 451))
        defer { refusing.stop() }
        let kim = try user("kim@example.org")
        let req = try request("kim@example.org")
        let first = try db.runSucceeding("send-temp-passwords", Self.cheap, mail: try transport(refusing.url))
        #expect(first["deferred"] == 1 && first["sent"] == 0)
        var row = try requestRow(req)
        #expect(row["status"] == "pending")
        #expect(row.int("attempts") == 1)
        #expect(row["last_error"] == "SMTP server refused the recipient (451)")

        let server = try TestSMTPServer.start()
        defer { server.stop() }
        try makeDue()
        let second = try db.runSucceeding("send-temp-passwords", Self.cheap, mail: try transport(server.url))
        #expect(second["sent"] == 1 && second["retried"] == 1)
        row = try requestRow(req)
        #expect(row["status"] == "sent" && row.int("attempts") == 2 && row["last_error"] == nil)
        let mail = try #require(try server.waitForMessages(count: 1, timeout: .seconds(5)).first)
        #expect(try verifiesWithCrypt(try password(in: mail), user: kim))
    }

    @Test("a request whose attempts are used up (e.g. a crash mid-send) fails without mail")
    func attemptsUsedUp() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        try user("lee@example.org")
        let req = try request("lee@example.org")
        try db.connection.query(
            """
            UPDATE password_reset_requests SET attempts = 5, last_error = 'sending interrupted; delivery unknown'
            WHERE id = $1
            """, req)
        let stats = try db.runSucceeding("send-temp-passwords", Self.cheap, mail: try transport(server.url))
        #expect(stats["failed"] == 1)
        let row = try requestRow(req)
        #expect(row["status"] == "failed")
        #expect(row["last_error"] == "sending interrupted; delivery unknown")
        #expect(try server.messages().isEmpty)
    }

    @Test("without a mail transport, a due send fails the run and changes nothing about it")
    func noTransport() throws {
        let mona = try user("mona@example.org")
        let req = try request("mona@example.org")
        let unknown = try request("nobody@example.org", age: "1 minute")
        let outcome = try db.run("send-temp-passwords", Self.cheap, mail: nil)
        guard case .finished(_, .failed, _, let error) = outcome else {
            Issue.record("expected a failed run, got \(outcome)")
            return
        }
        #expect(error == "a temporary password is due but no mail transport is configured ([mail])")
        #expect(try requestRow(req)["status"] == "pending")
        #expect(try requestRow(req).int("attempts") == 0)
        #expect(try userRow(mona)["temp_password_hash"] == nil)
        // What needed no mail was still settled.
        #expect(try requestRow(unknown)["status"] == "ignored")
    }

    // MARK: Expiry, dry run, template, secrecy

    @Test("expired temporary passwords are cleared; current ones are kept")
    func expiredPasswordsAreCleared() throws {
        let expired = try user("old@example.org")
        let current = try user("new@example.org")
        for (id, offset) in [(expired, "-1 minute"), (current, "1 hour")] {
            try db.connection.query(
                """
                UPDATE users SET temp_password_hash = 'h', temp_password_expires_at = now() + $2::interval,
                                 must_change_password = true WHERE id = $1
                """, id, offset)
        }
        let stats = try db.runSucceeding("send-temp-passwords", Self.cheap + "batch_size = 1\n")
        #expect(stats["temp_passwords_cleared"] == 1)
        let gone = try userRow(expired)
        #expect(gone["temp_password_hash"] == nil && gone["expires"] == nil)
        #expect(gone.bool("must_change_password") == false)
        #expect(gone["password_hash"] == "old-password-hash")
        let kept = try userRow(current)
        #expect(kept["temp_password_hash"] == "h" && kept.bool("must_change_password") == true)
    }

    @Test("a dry run counts what would happen and changes and sends nothing")
    func dryRun() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        try user("nina@example.org")
        try user("bad@example.org\r\nBcc: evil@x.test")
        let expired = try user("otto@example.org")
        try db.connection.query(
            """
            UPDATE users SET temp_password_hash = 'h', temp_password_expires_at = now() - interval '1 minute',
                             must_change_password = true WHERE id = $1
            """, expired)
        for (index, email) in [
            "nina@example.org", "nina@example.org", "nina@example.org", "nina@example.org",
            "nobody@example.org", "bad@example.org\r\nBcc: evil@x.test",
        ].enumerated() {
            try request(email, age: "\(10 - index) seconds")
        }
        let snapshot = """
            SELECT (SELECT string_agg(r::text, '|' ORDER BY id) FROM password_reset_requests r) AS requests,
                   (SELECT string_agg(u::text, '|' ORDER BY id) FROM users u) AS users
            """
        let before = try db.connection.query(snapshot).first!.values
        let stats = try db.runSucceeding(
            "send-temp-passwords", Self.cheap, dryRun: true, mail: try transport(server.url))
        #expect(stats["sent"] == 3, "the rate limit counts the sends the run would make")
        #expect(stats["ignored"] == 2)
        #expect(stats["failed"] == 1)
        #expect(stats["temp_passwords_cleared"] == 1)
        #expect(try db.connection.query(snapshot).first!.values == before)
        #expect(try server.messages().isEmpty)
    }

    @Test("a custom template_file supplies the subject and body")
    func customTemplate() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "caretaker-tpl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("reset.txt").path
        try """
        Subject: Password help for {{app_name}}

        Hi {{name}},
        Temporary password: {{password}}
        Valid until {{expires_at}}.
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let pat = try user("pat@example.org", name: "Pat")
        try request("pat@example.org")
        _ = try db.runSucceeding(
            "send-temp-passwords", Self.cheap + "template_file = \"\(path)\"\n",
            mail: try transport(server.url))
        let mail = try #require(try server.waitForMessages(count: 1, timeout: .seconds(5)).first)
        #expect(mail.header("Subject") == "Password help for Community")
        let lines = mail.body.components(separatedBy: "\r\n")
        #expect(lines.first == "Hi Pat,")
        #expect(lines.last(where: { !$0.isEmpty })?.hasPrefix("Valid until 20") == true)
        #expect(lines.last(where: { !$0.isEmpty })?.hasSuffix(" UTC.") == true)
        #expect(try verifiesWithCrypt(try password(in: mail), user: pat))
        #expect(!mail.body.contains("{{"))
    }

    @Test("the password appears in no log line, error, job_runs row or last_error")
    func passwordNeverLeaks() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        let refusing = try TestSMTPServer.start(.init(rejectDataCode: 554))
        defer { refusing.stop() }
        try user("quinn@example.org", name: "Quinn")
        try user("rita@example.org")
        try request("quinn@example.org", age: "2 seconds")
        try request("nobody@example.org", age: "1 second")
        let output = LineOutput.capturing()
        _ = try db.runSucceeding("send-temp-passwords", Self.cheap, mail: try transport(server.url), logOutput: output)
        let pw = try password(in: try #require(try server.waitForMessages(count: 1, timeout: .seconds(5)).first))

        // A failing send: the server receives the message (password included) and rejects it.
        try request("rita@example.org")
        let failing = LineOutput.capturing()
        _ = try db.runSucceeding(
            "send-temp-passwords", Self.cheap, mail: try transport(refusing.url), logOutput: failing)

        let lines = output.lines + failing.lines
        #expect(lines.contains { $0.contains("temporary password sent") })
        #expect(lines.contains { $0.contains("SMTP server rejected the message (554)") })
        #expect(!lines.contains { $0.contains(pw) })
        let runs = try db.connection.query(
            "SELECT coalesce(stats::text, '') || coalesce(error, '') AS t FROM caretaker.job_runs"
        ).rows
        #expect(runs.count == 2)
        #expect(!runs.contains { ($0["t"] ?? "").contains(pw) })
        let errors = try db.connection.query("SELECT last_error FROM password_reset_requests ORDER BY id").rows.map {
            $0["last_error"]
        }
        #expect(errors == [nil, "no such account", "SMTP server rejected the message (554)"])
        #expect(try db.count("SELECT count(*) FROM users WHERE temp_password_hash = $1 OR password_hash = $1", pw) == 0)
    }
}
