import CaretakerConfig
import CaretakerDatabase
import CaretakerMail
import CaretakerMailFormat
import Logging
import Postgres

/// `send-temp-passwords`: mails a temporary password for each "forgot password"
/// request, and clears temporary passwords that have expired.
///
/// Each request is settled or claimed in transaction A (the new password's hash
/// stored and the request marked in flight), mailed outside any transaction,
/// and its result recorded in transaction B: no mail is lost and none is sent
/// twice. `docs/send-temp-passwords.md` explains the order and why it holds;
/// the decision for one request is `ResetDecision.decide`.
struct SendTempPasswords: Job {
    let settings: SendTempPasswordsSettings
    let mail: (any MailTransport)?
    let mailOptions: MailOptions

    func run(_ context: JobContext) throws -> JobStats {
        let pass = SendTempPasswordsPass(job: self, context: context)
        try pass.clearExpiredPasswords()
        try pass.handleDueRequests()
        return pass.stats
    }
}

/// One run of `send-temp-passwords`: its context, queries and counters.
private final class SendTempPasswordsPass {
    let settings: SendTempPasswordsSettings
    let mail: (any MailTransport)?
    let mailOptions: MailOptions
    let context: JobContext
    let queries: SendTempPasswordsQueries
    var stats = JobStats([
        ("sent", 0), ("ignored", 0), ("failed", 0), ("retried", 0),
        ("temp_passwords_cleared", 0), ("deferred", 0), ("requests_blocked", 0),
        ("temp_passwords_blocked", 0),
    ])
    /// Dry run only: mails this run would have sent, per lower-cased address,
    /// so the rate limit sees them.
    private var plannedSends: [String: Int] = [:]
    private var sender: Mailbox?

    init(job: SendTempPasswords, context: JobContext) {
        settings = job.settings
        mail = job.mail
        mailOptions = job.mailOptions
        self.context = context
        queries = SendTempPasswordsQueries(schema: context.schema)
    }

    // MARK: Expired temporary passwords

    func clearExpiredPasswords() throws {
        if context.dryRun {
            let due = try context.inBatch { try $0.query(queries.countExpired).first?.int("n") ?? 0 }
            stats.add("temp_passwords_cleared", due)
            return
        }
        // An account the app protects (a trigger, a lock) is cleared on its own, or left.
        try context.repeatBatches {
            let parameters: [any PostgresBindable] = [
                context.job.batchSize, context.blockedIDs("temp_passwords_blocked"),
            ]
            let batch = try context.changeBatch(
                queries.clearExpired, orOneByOne: queries.expiredUsers, parameters,
                counter: "temp_passwords_blocked"
            ) { connection, id in
                try connection.query(queries.clearExpiredOne, id).affectedRows
            }
            stats.add("temp_passwords_cleared", batch.changed)
            return batch.handled
        }
    }

    // MARK: Requests

    func handleDueRequests() throws {
        var cursor = KeysetCursor(orderedBy: "requested_at")
        try context.repeatBatches {
            let due = try context.inBatch { connection in
                try connection.query(queries.dueRequests, cursor.parameters + [context.job.batchSize]).rows
            }
            for request in due {
                if context.recordStopIfDue() { break }
                guard let id = request.int64("id") else { continue }
                try handle(request: id)
            }
            cursor.advance(past: due)
            return due.count
        }
    }

    /// One request, start to finish (`docs/send-temp-passwords.md` has the order and why).
    /// A request whose rows the app holds or protects waits for the next run (`requests_blocked`).
    private func handle(request id: Int64) throws {
        if context.dryRun { return try preview(request: id) }
        let claim: ClaimOutcome
        do {
            let password = try newPasswordIfDue(id)
            claim = try context.inBatch { try self.claimAndPrepare(id, password: password, on: $0) }
        } catch let error as PostgresError where error.isRowLevel {
            context.block("requests_blocked", id: id, error)
            return
        }
        switch claim {
        case .notDue:
            break
        case .settled(let status, let reason):
            stats.add(status)
            context.logger.info("reset request \(status)", metadata: ["request_id": "\(id)", "reason": "\(reason)"])
        case .send(let delivery):
            deliver(delivery)
        }
    }

    /// What transaction A decided.
    private enum ClaimOutcome {
        /// Not `pending`/due any more, locked by someone else, or the account changed meanwhile.
        case notDue
        /// `ignored` or `failed`, committed.
        case settled(status: String, reason: String)
        /// Password stored and request marked in flight, committed: now send.
        case send(Delivery)
    }

    /// Everything needed to send one message and record how it went.
    private struct Delivery {
        let requestID: Int64
        let userID: Int64
        let attemptsBefore: Int
        let transport: any MailTransport
        let message: MailMessage
        let newHash: String
        let previous: PreviousTemporaryPassword
    }

    /// The account's temporary-password columns before A, restored if the mail fails.
    private struct PreviousTemporaryPassword {
        let hash: String?
        let expiresAt: String?
        let mustChange: Bool
    }

    /// A temporary password and its bcrypt hash when a look at `id` (no locks) says
    /// a mail is due. Hashed here, before transaction A opens: at a high
    /// `bcrypt_cost` hashing takes longer than an open transaction may idle.
    private func newPasswordIfDue(_ id: Int64) throws -> NewPassword? {
        guard case .send? = try context.inBatch({ try self.peek(id, on: $0) }) else { return nil }
        _ = try mailSetup()
        let password = TemporaryPassword.generate(length: settings.tempPasswordLength)
        return NewPassword(plain: password, hash: try TemporaryPassword.bcryptHash(password, cost: settings.bcryptCost))
    }

    /// A password generated for one request, and its hash.
    private struct NewPassword {
        let plain: String
        let hash: String
    }

    /// Transaction A: locks the request, decides, and settles it or prepares the send.
    private func claimAndPrepare(_ id: Int64, password: NewPassword?, on connection: Connection) throws -> ClaimOutcome
    {
        guard let request = try connection.query(queries.claimRequest, id).first.map(ResetRequest.init) else {
            return .notDue
        }
        let account = try connection.query(queries.account, request.email).first.map(ResetAccount.init)
        let recent =
            try connection.query(queries.recentSends, request.email, SendTempPasswordsQueries.inFlight).first?.int("n")
            ?? 0
        switch ResetDecision.decide(
            request, account, recentSends: recent, maxPerHour: settings.maxPerHour,
            maxAttempts: settings.maxAttempts)
        {
        case .settle(let status, let reason):
            try connection.query(queries.settle, id, status, reason)
            return .settled(status: status, reason: reason)
        case .send(let account, let address):
            guard let password else {
                // The look without locks said otherwise a moment ago: decide again next run.
                return .notDue
            }
            return try prepareSend(request, account, address, password, on: connection)
        }
    }

    /// Transaction A, send branch: new password, stored hash, request in flight, the message.
    private func prepareSend(
        _ request: ResetRequest, _ account: ResetAccount, _ address: MailAddress,
        _ password: NewPassword, on connection: Connection
    ) throws -> ClaimOutcome {
        let (transport, from) = try mailSetup()
        let hash = password.hash
        guard
            let stored = try connection.query(
                queries.storePassword, account.id, account.email, hash,
                settings.tempPasswordTTL.microseconds
            ).first
        else {
            // Deleted or renamed between our read and the update: decide again next run.
            context.logger.info(
                "account changed meanwhile; request left for the next run",
                metadata: ["request_id": "\(request.id)"])
            return .notDue
        }
        try connection.query(queries.markInFlight, request.id, SendTempPasswordsQueries.inFlight)
        let message = makeMessage(
            from: from, to: account, address: address, password: password.plain,
            expiresAt: stored["expires_at"] ?? "")
        return .send(
            Delivery(
                requestID: request.id, userID: account.id, attemptsBefore: request.attempts, transport: transport,
                message: message,
                newHash: hash,
                previous: PreviousTemporaryPassword(
                    hash: stored["previous_hash"], expiresAt: stored["previous_expires_at"],
                    mustChange: stored.bool("previous_must_change") ?? false)))
    }

    /// Sends outside any transaction, then records the result (transaction B).
    private func deliver(_ delivery: Delivery) {
        if delivery.attemptsBefore > 0 { stats.add("retried") }
        let attempt = delivery.attemptsBefore + 1
        var metadata: [String: String] = [
            "request_id": "\(delivery.requestID)", "user_id": "\(delivery.userID)",
            "attempt": "\(attempt)",
        ]
        do {
            try delivery.transport.send(delivery.message)
        } catch {
            recordFailure(delivery, error, metadata: &metadata)
            return
        }
        do {
            _ = try context.inBatch { try $0.query(queries.recordSent, delivery.requestID) }
            stats.add("sent")
            context.logger.info("temporary password sent", metadata: metadata.logMetadata)
        } catch {
            // The mail went out but could not be recorded: the request stays in
            // flight and is retried after its backoff (a duplicate, never a loss).
            metadata["error"] = "\(error)"
            context.logger.error(
                "mail sent but not recorded; the request will be retried", metadata: metadata.logMetadata)
        }
    }

    private func recordFailure(_ delivery: Delivery, _ error: MailError, metadata: inout [String: String]) {
        metadata["error"] = error.description
        do {
            let status = try context.inBatch { connection in
                try connection.query(
                    queries.recordFailure, delivery.requestID, error.description,
                    settings.maxAttempts, error.kind == .invalidAddress
                ).first?["status"] ?? "pending"
            }
            stats.add(status == "failed" ? "failed" : "deferred")
            metadata["status"] = status
            context.logger.warning(
                status == "failed"
                    ? "temporary password mail failed; giving up"
                    : "temporary password mail failed; will retry",
                metadata: metadata.logMetadata)
        } catch {
            metadata["record_error"] = "\(error)"
            context.logger.error(
                "could not record a failed mail; the request will be retried", metadata: metadata.logMetadata)
        }
        restorePreviousPassword(delivery)
    }

    /// Best effort: a failure here leaves the unsent password's hash in place,
    /// which no one knows and which expires with `temp_password_ttl`.
    private func restorePreviousPassword(_ delivery: Delivery) {
        do {
            _ = try context.inBatch { connection in
                try connection.query(
                    queries.restorePassword, delivery.userID, delivery.newHash, delivery.previous.hash,
                    delivery.previous.expiresAt, delivery.previous.mustChange)
            }
        } catch {
            context.logger.warning(
                "could not restore the previous temporary password",
                metadata: ["request_id": "\(delivery.requestID)", "error": "\(error)"])
        }
    }

    // MARK: Dry run

    /// Decides `id` like transaction A, without locking anything; `nil` when it is not pending and due.
    private func peek(_ id: Int64, on connection: Connection) throws -> ResetDecision? {
        guard let request = try connection.query(queries.peekRequest, id).first.map(ResetRequest.init) else {
            return nil
        }
        let account = try connection.query(queries.account, request.email).first.map(ResetAccount.init)
        let recent =
            try connection.query(queries.recentSends, request.email, SendTempPasswordsQueries.inFlight).first?.int("n")
            ?? 0
        let decision = ResetDecision.decide(
            request, account,
            recentSends: recent + plannedSends[request.email.lowercased(), default: 0],
            maxPerHour: settings.maxPerHour, maxAttempts: settings.maxAttempts)
        if context.dryRun, case .send = decision {
            plannedSends[request.email.lowercased(), default: 0] += 1
            if request.attempts > 0 { stats.add("retried") }
        }
        return decision
    }

    /// Decides like a real run, without locking, changing or sending anything.
    private func preview(request id: Int64) throws {
        let outcome = try context.inBatch { try self.peek(id, on: $0) }
        switch outcome {
        case .settle(let status, _): stats.add(status)
        case .send: stats.add("sent")
        case nil: break
        }
    }

    // MARK: Mail

    /// The transport and the parsed `from`; throws when a send is due but mail is not set up.
    private func mailSetup() throws -> (any MailTransport, Mailbox) {
        guard let mail else { throw SendTempPasswordsError.noTransport }
        if let sender { return (mail, sender) }
        do {
            let parsed = try Mailbox(parsing: mailOptions.from)
            sender = parsed
            return (mail, parsed)
        } catch {
            throw SendTempPasswordsError.badFrom(error.description)
        }
    }

    private func makeMessage(
        from: Mailbox, to account: ResetAccount, address: MailAddress,
        password: String, expiresAt: String
    ) -> MailMessage {
        let displayName = account.displayName.flatMap { $0.isEmpty ? nil : $0 }
        // A display name the header cannot carry (a control character) is dropped, not the mail.
        let recipient =
            (try? Mailbox(displayName: displayName, address: address))
            ?? (try! Mailbox(address: address))
        let text = settings.template.render(
            name: recipient.displayName ?? address.address, password: password,
            expiresAt: expiresAt, appName: Self.appName(from: from))
        return MailMessage(from: from, to: recipient, subject: text.subject, body: text.body)
    }

    /// `{{app_name}}`: the display name of `from` ("Community <no-reply@…>" →
    /// "Community"), else the sender's domain.
    static func appName(from sender: Mailbox) -> String {
        sender.displayName ?? String(sender.address.domain)
    }
}

/// Why a run could not send at all; fails the run with this message.
enum SendTempPasswordsError: Error, CustomStringConvertible {
    case noTransport
    case badFrom(String)

    var description: String {
        switch self {
        case .noTransport: "a temporary password is due but no mail transport is configured ([mail])"
        case .badFrom(let reason): "mail.from is not a valid mailbox: \(reason)"
        }
    }
}

private extension Dictionary where Key == String, Value == String {
    var logMetadata: [String: Logger.MetadataValue] { mapValues { .string($0) } }
}
