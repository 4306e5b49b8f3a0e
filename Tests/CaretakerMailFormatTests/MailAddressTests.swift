import Testing

@testable import CaretakerMailFormat

@Suite struct MailAddressTests {
    @Test(arguments: [
        "alice@example.org",
        "Alice.Smith@Example.ORG",
        "alice+news@mail.example.org",
        "first.middle.last@sub.domain.example.co.uk",
        "o'brien@example.ie",
        "user_name-1@xn--bcher-kva.example",
        "x@a.io",
        "a!#$%&*+/=?^_`{|}~-@example.org",
        "1234@example.org",
    ])
    func acceptsNormalAddresses(_ address: String) throws {
        let parsed = try MailAddress(address)
        #expect(parsed.address == address)
    }

    @Test(arguments: [
        "",
        "alice",
        "alice@",
        "@example.org",
        "alice@@example.org",
        "alice@bob@example.org",
        "alice@example.org\r\nBcc: x@evil.example",
        "alice@example.org\nBcc: x@evil.example",
        "alice@example.org\r",
        "alice\r@example.org",
        "alice@example.org\u{0}",
        "alice @example.org",
        " alice@example.org",
        "alice@example.org ",
        "alice@exa mple.org",
        "al\tice@example.org",
        "alice@example.org,bob@example.org",
        "alice@example.org;bob@example.org",
        "<alice@example.org>",
        "Alice <alice@example.org>",
        "alice>@example.org",
        "\"alice\"@example.org",
        "\"a b\"@example.org",
        ".alice@example.org",
        "alice.@example.org",
        "al..ice@example.org",
        "alice@localhost",
        "alice@example",
        "alice@example.org.",
        "alice@.example.org",
        "alice@exa..mple.org",
        "alice@-example.org",
        "alice@example-.org",
        "alice@exa_mple.org",
        "alice@[192.0.2.1]",
        "alice@192.0.2.1",
        "alice@bücher.example",
        "jürgen@example.org",
        "alice@example.org\u{2028}",
        "(comment)alice@example.org",
        "alice\\@example.org",
    ])
    func rejectsAnythingButOneMailbox(_ address: String) {
        #expect(!MailAddress.isValid(address))
        #expect(throws: MailError.invalidAddress) { try MailAddress(address) }
    }

    @Test func enforcesLengthLimits() {
        let local64 = String(repeating: "a", count: 64)
        #expect(MailAddress.isValid("\(local64)@example.org"))
        #expect(!MailAddress.isValid("\(local64)a@example.org"))

        let label63 = String(repeating: "b", count: 63)
        #expect(MailAddress.isValid("a@\(label63).org"))
        #expect(!MailAddress.isValid("a@\(label63)b.org"))

        // 254 bytes in all is the most an SMTP path may carry.
        let labels = Array(repeating: String(repeating: "c", count: 60), count: 4).joined(separator: ".")
        let domain = labels + ".org"  // 247 bytes
        #expect(MailAddress.isValid("abcdef@" + domain))  // 254
        #expect(!MailAddress.isValid("abcdefg@" + domain))  // 255
    }

    @Test func invalidAddressErrorIsWhatTheJobStores() {
        #expect(MailError.invalidAddress.description == "invalid address")
        #expect(MailError.invalidAddress.kind == .invalidAddress)
    }

    @Test func problemNamesTheReasonWithoutRawControlCharacters() throws {
        let problem = try #require(MailAddress.problem(in: "a\r\n@example.org"))
        #expect(problem.contains("0xD"))
        #expect(!problem.contains("\r") && !problem.contains("\n"))
        #expect(MailAddress.problem(in: "a@b@example.org") == "more than one @")
        #expect(MailAddress.problem(in: "a@example.org") == nil)
    }

    @Test func exposesLocalPartAndDomain() throws {
        let address = try MailAddress("alice+tag@mail.example.org")
        #expect(address.localPart == "alice+tag")
        #expect(address.domain == "mail.example.org")
    }

    // MARK: - Mailbox (the configured `from`)

    @Test func parsesDisplayNameAndAddress() throws {
        let mailbox = try Mailbox(parsing: "Community <no-reply@example.org>")
        #expect(mailbox.displayName == "Community")
        #expect(mailbox.address.address == "no-reply@example.org")
    }

    @Test func parsesBareAddress() throws {
        let mailbox = try Mailbox(parsing: "  no-reply@example.org ")
        #expect(mailbox.displayName == nil)
        #expect(mailbox.address.address == "no-reply@example.org")
    }

    @Test func parsesQuotedAndUnicodeDisplayNames() throws {
        let quoted = try Mailbox(parsing: #""Community, Inc. \"Ops\"" <ops@example.org>"#)
        #expect(quoted.displayName == #"Community, Inc. "Ops""#)
        let unicode = try Mailbox(parsing: "Gemeinschaft Zürich <no-reply@example.ch>")
        #expect(unicode.displayName == "Gemeinschaft Zürich")
        let bracketsOnly = try Mailbox(parsing: "<no-reply@example.org>")
        #expect(bracketsOnly.displayName == nil)
    }

    @Test(arguments: [
        "Community <no-reply@example.org>\r\nBcc: x@evil.example",
        "Community\r\n <no-reply@example.org>",
        "Community <no-reply@example.org\n>",
        "Community <no-reply@example.org",
        "Community no-reply@example.org>",
        "Community <a@b@example.org>",
        "Community <>",
        "Community",
        "",
        #""Unbalanced " quote" <a@example.org>"#,
    ])
    func rejectsBrokenFromValues(_ text: String) {
        #expect(throws: MailError.self) { try Mailbox(parsing: text) }
    }

    @Test func rejectsControlCharactersInDisplayName() throws {
        let address = try MailAddress("a@example.org")
        #expect(throws: MailError.self) { try Mailbox(displayName: "Evil\r\nBcc: x@evil.example", address: address) }
        #expect(try Mailbox(displayName: "   ", address: address).displayName == nil)
    }
}
