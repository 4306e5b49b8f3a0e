import CaretakerConfig
import CaretakerDatabase
import CaretakerMail
import CaretakerMailFormat
import Logging
import Postgres

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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

    /// The alert states `caretaker.job_alerts` holds now, then the readings `read`
    /// returns, in that order: `evaluate` decides from both.
    ///
    /// Why the states first: another instance may change a state from runs newer
    /// than this instance's readings. Read after the readings, that newer state would
    /// meet older readings here, and the change it records would be undone: a failed
    /// run alerted by one instance, a "recovered" from a second that had not yet seen
    /// the failure, and the alert again from a third (the soak's alerts-once saw two
    /// alerts and two recoveries for one incident). Read first, the readings are
    /// never older than what the state was decided from, and `claimAlertChange`
    /// moves a state only while it is still the one read.
    func statesThenReadings(
        on connection: Connection, _ read: () throws -> HistoryReadings
    ) throws -> (stored: [String: AlertPolicy.Stored], readings: HistoryReadings) {
        let stored = try AlertStates(connection).all()
        return (stored, try read())
    }

    /// Decides and acts for every job in `readings`, from the states `stored` (read
    /// before the readings: `statesThenReadings`); a send that fails is logged and retried
    /// at a later evaluation (by this instance or another).
    func evaluate(
        _ readings: HistoryReadings, stored: [String: AlertPolicy.Stored], on connection: Connection
    ) throws {
        for job in readings.jobs {
            let action = AlertPolicy.decide(stored: stored[job.name], now: AlertPolicy.condition(of: job))
            try carryOut(action, job: job.name, previous: stored[job.name], on: connection)
        }
    }

    private func carryOut(
        _ action: AlertPolicy.Action, job: String, previous: AlertPolicy.Stored?,
        on connection: Connection
    ) throws {
        guard let next = AlertPolicy.stored(after: action) else { return }
        var cause: String?
        if case .alert(let text) = action { cause = text }
        let states = AlertStates(connection)
        // nil: another instance took the change first.
        guard let since = try states.claimChange(job: job, from: previous, to: next, cause: cause) else { return }
        let message: (subject: String, body: String)
        switch action {
        case .nothing, .remember:
            return
        case .alert(let cause):
            message = AlertMessage.alert(
                job: job, cause: cause, lastRun: try RunHistory(connection).latest(.finished, job: job))
        case .recover:
            message = AlertMessage.recovery(job: job, unhealthySince: since)
        }
        do {
            try transport.send(MailMessage(from: from, to: to, subject: message.subject, body: message.body))
            logger.notice(
                "alert mail sent",
                metadata: ["job": "\(job)", "alert": "\(next == .unhealthy ? "unhealthy" : "recovered")"])
        } catch {
            logger.error(
                "alert mail could not be sent; trying again later",
                metadata: ["job": "\(job)", "error": "\(error)"])
            try states.handBackChange(
                job: job, to: previous ?? .healthy, from: next, retryAfter: Self.retryAfterFailedSend)
        }
    }
}

/// The text of alert and recovery mails. Everything in them comes from
/// `job_runs`, whose errors are already free of secrets.
enum AlertMessage {
    static func alert(job: String, cause: String, lastRun: RunRecord?) -> (subject: String, body: String) {
        var body = "caretaker job \(job) is unhealthy.\n\nCause: \(cause)\n"
        if let lastRun {
            body +=
                "Last run: #\(lastRun.id) \(lastRun.status.rawValue), started \(UTCTimestamp.readable(lastRun.startedAt)) on \(lastRun.host) (pid \(lastRun.pid))\n"
            body += "Last error: \(lastRun.error ?? "none")\n"
        } else {
            body += "Last run: none recorded\n"
        }
        body += "\nSee the history:\n    caretaker history --job \(job)\n"
        body +=
            "\nNo further alert is sent for \(job) while it stays unhealthy; a recovery notice follows when it is healthy again.\n"
        return ("[caretaker] \(job) is unhealthy", body)
    }

    static func recovery(job: String, unhealthySince: String) -> (subject: String, body: String) {
        (
            "[caretaker] \(job) recovered",
            "caretaker job \(job) is healthy again (unhealthy since \(unhealthySince)).\n\n"
                + "See the history:\n    caretaker history --job \(job)\n"
        )
    }
}
