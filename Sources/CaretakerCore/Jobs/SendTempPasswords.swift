#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Postgres

/// `send-temp-passwords`: mails a temporary password for each "forgot password"
/// request (SPEC §3), and clears temporary passwords that have expired.
///
/// Each run first clears expired temporary passwords (in batches), then walks the
/// `pending` requests whose `next_attempt_at <= now()`, oldest `requested_at`
/// first, `batch_size` candidates at a time. Every request is handled on its own:
///
/// 1. **Transaction A** locks the request (`FOR UPDATE SKIP LOCKED`: one the app
///    holds is left for the next run) and decides, in SPEC order: no account or a
///    deleted one → `ignored` / "no such account"; `max_per_hour` already `sent` to
///    the address in the last hour (counting mails that went out but whose result
///    could not be recorded) → `ignored` / "rate limited"; an address that is
///    not a single valid mailbox → `failed` / "invalid address"; attempts used up
///    → `failed`. Those outcomes commit right away, no mail.
///    For a send, A stores the bcrypt hash of a new password (CSPRNG; generated and
///    hashed before A opens, since a high `bcrypt_cost` outlasts a transaction) with
///    `temp_password_expires_at = now() + temp_password_ttl` and
///    `must_change_password = true` (never `password_hash`), and marks the request
///    *in flight*: `attempts + 1`, `next_attempt_at` pushed out by the backoff of
///    that attempt, `last_error = 'sending interrupted; delivery unknown'`. Commit.
/// 2. **The mail** goes out after the commit, outside any transaction: no row lock
///    is held while an SMTP server takes its time.
/// 3. **Transaction B** records the result: `sent` + `sent_at`; or `last_error` =
///    the transport's secret-free description and `next_attempt_at = now() +
///    1m × 2^(attempts − 1)` (1m, 2m, 4m, … capped at a day), `failed` once
///    `max_attempts` are used. After a failure the account gets back the
///    temporary-password state it had before A (only if our hash is still there),
///    so a mail that never arrived does not cost the user a temporary password
///    an earlier mail did deliver.
///
/// Why no mail is lost and none is sent twice:
/// - The password is stored *before* the mail leaves, so a delivered password
///   always works.
/// - The request is marked in flight in the same commit, before sending. If the
///   worker dies while sending, or B cannot be written, the request is still
///   `pending` but not due again until the backoff has passed: it is retried
///   (a mail is never lost), but never in a tight loop, and the row says why.
///   The one duplicate SMTP allows — a crash after the server accepted the mail
///   but before B — costs the user one extra mail with a fresh password, never
///   a lost one; `attempts` bounds how often that can happen.
/// - A request is decided by exactly one transaction holding its row lock, and
///   only `pending`, due rows are claimed, so two runs (or a run and a retry of
///   itself) never both send for it; `next_attempt_at` in the future makes a
///   concurrent claim skip it too.
///
/// The plain password exists only in memory and in the message: it is never
/// logged, stored, or put in an error, `last_error` or `job_runs`.
///
/// Stats: `sent`, `ignored`, `failed`, `retried` (mail attempts that were
/// retries, i.e. `attempts > 0` before, whatever their result),
/// `temp_passwords_cleared`, and `deferred` (failed sends left `pending` for a
/// later attempt). A dry run changes nothing and sends nothing; it counts what
/// a real run would do now (`sent` = would be mailed).
struct SendTempPasswords: Job {
    let settings: SendTempPasswordsSettings
    let mail: (any MailTransport)?
    let mailOptions: MailOptions

    func run(_ context: JobContext) throws -> JobStats {
        let pass = TempPasswordPass(job: self, context: context)
        try pass.clearExpiredPasswords()
        try pass.handleDueRequests()
        return try context.finish(pass.stats)
    }
}

/// The state of one run of `send-temp-passwords`.
private final class TempPasswordPass {
    let settings: SendTempPasswordsSettings
    let mail: (any MailTransport)?
    let mailOptions: MailOptions
    let context: JobContext
    let sql: TempPasswordSQL
    var stats = JobStats([("sent", 0), ("ignored", 0), ("failed", 0), ("retried", 0),
                          ("temp_passwords_cleared", 0), ("deferred", 0), ("requests_blocked", 0),
                          ("temp_passwords_blocked", 0)])
    /// Dry run only: mails this run would have sent, per lower-cased address,
    /// so the rate limit sees them.
    private var plannedSends: [String: Int] = [:]
    private var sender: Mailbox?

    init(job: SendTempPasswords, context: JobContext) {
        settings = job.settings
        mail = job.mail
        mailOptions = job.mailOptions
        self.context = context
        sql = TempPasswordSQL(schema: context.schema)
    }

    // MARK: Expired temporary passwords

    func clearExpiredPasswords() throws {
        if context.dryRun {
            let due = try context.inBatch { try $0.query(sql.countExpired).first?.int("n") ?? 0 }
            stats.add("temp_passwords_cleared", due)
            return
        }
        while !context.shouldStop {
            let parameters: [any PostgresBindable] = [context.job.batchSize, context.blockedIDs("temp_passwords_blocked")]
            let handled: Int
            do {
                handled = try context.inBatch { try $0.query(sql.clearExpired, parameters).affectedRows }
                stats.add("temp_passwords_cleared", handled)
            } catch let error as PostgresError where error.isRowLevel {
                // An account the app protects (a trigger, a lock): the batch again, one account at a time.
                let users = try context.inBatch { try $0.query(sql.expiredUsers, parameters).rows.compactMap { $0.int64("id") } }
                handled = users.count
                let cleared = try context.oneByOne(users, counter: "temp_passwords_blocked") { connection, id in
                    try connection.query(sql.clearExpiredOne, id).affectedRows
                }
                stats.add("temp_passwords_cleared", cleared.reduce(0, +))
            }
            if handled < context.job.batchSize { break }
            context.pauseBetweenBatches()
        }
    }

    // MARK: Requests

    func handleDueRequests() throws {
        var cursor = RequestCursor.start
        while !context.shouldStop {
            let batch = try context.inBatch { try self.dueRequests(on: $0, after: cursor) }
            for id in batch.ids {
                if context.shouldStop { return }
                try handle(request: id)
            }
            guard batch.ids.count == context.job.batchSize, let last = batch.last else { break }
            cursor = last
            context.pauseBetweenBatches()
        }
    }

    private func dueRequests(on connection: Connection, after cursor: RequestCursor) throws -> (ids: [Int64], last: RequestCursor?) {
        let rows = try connection.query(sql.dueRequests, cursor.requestedAt, cursor.id, context.job.batchSize).rows
        let ids = rows.compactMap { $0.int64("id") }
        let last = rows.last.flatMap { row in
            row["requested_at"].flatMap { at in row.int64("id").map { RequestCursor(requestedAt: at, id: $0) } }
        }
        return (ids, last)
    }

    /// One request, start to finish (see the type's documentation for the order).
    /// A request whose rows the app holds or protects waits for the next run (`requests_blocked`).
    private func handle(request id: Int64) throws {
        if context.dryRun { return try preview(request: id) }
        let step: Step
        do {
            let password = try newPasswordIfDue(id)
            step = try context.inBatch { try self.claimAndPrepare(id, password: password, on: $0) }
        } catch let error as PostgresError where error.isRowLevel {
            context.block("requests_blocked", id: id, error)
            return
        }
        switch step {
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
    private enum Step {
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
    private func claimAndPrepare(_ id: Int64, password: NewPassword?, on connection: Connection) throws -> Step {
        guard let request = try connection.query(sql.claimRequest, id).first.map(ResetRequest.init) else {
            return .notDue
        }
        let account = try connection.query(sql.account, request.email).first.map(Account.init)
        let recent = try connection.query(sql.recentSends, request.email, TempPasswordSQL.inFlight).first?.int("n") ?? 0
        switch decide(request, account, recentSends: recent) {
        case .settle(let status, let reason):
            try connection.query(sql.settle, id, status, reason)
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
    private func prepareSend(_ request: ResetRequest, _ account: Account, _ address: MailAddress,
                             _ password: NewPassword, on connection: Connection) throws -> Step {
        let (transport, from) = try mailSetup()
        let hash = password.hash
        guard let stored = try connection.query(sql.storePassword, account.id, account.email, hash,
                                                settings.tempPasswordTTL.microseconds).first else {
            // Deleted or renamed between our read and the update: decide again next run.
            context.logger.info("account changed meanwhile; request left for the next run",
                                metadata: ["request_id": "\(request.id)"])
            return .notDue
        }
        try connection.query(sql.markInFlight, request.id, TempPasswordSQL.inFlight)
        let message = makeMessage(from: from, to: account, address: address, password: password.plain,
                                  expiresAt: stored["expires_at"] ?? "")
        return .send(Delivery(
            requestID: request.id, userID: account.id, attemptsBefore: request.attempts, transport: transport,
            message: message,
            newHash: hash,
            previous: PreviousTemporaryPassword(hash: stored["previous_hash"], expiresAt: stored["previous_expires_at"],
                                                mustChange: stored.bool("previous_must_change") ?? false)))
    }

    /// Sends outside any transaction, then records the result (transaction B).
    private func deliver(_ delivery: Delivery) {
        if delivery.attemptsBefore > 0 { stats.add("retried") }
        let attempt = delivery.attemptsBefore + 1
        var metadata: [String: String] = ["request_id": "\(delivery.requestID)", "user_id": "\(delivery.userID)",
                                          "attempt": "\(attempt)"]
        do {
            try delivery.transport.send(delivery.message)
        } catch {
            recordFailure(delivery, error, metadata: &metadata)
            return
        }
        do {
            _ = try context.inBatch { try $0.query(sql.recordSent, delivery.requestID) }
            stats.add("sent")
            context.logger.info("temporary password sent", metadata: metadata.logMetadata)
        } catch {
            // The mail went out but could not be recorded: the request stays in
            // flight and is retried after its backoff (a duplicate, never a loss).
            metadata["error"] = "\(error)"
            context.logger.error("mail sent but not recorded; the request will be retried", metadata: metadata.logMetadata)
        }
    }

    private func recordFailure(_ delivery: Delivery, _ error: MailError, metadata: inout [String: String]) {
        metadata["error"] = error.description
        do {
            let status = try context.inBatch { connection in
                try connection.query(sql.recordFailure, delivery.requestID, error.description,
                                     settings.maxAttempts, error.kind == .invalidAddress).first?["status"] ?? "pending"
            }
            stats.add(status == "failed" ? "failed" : "deferred")
            metadata["status"] = status
            context.logger.warning(status == "failed" ? "temporary password mail failed; giving up"
                                                      : "temporary password mail failed; will retry",
                                   metadata: metadata.logMetadata)
        } catch {
            metadata["record_error"] = "\(error)"
            context.logger.error("could not record a failed mail; the request will be retried", metadata: metadata.logMetadata)
        }
        restorePreviousPassword(delivery)
    }

    /// Best effort: a failure here leaves the unsent password's hash in place,
    /// which no one knows and which expires with `temp_password_ttl`.
    private func restorePreviousPassword(_ delivery: Delivery) {
        do {
            _ = try context.inBatch { connection in
                try connection.query(sql.restorePassword, delivery.userID, delivery.newHash, delivery.previous.hash,
                                     delivery.previous.expiresAt, delivery.previous.mustChange)
            }
        } catch {
            context.logger.warning("could not restore the previous temporary password",
                                   metadata: ["request_id": "\(delivery.requestID)", "error": "\(error)"])
        }
    }

    // MARK: Dry run

    /// Decides `id` like transaction A, without locking anything; `nil` when it is not pending and due.
    private func peek(_ id: Int64, on connection: Connection) throws -> Decision? {
        guard let request = try connection.query(sql.peekRequest, id).first.map(ResetRequest.init) else { return nil }
        let account = try connection.query(sql.account, request.email).first.map(Account.init)
        let recent = try connection.query(sql.recentSends, request.email, TempPasswordSQL.inFlight).first?.int("n") ?? 0
        let decision = decide(request, account, recentSends: recent + plannedSends[request.email.lowercased(), default: 0])
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

    // MARK: Decisions

    private enum Decision {
        case settle(status: String, reason: String)
        case send(Account, MailAddress)
    }

    /// SPEC §3 steps 1–3, in order, plus "attempts used up" (only after a crash
    /// mid-send, or a lowered `max_attempts`).
    private func decide(_ request: ResetRequest, _ account: Account?, recentSends: Int) -> Decision {
        guard let account, !account.deleted else { return .settle(status: "ignored", reason: "no such account") }
        if recentSends >= settings.maxPerHour { return .settle(status: "ignored", reason: "rate limited") }
        guard let address = try? MailAddress(account.email) else {
            return .settle(status: "failed", reason: MailError.invalidAddress.description)
        }
        if request.attempts >= settings.maxAttempts {
            return .settle(status: "failed", reason: request.lastError ?? "gave up after \(request.attempts) attempts")
        }
        return .send(account, address)
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

    private func makeMessage(from: Mailbox, to account: Account, address: MailAddress,
                             password: String, expiresAt: String) -> MailMessage {
        let displayName = account.displayName.flatMap { $0.isEmpty ? nil : $0 }
        // A display name the header cannot carry (a control character) is dropped, not the mail.
        let recipient = (try? Mailbox(displayName: displayName, address: address))
            ?? (try! Mailbox(address: address))
        let text = settings.template.render(name: recipient.displayName ?? address.address, password: password,
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

/// Where the previous batch of candidates stopped, in `(requested_at, id)` order.
private struct RequestCursor {
    var requestedAt: String
    var id: Int64
    static let start = RequestCursor(requestedAt: "-infinity", id: Int64.min)
}

/// A locked `password_reset_requests` row.
private struct ResetRequest {
    let id: Int64
    let email: String
    let attempts: Int
    let lastError: String?

    init(_ row: Row) {
        id = row.int64("id") ?? 0
        email = row["email"] ?? ""
        attempts = row.int("attempts") ?? 0
        lastError = row["last_error"]
    }
}

/// The user an address belongs to.
private struct Account {
    let id: Int64
    let email: String
    let displayName: String?
    let deleted: Bool

    init(_ row: Row) {
        id = row.int64("id") ?? 0
        email = row["email"] ?? ""
        displayName = row["display_name"]
        deleted = row.bool("deleted") ?? false
    }
}

/// The statements of `send-temp-passwords`; every value is a `$n` parameter and
/// every time comes from the database clock.
private struct TempPasswordSQL {
    let schema: String

    /// `1m × 2^(n)`, capped at a day, for `n` = attempts made before this one.
    private static func backoff(_ n: String) -> String {
        "least(power(2::float8, \(n)), 1440) * interval '1 minute'"
    }

    var countExpired: String {
        "SELECT count(*) AS n FROM \(schema).users WHERE temp_password_expires_at <= now()"
    }

    /// Up to `$1` users whose temporary password expired, leaving out `$2` (blocked this run).
    var expiredUsers: String {
        """
        SELECT id FROM \(schema).users WHERE temp_password_expires_at <= now() AND id <> ALL($2)
        ORDER BY temp_password_expires_at LIMIT $1
        """
    }

    var clearExpired: String {
        """
        WITH due AS (\(expiredUsers) FOR NO KEY UPDATE SKIP LOCKED)
        UPDATE \(schema).users u
        SET temp_password_hash = NULL, temp_password_expires_at = NULL, must_change_password = false
        FROM due WHERE u.id = due.id
        """
    }

    var clearExpiredOne: String {
        """
        UPDATE \(schema).users
        SET temp_password_hash = NULL, temp_password_expires_at = NULL, must_change_password = false
        WHERE id = $1 AND temp_password_expires_at <= now()
        """
    }

    /// `$1`, `$2`: keyset cursor `(requested_at, id)`; `$3`: batch size.
    var dueRequests: String {
        """
        SELECT id, requested_at FROM \(schema).password_reset_requests
        WHERE status = 'pending' AND next_attempt_at <= now()
          AND (requested_at, id) > ($1::timestamptz, $2::bigint)
        ORDER BY requested_at, id LIMIT $3
        """
    }

    var claimRequest: String { peekRequest + "\nFOR UPDATE SKIP LOCKED" }

    var peekRequest: String {
        """
        SELECT id, email, attempts, last_error FROM \(schema).password_reset_requests
        WHERE id = $1 AND status = 'pending' AND next_attempt_at <= now()
        """
    }

    /// The account for an address, case-insensitively; a live one before a deleted one.
    var account: String {
        """
        SELECT id, email, display_name, deleted_at IS NOT NULL AS deleted FROM \(schema).users
        WHERE lower(email) = lower($1)
        ORDER BY deleted_at IS NOT NULL, id LIMIT 1
        """
    }

    /// `last_error` of a request whose mail may have gone out (sending, or sent but not recorded).
    static let inFlight = "sending interrupted; delivery unknown"

    /// Mails to address `$1` in the last hour: those recorded `sent`, and those that
    /// may have gone out without their result being recorded (`last_error` = `$2`,
    /// attempted when `markInFlight` pushed `next_attempt_at` out by its backoff).
    var recentSends: String {
        """
        SELECT (SELECT count(*) FROM \(schema).password_reset_requests
                WHERE status = 'sent' AND lower(email) = lower($1) AND sent_at > now() - interval '1 hour')
             + (SELECT count(*) FROM \(schema).password_reset_requests
                WHERE status = 'pending' AND lower(email) = lower($1) AND last_error = $2 AND attempts > 0
                  AND next_attempt_at - \(Self.backoff("attempts - 1")) > now() - interval '1 hour') AS n
        """
    }

    var settle: String {
        "UPDATE \(schema).password_reset_requests SET status = $2, last_error = $3 WHERE id = $1"
    }

    /// Stores the new hash if the account is still live under the address we
    /// read; returns the previous temporary-password columns and the new expiry
    /// for the message (UTC).
    var storePassword: String {
        """
        WITH previous AS (
            SELECT id, temp_password_hash, temp_password_expires_at, must_change_password FROM \(schema).users
            WHERE id = $1 AND email = $2 AND deleted_at IS NULL
            FOR NO KEY UPDATE
        )
        UPDATE \(schema).users u
        SET temp_password_hash = $3,
            temp_password_expires_at = now() + $4::bigint * interval '1 microsecond',
            must_change_password = true
        FROM previous WHERE u.id = previous.id
        RETURNING previous.temp_password_hash AS previous_hash,
                  previous.temp_password_expires_at AS previous_expires_at,
                  previous.must_change_password AS previous_must_change,
                  to_char(u.temp_password_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI "UTC"') AS expires_at
        """
    }

    /// Before sending: count the attempt and push the request out of reach, so
    /// a crash mid-send is retried after the backoff, not at once.
    var markInFlight: String {
        """
        UPDATE \(schema).password_reset_requests
        SET attempts = attempts + 1, next_attempt_at = now() + \(Self.backoff("attempts")), last_error = $2
        WHERE id = $1
        """
    }

    var recordSent: String {
        "UPDATE \(schema).password_reset_requests SET status = 'sent', sent_at = now(), last_error = NULL WHERE id = $1"
    }

    /// `$2`: the error; `$3`: `max_attempts`; `$4`: a permanent failure (fail now).
    /// `attempts` already counts this attempt.
    var recordFailure: String {
        """
        UPDATE \(schema).password_reset_requests
        SET last_error = $2,
            status = CASE WHEN $4::boolean OR attempts >= $3 THEN 'failed' ELSE 'pending' END,
            next_attempt_at = CASE WHEN $4::boolean OR attempts >= $3 THEN next_attempt_at
                                   ELSE now() + \(Self.backoff("attempts - 1")) END
        WHERE id = $1
        RETURNING status
        """
    }

    /// Puts back the previous temporary password, unless someone replaced ours meanwhile.
    var restorePassword: String {
        """
        UPDATE \(schema).users
        SET temp_password_hash = $3, temp_password_expires_at = $4::timestamptz, must_change_password = $5
        WHERE id = $1 AND temp_password_hash = $2
        """
    }
}

private extension Dictionary where Key == String, Value == String {
    var logMetadata: [String: Logger.MetadataValue] { mapValues { .string($0) } }
}

/// `[jobs.send-temp-passwords]`'s own keys.
public struct SendTempPasswordsSettings: Sendable {
    public var maxPerHour: Int = 3
    public var tempPasswordLength: Int = 16
    public var tempPasswordTTL: Duration = .seconds(24 * 3600)
    /// Defaults to `12`, `10` in low-footprint mode.
    public var bcryptCost: Int = 12
    public var maxAttempts: Int = 5
    public var templateFile: String = ""
    /// The template's text (the built-in one when `templateFile` is empty).
    public var template: MailTemplate = .default
}

extension SendTempPasswordsSettings {
    /// Reads them from the job's table, with their defaults and bounds; `template_file`
    /// is read now, relative to the configuration `file`.
    init(reading table: inout TableReader, file: String, worker: WorkerOptions) throws(ConfigurationError) {
        maxPerHour = try table.integer("max_per_hour", default: 3, in: 1...1000)
        // bcrypt reads at most 72 bytes of a password.
        tempPasswordLength = try table.integer("temp_password_length", default: 16, in: 12...72)
        tempPasswordTTL = try table.duration("temp_password_ttl", default: tempPasswordTTL, minimum: .seconds(60))
        bcryptCost = try table.integer("bcrypt_cost", default: worker.lowFootprint ? 10 : 12, in: 4...31)
        maxAttempts = try table.integer("max_attempts", default: 5, in: 1...100)
        templateFile = try table.string("template_file", default: "")
        if !templateFile.isEmpty {
            template = try Self.readTemplate(templateFile, relativeTo: file, table: table)
        }
    }

    private static func readTemplate(_ path: String, relativeTo file: String, table: TableReader) throws(ConfigurationError) -> MailTemplate {
        let resolved = path.hasPrefix("/") ? path
            : URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent(path).path
        let text: String
        do {
            text = try TextFile.read(resolved)
        } catch {
            throw table.error("template_file", "cannot read \(resolved) (\(error))")
        }
        if text.utf8.contains(0) { throw table.error("template_file", "\(resolved) contains a NUL byte") }
        switch MailTemplate.parse(text) {
        case .success(let template): return template
        case .failure(let problem): throw table.error("template_file", "\(resolved): \(problem.message)")
        }
    }
}
