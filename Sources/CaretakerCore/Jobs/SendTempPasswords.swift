import Postgres

/// `send-temp-passwords`: mails temporary passwords for "forgot password" requests.
struct SendTempPasswords: Job {
    let settings: SendTempPasswordsSettings
    let mail: (any MailTransport)?
    let mailOptions: MailOptions

    func run(_ context: JobContext) throws -> JobStats {
        throw JobNotImplemented(job: context.job.name)
    }
}

struct JobNotImplemented: Error, CustomStringConvertible {
    let job: String
    var description: String { "\(job) is not implemented yet" }
}
