import CaretakerMailFormat
import Postgres

/// A `password_reset_requests` row, as transaction A (or a dry run's look) read it.
struct ResetRequest: Equatable {
    let id: Int64
    let email: String
    let attempts: Int
    let lastError: String?

    init(id: Int64, email: String, attempts: Int, lastError: String? = nil) {
        self.id = id
        self.email = email
        self.attempts = attempts
        self.lastError = lastError
    }

    init(_ row: Row) {
        self.init(
            id: row.int64("id") ?? 0, email: row["email"] ?? "", attempts: row.int("attempts") ?? 0,
            lastError: row["last_error"])
    }
}

/// The user an address belongs to.
struct ResetAccount: Equatable {
    let id: Int64
    let email: String
    let displayName: String?
    let deleted: Bool

    init(id: Int64, email: String, displayName: String? = nil, deleted: Bool = false) {
        self.id = id
        self.email = email
        self.displayName = displayName
        self.deleted = deleted
    }

    init(_ row: Row) {
        self.init(
            id: row.int64("id") ?? 0, email: row["email"] ?? "", displayName: row["display_name"],
            deleted: row.bool("deleted") ?? false)
    }
}

/// What to do with one due request.
enum ResetDecision: Equatable {
    /// `ignored` or `failed` at once, with the reason for `last_error`; no mail.
    case settle(status: String, reason: String)
    /// Mail a temporary password to the account at `address`.
    case send(ResetAccount, MailAddress)

    /// The documented steps 1–3 (docs/jobs/send-temp-passwords.md), in order, plus
    /// "attempts used up" (only after a crash mid-send, or a lowered `max_attempts`).
    /// `recentSends` is what the address was mailed in the last hour
    /// (`SendTempPasswordsQueries.recentSends`, plus a dry run's own planned mails).
    static func decide(
        _ request: ResetRequest, _ account: ResetAccount?, recentSends: Int,
        maxPerHour: Int, maxAttempts: Int
    ) -> ResetDecision {
        guard let account, !account.deleted else { return .settle(status: "ignored", reason: "no such account") }
        if recentSends >= maxPerHour { return .settle(status: "ignored", reason: "rate limited") }
        guard let address = try? MailAddress(account.email) else {
            return .settle(status: "failed", reason: MailError.invalidAddress.description)
        }
        if request.attempts >= maxAttempts {
            return .settle(status: "failed", reason: request.lastError ?? "gave up after \(request.attempts) attempts")
        }
        return .send(account, address)
    }
}
