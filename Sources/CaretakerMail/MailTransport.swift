import CaretakerMailFormat

/// Something that delivers a `MailMessage`: SMTP through libcurl, or `.eml`
/// files for development.
///
/// `send` is synchronous on purpose: it blocks on network or disk I/O for up to
/// the transport's timeout, so callers run it on a dedicated worker thread, not
/// on Swift's cooperative pool.
///
/// Every transport re-validates the sender and recipient addresses before it
/// does anything (defence in depth: `MailAddress` already validated them).
public protocol MailTransport: Sendable {
    func send(_ message: MailMessage) throws(MailError)
}

extension MailTransport {
    /// Re-checks both addresses of `message`; throws `MailError.invalidAddress`.
    func revalidateAddresses(of message: MailMessage) throws(MailError) {
        guard MailAddress.isValid(message.to.address.address),
            MailAddress.isValid(message.from.address.address)
        else { throw MailError.invalidAddress }
    }
}
