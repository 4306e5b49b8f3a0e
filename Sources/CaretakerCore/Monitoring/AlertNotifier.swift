#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Postgres

/// Carries out `AlertPolicy` against `caretaker.job_alerts` and sends the mails
/// to `[alerts] mail_to` through the configured transport.
struct AlertNotifier: Sendable {
    let transport: any MailTransport
    let from: Mailbox
    let to: Mailbox
    let logger: Logger
    /// After a failed send the change is handed back, and no instance tries again before this.
    static let retryAfterFailedSend = "5 minutes"

    init(configuration: Configuration, logger: Logger) throws {
        transport = try MailSetup.transport(configuration.mail)
        from = try Mailbox(parsing: configuration.mail.from)
        to = try Mailbox(address: MailAddress(configuration.alerts.mailTo))
        self.logger = logger
    }

    /// Decides and acts for every job in `readings`; a send that fails is logged
    /// and retried at a later evaluation (by this instance or another).
    func evaluate(_ readings: HistoryReadings, on connection: Connection) throws {
        let rows = try connection.query("SELECT job, state FROM caretaker.job_alerts").rows
        var stored: [String: AlertPolicy.Stored] = [:]
        for row in rows { stored[row["job"] ?? ""] = row["state"].flatMap(AlertPolicy.Stored.init) }
        for job in readings.jobs {
            let action = AlertPolicy.decide(stored: stored[job.name], now: AlertPolicy.condition(of: job))
            try carryOut(action, job: job.name, previous: stored[job.name], on: connection)
        }
    }

    private func carryOut(_ action: AlertPolicy.Action, job: String, previous: AlertPolicy.Stored?,
                          on connection: Connection) throws {
        guard let next = AlertPolicy.stored(after: action) else { return }
        var cause: String?
        if case .alert(let text) = action { cause = text }
        guard let since = try claim(job: job, from: previous, to: next, cause: cause, on: connection) else { return }
        let message: (subject: String, body: String)
        switch action {
        case .nothing, .remember:
            return
        case .alert(let cause):
            message = AlertMessage.alert(job: job, cause: cause, lastRun: try lastRun(of: job, on: connection))
        case .recover:
            message = AlertMessage.recovery(job: job, unhealthySince: since)
        }
        do {
            try transport.send(MailMessage(from: from, to: to, subject: message.subject, body: message.body))
            logger.notice("alert mail sent", metadata: ["job": "\(job)", "alert": "\(next == .unhealthy ? "unhealthy" : "recovered")"])
        } catch {
            logger.error("alert mail could not be sent; trying again later",
                         metadata: ["job": "\(job)", "error": "\(error)"])
            try handBack(job: job, to: previous ?? .healthy, from: next, on: connection)
        }
    }

    /// Takes the change from `previous` to `next` if the stored state is still
    /// `previous` (and no failed send asked to wait); returns when the job
    /// entered the state it leaves (for the recovery notice), nil when another
    /// instance took the change first.
    private func claim(job: String, from previous: AlertPolicy.Stored?, to next: AlertPolicy.Stored,
                       cause: String?, on connection: Connection) throws -> String? {
        let result: QueryResult
        if let previous {
            result = try connection.query("""
                UPDATE caretaker.job_alerts new SET state = $2, cause = $4, since = clock_timestamp(), retry_after = NULL
                FROM caretaker.job_alerts old
                WHERE new.job = $1 AND old.job = new.job AND new.state = $3
                  AND (new.retry_after IS NULL OR new.retry_after <= clock_timestamp())
                RETURNING to_char(old.since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"') AS since
                """, job, next.rawValue, previous.rawValue, cause)
        } else {
            result = try connection.query("""
                INSERT INTO caretaker.job_alerts (job, state, cause) VALUES ($1, $2, $3)
                ON CONFLICT (job) DO NOTHING
                RETURNING to_char(since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"') AS since
                """, job, next.rawValue, cause)
        }
        return result.first.map { $0["since"] ?? "" }
    }

    private func handBack(job: String, to previous: AlertPolicy.Stored, from next: AlertPolicy.Stored,
                          on connection: Connection) throws {
        try connection.query("""
            UPDATE caretaker.job_alerts SET state = $2, retry_after = clock_timestamp() + $4::interval
            WHERE job = $1 AND state = $3
            """, job, previous.rawValue, next.rawValue, Self.retryAfterFailedSend)
    }

    private func lastRun(of job: String, on connection: Connection) throws -> AlertMessage.LastRun? {
        try connection.query("""
            SELECT id, status, error, host, pid,
                   to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"') AS started
            FROM caretaker.job_runs
            WHERE job = $1 AND NOT dry_run AND status IN ('succeeded', 'failed', 'interrupted')
            ORDER BY started_at DESC, id DESC LIMIT 1
            """, job).first.map {
            AlertMessage.LastRun(id: $0.int64("id") ?? 0, status: $0["status"] ?? "", error: $0["error"],
                                 host: $0["host"] ?? "", pid: $0.int("pid") ?? 0, startedAt: $0["started"] ?? "")
        }
    }
}

/// The text of alert and recovery mails. Everything in them comes from
/// `job_runs`, whose errors are already free of secrets.
enum AlertMessage {
    struct LastRun: Sendable {
        let id: Int64
        let status: String
        let error: String?
        let host: String
        let pid: Int
        let startedAt: String
    }

    static func alert(job: String, cause: String, lastRun: LastRun?) -> (subject: String, body: String) {
        var body = "caretaker job \(job) is unhealthy.\n\nCause: \(cause)\n"
        if let lastRun {
            body += "Last run: #\(lastRun.id) \(lastRun.status), started \(lastRun.startedAt) on \(lastRun.host) (pid \(lastRun.pid))\n"
            body += "Last error: \(lastRun.error ?? "none")\n"
        } else {
            body += "Last run: none recorded\n"
        }
        body += "\nSee the history:\n    caretaker history --job \(job)\n"
        body += "\nNo further alert is sent for \(job) while it stays unhealthy; a recovery notice follows when it is healthy again.\n"
        return ("[caretaker] \(job) is unhealthy", body)
    }

    static func recovery(job: String, unhealthySince: String) -> (subject: String, body: String) {
        ("[caretaker] \(job) recovered",
         "caretaker job \(job) is healthy again (unhealthy since \(unhealthySince)).\n\n"
            + "See the history:\n    caretaker history --job \(job)\n")
    }
}
