import CaretakerConfig
import CaretakerDatabase

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Builds the configured transport, reading the SMTP password from `password_file`,
/// the systemd credential `smtp-password`, or `$CARETAKER_SMTP_PASSWORD`.
public enum MailSetup {
    public static let passwordCredential = "smtp-password"

    /// `[mail] username` is set (the relay wants AUTH) and no password was found anywhere.
    public static let missingPasswordMessage =
        "mail.username is set but there is no SMTP password: put it in mail.password_file, "
        + "in /etc/caretaker/smtp-password (the service's systemd credential \(passwordCredential)) "
        + "or in $CARETAKER_SMTP_PASSWORD; or leave username empty for a relay without AUTH"

    /// The transport for the selected jobs that send mail (`BuiltInJob.sendsMail`), or `nil` when none does.
    /// A password file that cannot be read or a URL libcurl cannot use is a
    /// `ConfigurationError` naming the `[mail]` key (exit 78).
    public static func transport(
        for jobs: [JobConfiguration], configuration: Configuration,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) -> (any MailTransport)? {
        guard jobs.contains(where: { $0.builtIn?.sendsMail == true }) else { return nil }
        do {
            return try transport(configuration.mail, environment: environment)
        } catch let error as SecretError {
            throw ConfigurationError(
                file: configuration.file, line: 0, key: "mail.password_file", message: error.message)
        } catch {
            throw ConfigurationError(file: configuration.file, line: 0, key: "mail.url", message: "\(error)")
        }
    }

    public static func transport(
        _ options: MailOptions,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> any MailTransport {
        switch options.transport {
        case .file:
            return FileTransport(directory: options.directory)
        case .smtp:
            let password =
                try Secrets.read(
                    file: options.passwordFile, credential: passwordCredential,
                    environment: environment, purpose: "mail.password_file")
                ?? environment["CARETAKER_SMTP_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
            if !options.username.isEmpty && password == nil {
                throw SecretError(message: missingPasswordMessage)
            }
            return try SMTPTransport(
                configuration: .init(
                    url: options.url, starttls: options.starttls,
                    username: options.username.isEmpty ? nil : options.username, password: password,
                    caFile: options.caFile.isEmpty ? nil : options.caFile))
        }
    }
}
