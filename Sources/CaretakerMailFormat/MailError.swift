/// Why a message could not be built or delivered.
///
/// `description` is short and safe to store in `password_reset_requests.last_error`
/// and to log: it never contains a password, a message body, or credentials from
/// a URL.
public struct MailError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The broad reason, for callers that react differently (e.g. `invalid address`).
    public enum Kind: Sendable, Equatable {
        /// An address or `from` value that is not a valid single mailbox.
        case invalidAddress
        /// The transport's configuration cannot work (bad URL scheme, …).
        case configuration
        /// The server could not be reached, or the connection broke or timed out.
        case connection
        /// The server refused the login.
        case authentication
        /// The server answered a command with a 4xx or 5xx reply.
        case rejected
        /// A local file could not be written (file transport).
        case io
        /// Anything else libcurl reports.
        case other
    }

    public let kind: Kind
    /// The human-readable, secret-free explanation.
    public let message: String
    /// The SMTP reply code when the server gave one (e.g. 451, 550).
    public let smtpCode: Int?

    public init(_ kind: Kind, _ message: String, smtpCode: Int? = nil) {
        self.kind = kind
        self.message = message
        self.smtpCode = smtpCode
    }

    public var description: String { message }

    /// True for a 4xx reply or a connection problem: trying again later may work.
    /// A 5xx reply, a refused login or an invalid address will not fix itself.
    public var isTransient: Bool {
        switch kind {
        case .connection: return true
        case .rejected: return (smtpCode ?? 0) / 100 == 4
        default: return false
        }
    }

    /// The error for an address that fails `MailAddress` validation; its message
    /// is exactly the `last_error` a password reset request gets.
    public static let invalidAddress = MailError(.invalidAddress, "invalid address")
}
