#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One plain-text mail to one recipient, and its RFC 5322 rendering.
///
/// Rendering never lets a header value span lines on its own: control characters
/// in the subject and display names are removed or encoded, so a template or a
/// user's display name cannot add headers. The body is UTF-8 text with CRLF line
/// ends and no bare CR or LF.
public struct MailMessage: Sendable {
    public var from: Mailbox
    public var to: Mailbox
    public var subject: String
    /// The text body; any mix of LF, CRLF or CR line ends is accepted.
    public var body: String
    /// The `Date` header (the host clock is fine here: it decides nothing).
    public var date: Date
    /// The `Message-ID` without angle brackets, e.g. `3f…9a@example.org`.
    public var messageID: String

    /// A message; `messageID` defaults to 128 random bits at the sender's domain.
    public init(
        from: Mailbox, to: Mailbox, subject: String, body: String,
        date: Date = Date(), messageID: String? = nil
    ) {
        self.from = from
        self.to = to
        self.subject = subject
        self.body = body
        self.date = date
        self.messageID = messageID.map(Self.sanitizedMessageID) ?? Self.randomMessageID(domain: from.address.domain)
    }

    /// The complete message as sent: headers, a blank line, and the body,
    /// every line ending in CRLF.
    public func rendered() -> [UInt8] {
        let (encoding, bodyBytes) = Self.encodeBody(body)
        var header = ""
        header += "Date: \(Self.rfc5322Date(date))\r\n"
        header += "Message-ID: <\(messageID)>\r\n"
        header += "From: \(Self.encodeMailbox(from, headerName: "From"))\r\n"
        header += "To: \(Self.encodeMailbox(to, headerName: "To"))\r\n"
        header += Self.encodeSubject(subject) + "\r\n"
        header += "MIME-Version: 1.0\r\n"
        header += "Content-Type: text/plain; charset=utf-8\r\n"
        header += "Content-Transfer-Encoding: \(encoding)\r\n"
        // RFC 3834: tells vacation responders not to answer a machine.
        header += "Auto-Submitted: auto-generated\r\n"
        header += "\r\n"
        return Array(header.utf8) + bodyBytes
    }

    /// `rendered()` as a string (always valid UTF-8), for files and tests.
    public var renderedText: String { String(decoding: rendered(), as: UTF8.self) }
}

// MARK: - Headers

extension MailMessage {
    /// Longest header line we aim for (RFC 5322 recommends 78).
    static let preferredLineLength = 78

    /// `Tue, 05 Mar 2024 09:04:05 +0000`, always in UTC.
    static func rfc5322Date(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) +0000"
    }

    static func randomMessageID(domain: Substring) -> String {
        var generator = SystemRandomNumberGenerator()
        let hex = (0..<2).map { _ -> String in
            let word = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - word.count) + word
        }.joined()
        return "\(hex)@\(domain)"
    }

    /// Keeps a caller-supplied id to characters that are safe between `<` and `>`.
    static func sanitizedMessageID(_ id: String) -> String {
        let trimmed = id.hasPrefix("<") && id.hasSuffix(">") && id.count >= 2 ? String(id.dropFirst().dropLast()) : id
        return String(
            trimmed.unicodeScalars.filter { (0x21...0x7E).contains($0.value) && $0 != "<" && $0 != ">" }
                .map(Character.init))
    }

    /// `Name <address>`, or the bare address without a display name.
    /// `headerName` is the header's name, to keep the first line short.
    static func encodeMailbox(_ mailbox: Mailbox, headerName: String) -> String {
        guard let name = mailbox.displayName else { return mailbox.address.address }
        let phrase = encodePhrase(name, firstLineUsed: headerName.count + 2)
        let lastLine = phrase.components(separatedBy: "\r\n").last!
        let address = "<\(mailbox.address.address)>"
        // Fold before the address rather than let the line grow past 78.
        let onSameLine = (phrase.contains("\r\n") ? 0 : headerName.count + 2) + lastLine.count + 1 + address.count <= 78
        return phrase + (onSameLine ? " " : "\r\n ") + address
    }

    /// A display name as atoms, as a quoted-string, or as RFC 2047 encoded-words.
    static func encodePhrase(_ name: String, firstLineUsed: Int) -> String {
        let clean = withoutControlCharacters(name)
        let isAtext = { (s: Unicode.Scalar) in
            s.isASCII
                && (s.properties.isAlphabetic || ("0"..."9").contains(s)
                    || "!#$%&'*+-/=?^_`{|}~ ".unicodeScalars.contains(s))
        }
        if clean.unicodeScalars.allSatisfy(isAtext), !clean.contains("=?") {
            return clean
        }
        if clean.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) }), !clean.contains("=?") {
            let escaped = clean.replacingBackslashesAndQuotes()
            return "\"\(escaped)\""
        }
        return encodedWords(clean, firstLineUsed: firstLineUsed).joined(separator: "\r\n ")
    }

    /// The whole `Subject:` header, folded; encoded when it is not plain ASCII.
    static func encodeSubject(_ subject: String) -> String {
        let clean = withoutControlCharacters(subject)
        let plain = clean.unicodeScalars.allSatisfy { (0x20...0x7E).contains($0.value) } && !clean.contains("=?")
        if plain, let folded = foldASCII("Subject: " + clean) { return folded }
        return "Subject: " + encodedWords(clean, firstLineUsed: "Subject: ".count).joined(separator: "\r\n ")
    }

    /// Folds an ASCII header line at spaces so lines stay near 78 characters;
    /// nil if some word would still make a line longer than 998. Runs of spaces
    /// collapse to one, so no continuation line is ever blank.
    static func foldASCII(_ line: String) -> String? {
        var lines: [String] = []
        var current = ""
        for word in line.split(separator: " ") {
            if current.isEmpty {
                current = String(word)
            } else if current.count + 1 + word.count <= preferredLineLength {
                current += " " + word
            } else {
                lines.append(current)
                current = " " + word  // the continuation line starts with the folding space
            }
        }
        lines.append(current)
        guard lines.allSatisfy({ $0.utf8.count <= 998 }) else { return nil }
        return lines.joined(separator: "\r\n")
    }

    /// RFC 2047 `=?UTF-8?B?…?=` words, each holding whole Unicode scalars
    /// (RFC 2047 §5: no character split across words), sized so that every
    /// line stays within 76 characters: the first word shares its line with
    /// `firstLineUsed` characters (e.g. `Subject: `), later words each start a
    /// continuation line after one space.
    static func encodedWords(_ text: String, firstLineUsed: Int = 1) -> [String] {
        // 12 characters of wrapper; every 3 bytes become 4 base64 characters.
        func capacity(_ used: Int) -> Int { max(3, (76 - used - 12) / 4 * 3) }
        var words: [String] = []
        var chunk: [UInt8] = []
        var limit = capacity(firstLineUsed)
        for scalar in text.unicodeScalars {
            let bytes = Array(String(scalar).utf8)
            if chunk.count + bytes.count > limit, !chunk.isEmpty {
                words.append(encodedWord(chunk))
                chunk = []
                limit = capacity(1)
            }
            chunk += bytes
        }
        if !chunk.isEmpty || words.isEmpty { words.append(encodedWord(chunk)) }
        return words
    }

    private static func encodedWord(_ bytes: [UInt8]) -> String {
        "=?UTF-8?B?\(Data(bytes).base64EncodedString())?="
    }

    /// Replaces every control character (CR, LF, TAB, NUL, DEL, C1, U+2028/9) by a
    /// space: header values are single-line by construction.
    static func withoutControlCharacters(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { scalar in
                    scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}"
                        || scalar == "\u{2029}"
                        ? " " : scalar
                }))
    }
}

// MARK: - Body

extension MailMessage {
    /// The body with CRLF line ends, and the transfer encoding it needs:
    /// `7bit` for short-lined ASCII, `8bit` for short-lined UTF-8 (readable in
    /// the raw message), `quoted-printable` when a line exceeds 998 bytes.
    static func encodeBody(_ body: String) -> (encoding: String, bytes: [UInt8]) {
        let lines = normalizedLines(body)
        if lines.allSatisfy({ $0.count <= 998 }) {
            let ascii = lines.allSatisfy { $0.allSatisfy { $0 < 0x80 } }
            return (ascii ? "7bit" : "8bit", lines.flatMap { $0 + [0x0D, 0x0A] })
        }
        return ("quoted-printable", lines.flatMap { quotedPrintable($0) + [0x0D, 0x0A] })
    }

    /// Splits the body into lines at LF, CRLF or a lone CR, drops NUL bytes (not
    /// allowed in 8bit text), and removes one trailing empty line so a body that
    /// ends in a newline does not gain an extra blank line.
    static func normalizedLines(_ body: String) -> [[UInt8]] {
        var lines: [[UInt8]] = [[]]
        var previousWasCR = false
        for byte in body.utf8 {
            switch byte {
            case 0x0D:
                lines.append([])
                previousWasCR = true
                continue
            case 0x0A where previousWasCR:
                break  // the LF of a CRLF: the line was already ended at the CR
            case 0x0A:
                lines.append([])
            case 0x00:
                break
            default:
                lines[lines.count - 1].append(byte)
            }
            previousWasCR = false
        }
        if lines.count > 1, lines.last!.isEmpty { lines.removeLast() }
        return lines
    }

    /// RFC 2045 §6.7 quoted-printable of one line, with soft breaks so encoded
    /// lines stay within 76 characters.
    static func quotedPrintable(_ line: [UInt8]) -> [UInt8] {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        var lineLength = 0
        for (index, byte) in line.enumerated() {
            let isLast = index == line.count - 1
            let literal =
                (byte >= 33 && byte <= 126 && byte != UInt8(ascii: "="))
                || ((byte == 0x20 || byte == 0x09) && !isLast)
            let encoded: [UInt8] = literal ? [byte] : [UInt8(ascii: "="), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            // Leave room for the "=" of a soft break (76 including it).
            if lineLength + encoded.count > 75 {
                output += [UInt8(ascii: "="), 0x0D, 0x0A]
                lineLength = 0
            }
            output += encoded
            lineLength += encoded.count
        }
        return output
    }
}

extension String {
    fileprivate func replacingBackslashesAndQuotes() -> String {
        var result = ""
        for character in self {
            if character == "\\" || character == "\"" { result.append("\\") }
            result.append(character)
        }
        return result
    }
}
