import Foundation
import Testing

@testable import CaretakerMailFormat

@Suite struct MailMessageTests {
    static let from = try! Mailbox(parsing: "Community <no-reply@example.org>")
    static let to = try! Mailbox(address: MailAddress("alice@example.org"))
    /// 2024-03-05 09:04:05 UTC, a Tuesday.
    static let date = Date(timeIntervalSince1970: 1_709_629_445)

    func message(
        subject: String = "Your temporary password", body: String = "Temporary password: Ab3$defGhjkm\n"
    )
        -> MailMessage
    {
        MailMessage(from: Self.from, to: Self.to, subject: subject, body: body, date: Self.date)
    }

    /// Splits a rendered message into header lines (still folded) and body.
    func split(_ text: String) -> (header: [String], body: String) {
        let parts = text.components(separatedBy: "\r\n\r\n")
        return (parts[0].components(separatedBy: "\r\n"), parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    /// Unfolded value of the header `name`.
    func header(_ name: String, in text: String) -> String? {
        var unfolded: [String] = []
        for line in split(text).header {
            if line.hasPrefix(" ") { unfolded[unfolded.count - 1] += line } else { unfolded.append(line) }
        }
        return unfolded.first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) }
    }

    /// Decodes a run of `=?UTF-8?B?…?=` words separated by folding whitespace.
    func decodeEncodedWords(_ value: String) -> String {
        var bytes: [UInt8] = []
        for word in value.split(separator: " ") {
            #expect(word.hasPrefix("=?UTF-8?B?") && word.hasSuffix("?="))
            #expect(word.count <= 75)
            let payload = word.dropFirst(10).dropLast(2)
            bytes += Data(base64Encoded: String(payload)).map(Array.init) ?? []
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func rendersAllRequiredHeaders() throws {
        let text = message().renderedText
        #expect(header("Date", in: text) == "Tue, 05 Mar 2024 09:04:05 +0000")
        let messageID = try #require(header("Message-ID", in: text))
        #expect(messageID.hasPrefix("<") && messageID.hasSuffix("@example.org>"))
        #expect(header("From", in: text) == "Community <no-reply@example.org>")
        #expect(header("To", in: text) == "alice@example.org")
        #expect(header("Subject", in: text) == "Your temporary password")
        #expect(header("MIME-Version", in: text) == "1.0")
        #expect(header("Content-Type", in: text) == "text/plain; charset=utf-8")
        #expect(header("Content-Transfer-Encoding", in: text) == "7bit")
    }

    @Test func usesCRLFOnlyAndKeepsThePasswordLineVerbatim() {
        let text = message(body: "Hello,\n\nTemporary password: =Ab3$de+fG?\r\nBye\rNow").renderedText
        let bytes = Array(text.utf8)
        for (index, byte) in bytes.enumerated() {
            if byte == 0x0A { #expect(index > 0 && bytes[index - 1] == 0x0D, "bare LF at \(index)") }
            if byte == 0x0D { #expect(index + 1 < bytes.count && bytes[index + 1] == 0x0A, "bare CR at \(index)") }
        }
        #expect(split(text).body == "Hello,\r\n\r\nTemporary password: =Ab3$de+fG?\r\nBye\r\nNow\r\n")
    }

    @Test func messageIDsDifferAndCanBeGiven() {
        #expect(message().messageID != message().messageID)
        let given = MailMessage(
            from: Self.from, to: Self.to, subject: "s", body: "b", date: Self.date, messageID: "<abc\r\n@example.org>")
        #expect(given.messageID == "abc@example.org")
    }

    @Test func encodesNonASCIISubjectAsEncodedWords() throws {
        let subject = "Ihr vorübergehendes Passwort – gültig 24 Stunden, bitte ändern Sie es 🙂 sofort"
        let text = message(subject: subject).renderedText
        let value = try #require(header("Subject", in: text))
        #expect(decodeEncodedWords(value) == subject)
        for line in split(text).header { #expect(line.utf8.count <= 76, "long line: \(line)") }
    }

    @Test func foldsLongASCIISubjects() throws {
        let subject = Array(repeating: "word", count: 40).joined(separator: " ")
        let text = message(subject: subject).renderedText
        #expect(split(text).header.allSatisfy { $0.utf8.count <= 78 })
        let value = try #require(header("Subject", in: text))
        #expect(value == subject)
    }

    @Test func subjectCannotInjectHeaders() {
        let text = message(subject: "Hi\r\nBcc: x@evil.example\nX-Evil: 1").renderedText
        let lines = split(text).header
        #expect(!lines.contains { $0.hasPrefix("Bcc:") || $0.hasPrefix("X-Evil:") })
        #expect(header("Subject", in: text) == "Hi Bcc: x@evil.example X-Evil: 1")
    }

    @Test func subjectLookingLikeAnEncodedWordIsEncoded() throws {
        let text = message(subject: "=?UTF-8?B?SGk=?=").renderedText
        let value = try #require(header("Subject", in: text))
        #expect(decodeEncodedWords(value) == "=?UTF-8?B?SGk=?=")
    }

    @Test func encodesDisplayNames() throws {
        let address = try MailAddress("ops@example.org")
        func fromHeader(_ name: String) throws -> String? {
            let mail = MailMessage(
                from: try Mailbox(displayName: name, address: address), to: Self.to, subject: "s", body: "b")
            return header("From", in: mail.renderedText)
        }
        #expect(try fromHeader("Community Team") == "Community Team <ops@example.org>")
        #expect(try fromHeader(#"Community, Inc. "Ops" \ x"#) == #""Community, Inc. \"Ops\" \\ x" <ops@example.org>"#)
        let encoded = try #require(try fromHeader("Gemeinschaft Zürich"))
        #expect(encoded.hasSuffix(" <ops@example.org>"))
        #expect(decodeEncodedWords(String(encoded.dropLast(" <ops@example.org>".count))) == "Gemeinschaft Zürich")
    }

    @Test func longEncodedDisplayNameKeepsLinesShort() throws {
        let name = String(repeating: "Gemeinschaftsverwaltung Zürich ", count: 4)
        let from = try Mailbox(displayName: name, address: MailAddress("ops@example.org"))
        let text = MailMessage(from: from, to: Self.to, subject: "s", body: "b").renderedText
        #expect(split(text).header.allSatisfy { $0.utf8.count <= 78 })
        let value = try #require(header("From", in: text))
        #expect(value.hasSuffix(" <ops@example.org>"))
        #expect(
            decodeEncodedWords(String(value.dropLast(" <ops@example.org>".count)))
                == name.trimmingCharacters(in: .whitespaces))
    }

    @Test func recipientDisplayNameIsRendered() throws {
        let to = try Mailbox(displayName: "Alice", address: MailAddress("alice@example.org"))
        let mail = MailMessage(from: Self.from, to: to, subject: "s", body: "b")
        #expect(header("To", in: mail.renderedText) == "Alice <alice@example.org>")
    }

    @Test func utf8BodyIs8bit() {
        let text = message(body: "Grüße!\nTemporary password: Ab3$defGhjkm").renderedText
        #expect(header("Content-Transfer-Encoding", in: text) == "8bit")
        #expect(split(text).body == "Grüße!\r\nTemporary password: Ab3$defGhjkm\r\n")
    }

    @Test func overlongLinesSwitchToQuotedPrintable() {
        let long = String(repeating: "é=x ", count: 400)  // 1,600 bytes in one line
        let text = message(body: long + "\nshort").renderedText
        #expect(header("Content-Transfer-Encoding", in: text) == "quoted-printable")
        let bodyLines = split(text).body.components(separatedBy: "\r\n").dropLast()
        #expect(bodyLines.allSatisfy { $0.utf8.count <= 76 })
        #expect(bodyLines.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 } })
        #expect(decodeQuotedPrintable(split(text).body) == long + "\r\nshort\r\n")
    }

    @Test func bodyDropsNULBytes() {
        let text = message(body: "a\u{0}b").renderedText
        #expect(split(text).body == "ab\r\n")
    }

    func decodeQuotedPrintable(_ text: String) -> String {
        var bytes: [UInt8] = []
        let input = Array(text.utf8)
        var index = 0
        while index < input.count {
            if input[index] == UInt8(ascii: "=") {
                if input[index + 1] == 0x0D {
                    index += 3  // soft line break
                    continue
                }
                bytes.append(UInt8(String(decoding: input[(index + 1)...(index + 2)], as: UTF8.self), radix: 16)!)
                index += 3
            } else {
                bytes.append(input[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
