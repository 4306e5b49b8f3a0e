/// A maintenance job: one pass over the data, reporting what it did.
///
/// `run` is synchronous on purpose: it is called on a thread of its own with a
/// connection nobody else uses, and libpq calls block.
public protocol Job: Sendable {
    func run(_ context: JobContext) throws -> JobStats
}

/// Thrown by a job to say it stopped early on purpose (shutdown); the run is `interrupted`.
public struct JobInterrupted: Error, Sendable {
    public let stats: JobStats
}

extension JobConfiguration {
    /// The job that carries out this configuration.
    public func makeJob(mail: (any MailTransport)?, mailOptions: MailOptions) -> any Job {
        switch settings {
        case .expireContent(let settings): ExpireContent(settings: settings)
        case .logoutInactive(let settings): LogoutInactive(settings: settings)
        case .sendTempPasswords(let settings): SendTempPasswords(settings: settings, mail: mail, mailOptions: mailOptions)
        case .leaderSuccession(let settings): LeaderSuccession(settings: settings)
        case .prune(let settings): Prune(settings: settings)
        case .sql(let settings): OperatorSQL(settings: settings)
        }
    }
}
