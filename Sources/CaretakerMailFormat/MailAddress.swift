/// A validated single mailbox address, `local@domain`, as used in an SMTP envelope
/// and in the `To`/`From` headers.
///
/// Validation is deliberately stricter than RFC 5321/5322 allow: whatever is
/// accepted here can be put into a header or an SMTP command verbatim, with no
/// quoting, so nothing a user typed into an address field can inject a header
/// or a second recipient.
///
/// - Local part: a dot-atom of RFC 5322 `atext` (letters, digits and
///   ``!#$%&'*+-/=?^_`{|}~``), at most 64 bytes, no leading, trailing or
///   doubled dot. Quoted local parts (`"a b"@x`) are refused. So are non-ASCII
///   local parts: they need SMTPUTF8 end to end, which we do not negotiate.
/// - Domain: at least two dot-separated labels of letters, digits and inner
///   hyphens, 1–63 bytes each, at most 253 bytes, and a top-level label that is
///   not all digits. No address literals (`[192.0.2.1]`), no trailing dot, no
///   raw IDN (use the `xn--` form).
/// - The whole address is at most 254 bytes (RFC 5321's forward-path limit).
public struct MailAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address exactly as given, e.g. `alice+news@mail.example.org`.
    public let address: String

    /// Validates `address`; throws `MailError.invalidAddress` when it is not a
    /// single mailbox (see the type's documentation for the rules).
    public init(_ address: String) throws(MailError) {
        guard Self.problem(in: address) == nil else { throw MailError.invalidAddress }
        self.address = address
    }

    /// Whether `address` passes validation.
    public static func isValid(_ address: String) -> Bool {
        problem(in: address) == nil
    }

    /// The part before the `@`.
    public var localPart: Substring { address[..<address.lastIndex(of: "@")!] }

    /// The part after the `@`.
    public var domain: Substring { address[address.index(after: address.lastIndex(of: "@")!)...] }

    public var description: String { address }

    /// Why `address` is not a valid single mailbox, or nil when it is. Meant for
    /// tests and for configuration errors; the job stores only "invalid address".
    public static func problem(in address: String) -> String? {
        let bytes = Array(address.utf8)
        if bytes.isEmpty { return "empty address" }
        if bytes.count > 254 { return "longer than 254 bytes" }
        let atSigns = bytes.indices.filter { bytes[$0] == UInt8(ascii: "@") }
        guard atSigns.count == 1, let at = atSigns.first else {
            return atSigns.isEmpty ? "no @" : "more than one @"
        }
        if let problem = localPartProblem(bytes[..<at]) { return problem }
        return domainProblem(bytes[(at + 1)...])
    }

    /// Checks the dot-atom before the `@`.
    private static func localPartProblem(_ local: ArraySlice<UInt8>) -> String? {
        if local.isEmpty { return "empty local part" }
        if local.count > 64 { return "local part longer than 64 bytes" }
        for atom in local.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            if atom.isEmpty { return "empty dot-separated part in the local part" }
            if let bad = atom.first(where: { !isAtext($0) }) {
                return "character \(describe(bad)) not allowed in the local part"
            }
        }
        return nil
    }

    /// Checks the host name after the `@`.
    private static func domainProblem(_ domain: ArraySlice<UInt8>) -> String? {
        if domain.isEmpty { return "empty domain" }
        if domain.count > 253 { return "domain longer than 253 bytes" }
        let labels = domain.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        if labels.count < 2 { return "domain needs at least two labels" }
        for label in labels {
            if label.isEmpty { return "empty label in the domain" }
            if label.count > 63 { return "domain label longer than 63 bytes" }
            if let bad = label.first(where: { !isLetterOrDigit($0) && $0 != UInt8(ascii: "-") }) {
                return "character \(describe(bad)) not allowed in the domain"
            }
            if label.first == UInt8(ascii: "-") || label.last == UInt8(ascii: "-") {
                return "domain label starts or ends with a hyphen"
            }
        }
        if labels.last!.allSatisfy(isDigit) { return "top-level domain is numeric" }
        return nil
    }

    /// RFC 5322 `atext`, ASCII only.
    private static func isAtext(_ byte: UInt8) -> Bool {
        isLetterOrDigit(byte) || "!#$%&'*+-/=?^_`{|}~".utf8.contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        isDigit(byte)
            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// A printable name for an offending byte; control characters are shown as
    /// hex so an error message never carries a raw CR or LF.
    private static func describe(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte)
            ? "'\(Character(Unicode.Scalar(byte)))'" : "0x" + String(byte, radix: 16, uppercase: true)
    }
}

/// A mailbox with an optional display name, as in `Community <no-reply@example.org>`.
/// Used for the configured `from` and for the recipient of a message.
public struct Mailbox: Sendable, Hashable, CustomStringConvertible {
    /// The display name, without quotes; nil when there is none.
    public let displayName: String?
    /// The validated address.
    public let address: MailAddress

    /// A mailbox from its parts. A display name with a control character (CR, LF,
    /// NUL, …) is refused; an empty one counts as none.
    public init(displayName: String? = nil, address: MailAddress) throws(MailError) {
        if let displayName, displayName.unicodeScalars.contains(where: Self.isControl) {
            throw MailError(.invalidAddress, "display name contains a control character")
        }
        let trimmed = displayName.map(Self.trimmingSpaces)
        self.displayName = (trimmed?.isEmpty ?? true) ? nil : trimmed
        self.address = address
    }

    /// Parses a configured `from`: either a bare address (`no-reply@example.org`)
    /// or `Display Name <address>`, where the name may be a quoted string
    /// (`"Community, Inc." <no-reply@example.org>`).
    public init(parsing text: String) throws(MailError) {
        if text.unicodeScalars.contains(where: Self.isControl) {
            throw MailError(.invalidAddress, "mailbox contains a control character (CR, LF, …)")
        }
        let text = Self.trimmingSpaces(text)
        guard text.hasSuffix(">") else {
            guard MailAddress.isValid(text) else { throw Self.invalid(text) }
            try self.init(address: MailAddress(text))
            return
        }
        guard let open = text.lastIndex(of: "<") else {
            throw MailError(.invalidAddress, "mailbox has '>' without '<'")
        }
        let inner = String(text[text.index(after: open)..<text.index(before: text.endIndex)])
        guard MailAddress.isValid(inner) else { throw Self.invalid(inner) }
        let name = try Self.unquote(Self.trimmingSpaces(String(text[..<open])))
        try self.init(displayName: name, address: MailAddress(inner))
    }

    /// `Name <address>` or the bare address, for logs. Not header-encoded:
    /// `MailMessage` does that.
    public var description: String {
        displayName.map { "\($0) <\(address)>" } ?? address.address
    }

    /// Removes the surrounding quotes of an RFC 5322 quoted-string and its
    /// backslash escapes; returns other names unchanged.
    private static func unquote(_ name: String) throws(MailError) -> String {
        guard name.count >= 2, name.hasPrefix("\""), name.hasSuffix("\"") else { return name }
        var result = ""
        var escaped = false
        for character in name.dropFirst().dropLast() {
            if escaped {
                result.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                throw MailError(.invalidAddress, "unescaped quote in the display name")
            } else {
                result.append(character)
            }
        }
        if escaped { throw MailError(.invalidAddress, "display name ends with a backslash") }
        return result
    }

    private static func invalid(_ address: String) -> MailError {
        MailError(.invalidAddress, "invalid address: \(MailAddress.problem(in: address) ?? "malformed mailbox")")
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
            || scalar == "\u{2028}" || scalar == "\u{2029}"
    }

    private static func trimmingSpaces(_ text: String) -> String {
        String(text.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}
