import CCurl
import CaretakerConfig
import CaretakerMailFormat
import CaretakerSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Delivers mail over SMTP with libcurl's easy interface
/// (`[mail] transport = "smtp"`).
///
/// Each `send` uses its own easy handle on the calling thread, so one transport
/// may be shared by several threads; a handle is never shared. One message goes
/// to exactly one recipient.
public struct SMTPTransport: MailTransport {
    /// How to reach and log in to the server.
    public struct Configuration: Sendable {
        /// `smtp://host[:port]` (STARTTLS optional, see `starttls`) or
        /// `smtps://host[:port]` (implicit TLS).
        public var url: String
        /// With `smtp://`, require STARTTLS (`CURLUSESSL_ALL`): fail rather than
        /// send in clear text.
        public var starttls: Bool
        /// AUTH user name; nil or empty: no AUTH.
        public var username: String?
        /// AUTH password, already read from `password_file` by the caller.
        public var password: String?
        /// PEM file of the CA(s) to verify the server's certificate with (`mail.ca_file`);
        /// nil: the system's CAs. Verification of peer and host name is always on.
        public var caFile: String?
        /// Limit for establishing the connection (TCP and TLS).
        public var connectTimeout: Duration
        /// Limit for the whole exchange, connection included.
        public var timeout: Duration

        public init(
            url: String, starttls: Bool = false, username: String? = nil, password: String? = nil,
            caFile: String? = nil, connectTimeout: Duration = .seconds(10), timeout: Duration = .seconds(30)
        ) {
            self.caFile = caFile
            self.url = url
            self.starttls = starttls
            self.username = username
            self.password = password
            self.connectTimeout = connectTimeout
            self.timeout = timeout
        }
    }

    public let configuration: Configuration

    /// Checks the URL (scheme `smtp` or `smtps`, no control characters) and
    /// initialises libcurl once per process.
    public init(configuration: Configuration) throws(MailError) {
        let url = configuration.url
        guard !url.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }) else {
            throw MailError(.configuration, "mail url contains spaces or control characters")
        }
        let lowered = url.lowercased()
        guard lowered.hasPrefix("smtp://") || lowered.hasPrefix("smtps://") else {
            throw MailError(.configuration, "mail url must start with smtp:// or smtps://: \(Self.redacted(url))")
        }
        guard ccurl_global_init_once() == CURLE_OK else {
            throw MailError(.configuration, "libcurl could not be initialised")
        }
        self.configuration = configuration
    }

    /// The URL without any `user:password@`, for messages and logs.
    public var displayURL: String { Self.redacted(configuration.url) }

    public func send(_ message: MailMessage) throws(MailError) {
        try revalidateAddresses(of: message)
        let session = try CurlSession()
        try session.configure(configuration, message: message)
        let upload = UploadSource(message.rendered())
        try session.perform(upload: upload, displayURL: displayURL, timeout: configuration.timeout)
    }

    /// Removes the userinfo (`user:password@`) of a URL.
    package static func redacted(_ url: String) -> String {
        let characters = Array(url)
        guard
            let separator = (0..<max(0, characters.count - 2)).first(where: {
                characters[$0] == ":" && characters[$0 + 1] == "/" && characters[$0 + 2] == "/"
            })
        else { return url }
        let authorityStart = separator + 3
        let authorityEnd = characters[authorityStart...].firstIndex(where: { "/?#".contains($0) }) ?? characters.count
        guard let at = characters[authorityStart..<authorityEnd].lastIndex(of: "@") else { return url }
        return String(characters[..<authorityStart]) + String(characters[(at + 1)...])
    }
}

/// The bytes of one message, handed to libcurl piecewise by `readCallback`.
/// Only the thread running `curl_easy_perform` touches it.
private final class UploadSource {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }
}

/// libcurl's CURLOPT_READFUNCTION: copies the next piece of the message.
private let readCallback: ccurl_data_callback = { buffer, size, count, userdata in
    guard let buffer, let userdata else { return 0 }
    let source = Unmanaged<UploadSource>.fromOpaque(userdata).takeUnretainedValue()
    let length = min(size * count, source.bytes.count - source.offset)
    source.bytes.withUnsafeBufferPointer { all in
        UnsafeMutableRawPointer(buffer).copyMemory(from: all.baseAddress! + source.offset, byteCount: length)
    }
    source.offset += length
    return length
}

/// One libcurl easy handle with the strings and lists it points to, freed
/// together. Lives for a single `send` on a single thread.
private final class CurlSession {
    let handle: UnsafeMutableRawPointer
    var recipients: UnsafeMutablePointer<curl_slist>?
    /// CURLOPT_ERRORBUFFER: libcurl's detail for the last failure.
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    init() throws(MailError) {
        guard let handle = curl_easy_init() else { throw MailError(.other, "libcurl could not create a handle") }
        self.handle = handle
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(recipients)
        errorBuffer.deallocate()
    }

    func configure(_ configuration: SMTPTransport.Configuration, message: MailMessage) throws(MailError) {
        try set(CURLOPT_URL, configuration.url)
        // Only mail protocols: a URL cannot make us speak HTTP or read files.
        try set(CURLOPT_PROTOCOLS_STR, "smtp,smtps")
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(configuration.connectTimeout))
        try set(CURLOPT_TIMEOUT_MS, Self.milliseconds(configuration.timeout))
        if configuration.starttls { try set(CURLOPT_USE_SSL, Int(CURLUSESSL_ALL.rawValue)) }
        if let caFile = configuration.caFile { try set(CURLOPT_CAINFO, caFile) }
        if let username = configuration.username, !username.isEmpty {
            try set(CURLOPT_USERNAME, username)
            try set(CURLOPT_PASSWORD, configuration.password ?? "")
        }
        try set(CURLOPT_MAIL_FROM, "<\(message.from.address.address)>")
        recipients = curl_slist_append(nil, "<\(message.to.address.address)>")
        guard recipients != nil else { throw MailError(.other, "out of memory") }
        try check(ccurl_setopt_slist(handle, CURLOPT_MAIL_RCPT, recipients), CURLOPT_MAIL_RCPT)
        try set(CURLOPT_UPLOAD, 1)
        try check(ccurl_setopt_callback(handle, CURLOPT_READFUNCTION, readCallback), CURLOPT_READFUNCTION)
        try check(ccurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer), CURLOPT_ERRORBUFFER)
    }

    func perform(upload: UploadSource, displayURL: String, timeout: Duration) throws(MailError) {
        let unmanaged = Unmanaged.passRetained(upload)
        defer { unmanaged.release() }
        try check(ccurl_setopt_pointer(handle, CURLOPT_READDATA, unmanaged.toOpaque()), CURLOPT_READDATA)
        let code = curl_easy_perform(handle)
        guard code != CURLE_OK else { return }
        throw describeFailure(code, displayURL: displayURL, timeout: timeout)
    }

    /// Turns a libcurl failure into a short, secret-free `MailError`.
    private func describeFailure(_ code: CURLcode, displayURL: String, timeout: Duration) -> MailError {
        var reply = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &reply)
        let detail = String(cString: errorBuffer)
        let smtpCode = reply >= 400 ? reply : nil
        switch code {
        case CURLE_COULDNT_CONNECT:
            return MailError(
                .connection, "could not connect to \(displayURL): \(systemReason() ?? "connection failed")")
        case CURLE_COULDNT_RESOLVE_HOST:
            return MailError(.connection, "could not resolve the host of \(displayURL)")
        case CURLE_OPERATION_TIMEDOUT:
            return MailError(.connection, "timed out talking to \(displayURL) (limit \(timeout))")
        case CURLE_LOGIN_DENIED where smtpCode == nil && detail.contains("authentication mechanism"):
            return MailError(.authentication, "SMTP server at \(displayURL) offers no AUTH mechanism libcurl supports")
        case CURLE_LOGIN_DENIED:
            return MailError(
                .authentication, "SMTP server refused the login" + Self.suffix(smtpCode), smtpCode: smtpCode)
        case CURLE_USE_SSL_FAILED:
            return MailError(.connection, "SMTP server at \(displayURL) does not offer STARTTLS")
        case CURLE_PEER_FAILED_VERIFICATION:
            return MailError(
                .connection,
                "TLS handshake with \(displayURL) failed: its certificate is not trusted "
                    + "(mail.ca_file, else the system's CAs): \(Self.redactedDetail(detail, fallback: code))")
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CACERT_BADFILE:
            return MailError(
                .connection, "TLS with \(displayURL) failed: \(Self.redactedDetail(detail, fallback: code))")
        case CURLE_GOT_NOTHING:
            return MailError(
                .connection, "connection to \(displayURL) broke: \(Self.redactedDetail(detail, fallback: code))")
        default:
            break
        }
        // libcurl reports refused SMTP commands as send/receive errors too;
        // only a reply code tells a refusal from a broken connection.
        if let smtpCode {
            return MailError(.rejected, Self.rejection(detail: detail, code: smtpCode), smtpCode: smtpCode)
        }
        if code == CURLE_SEND_ERROR || code == CURLE_RECV_ERROR {
            return MailError(
                .connection, "connection to \(displayURL) broke: \(Self.redactedDetail(detail, fallback: code))")
        }
        return MailError(.other, "sending through \(displayURL) failed: \(Self.redactedDetail(detail, fallback: code))")
    }

    /// Names the SMTP stage from libcurl's error text ("RCPT failed: 550", …).
    private static func rejection(detail: String, code: Int) -> String {
        if detail.hasPrefix("RCPT") { return "SMTP server refused the recipient (\(code))" }
        if detail.hasPrefix("MAIL") { return "SMTP server refused the sender (\(code))" }
        return "SMTP server rejected the message (\(code))"
    }

    private static func suffix(_ code: Int?) -> String { code.map { " (\($0))" } ?? "" }

    /// libcurl's error text, or its generic text for `code`. The text comes from
    /// libcurl, not from us, and never contains the password or body; URLs in it
    /// are stripped of userinfo anyway, in case a future libcurl echoes one.
    private static func redactedDetail(_ detail: String, fallback code: CURLcode) -> String {
        let text = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        return text.split(separator: " ", omittingEmptySubsequences: false)
            .map { $0.contains("://") ? SMTPTransport.redacted(String($0)) : String($0) }
            .joined(separator: " ")
    }

    /// The OS reason of a failed connect ("Connection refused"), when libcurl kept it.
    private func systemReason() -> String? {
        var osErrno = 0
        guard ccurl_getinfo_long(handle, CURLINFO_OS_ERRNO, &osErrno) == CURLE_OK, osErrno != 0 else { return nil }
        return SystemError.message(Int32(osErrno))
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }

    private func set(_ option: CURLoption, _ value: Int) throws(MailError) {
        try check(ccurl_setopt_long(handle, option, value), option)
    }

    private func set(_ option: CURLoption, _ value: String) throws(MailError) {
        try check(ccurl_setopt_string(handle, option, value), option)
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(MailError) {
        guard code == CURLE_OK else {
            throw MailError(
                .configuration,
                "libcurl refused option \(option.rawValue): \(String(cString: curl_easy_strerror(code)))")
        }
    }
}
