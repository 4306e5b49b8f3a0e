import CaretakerCore
import CaretakerTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The mail layer against a real SMTP server (aiosmtpd under Debian's python).
@Suite struct SMTPTransportTests {
    static let from = try! Mailbox(parsing: "Community <no-reply@example.org>")

    func message(
        to address: String = "alice@example.org", subject: String = "Your temporary password",
        body: String = "Hello,\n\nTemporary password: Ab3$de=fGhjk?\n"
    ) throws -> MailMessage {
        MailMessage(from: Self.from, to: try Mailbox(address: MailAddress(address)), subject: subject, body: body)
    }

    func transport(
        _ url: String, username: String? = nil, password: String? = nil,
        connectTimeout: Duration = .seconds(10), timeout: Duration = .seconds(30)
    ) throws -> SMTPTransport {
        try SMTPTransport(
            configuration: .init(
                url: url, username: username, password: password, connectTimeout: connectTimeout, timeout: timeout))
    }

    /// Runs `send` and returns the `MailError` it must throw.
    func sendError(_ transport: some MailTransport, _ message: MailMessage) throws -> MailError {
        do {
            try transport.send(message)
        } catch {
            return error
        }
        Issue.record("send succeeded but should have failed")
        return MailError(.other, "no error")
    }

    @Test func messageArrivesWithAllHeadersAndOneRecipient() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        let mail = try message(body: "Hello,\n.a line starting with a dot\n\nTemporary password: Ab3$de=fGhjk?\n")
        try transport(server.url).send(mail)

        let received = try server.waitForMessages(count: 1, timeout: .seconds(10))
        #expect(received.count == 1)
        let got = try #require(received.first)
        #expect(got.recipients == ["alice@example.org"])
        #expect(got.mailFrom == "no-reply@example.org")
        #expect(got.login == nil)
        for name in [
            "Date", "Message-ID", "From", "To", "Subject", "MIME-Version", "Content-Type",
            "Content-Transfer-Encoding",
        ] {
            #expect(got.header(name) != nil, "missing \(name)")
        }
        #expect(got.header("To") == "alice@example.org")
        #expect(got.header("From") == "Community <no-reply@example.org>")
        #expect(got.header("Subject") == "Your temporary password")
        #expect(got.header("Message-ID") == "<\(mail.messageID)>")
        #expect(got.headers.filter { ["to", "cc", "bcc"].contains($0.name.lowercased()) }.count == 1)
        // libcurl dot-stuffs and the server unstuffs: the body arrives as sent.
        #expect(got.body == "Hello,\r\n.a line starting with a dot\r\n\r\nTemporary password: Ab3$de=fGhjk?\r\n")
        #expect(got.data == mail.renderedText)
    }

    @Test func pythonsEmailParserReadsTheDeliveredMessage() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        let subject = "Ihr vorübergehendes Passwort – gültig 24 Stunden"
        try transport(server.url).send(try message(subject: subject, body: "Grüße\nTemporary password: Ab3$de=fGhjk?"))
        let got = try #require(try server.waitForMessages(count: 1, timeout: .seconds(10)).first)
        let parsed = try parseWithPython(Data(got.data.utf8))
        #expect(parsed["subject"] == subject)
        #expect(parsed["to"] == "alice@example.org")
        #expect(parsed["from"] == "Community <no-reply@example.org>")
        #expect(parsed["body"] == "Grüße\nTemporary password: Ab3$de=fGhjk?\n")
        #expect(parsed["defects"] == "0")
        #expect(parsed["date_ok"] == "True")
    }

    @Test func headerInjectionInTheAddressNeverReachesTheServer() throws {
        let server = try TestSMTPServer.start()
        defer { server.stop() }
        let attacks = [
            "victim@example.org\r\nBcc: x@evil.example",
            "victim@example.org\nBcc: x@evil.example",
            "victim@example.org>\r\nRCPT TO:<x@evil.example",
            "victim@example.org,x@evil.example",
        ]
        for attack in attacks {
            #expect(throws: MailError.invalidAddress) { try MailAddress(attack) }
            #expect(throws: MailError.self) { try Mailbox(parsing: attack) }
        }
        // A valid message still goes through, to exactly its one recipient.
        try transport(server.url).send(try message(to: "victim@example.org"))
        let received = try server.waitForMessages(count: 1, timeout: .seconds(10))
        #expect(received.flatMap(\.recipients) == ["victim@example.org"])
        #expect(!received[0].data.contains("evil"))
    }

    @Test func serverDownFailsQuicklyWithoutSecrets() throws {
        let server = try TestSMTPServer.start()
        let port = server.port
        server.stop()
        let sender = try transport(
            "smtp://mailer:hunter2secret@127.0.0.1:\(port)", username: "mailer",
            password: "hunter2secret")
        let started = ContinuousClock.now
        let error = try sendError(sender, try message())
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(error.kind == .connection)
        #expect(error.isTransient)
        #expect(error.message == "could not connect to smtp://127.0.0.1:\(port): Connection refused")
        #expect(!error.message.contains("hunter2secret") && !error.message.contains("mailer"))
        #expect(!error.message.contains("Temporary password"))
    }

    @Test func silentServerTimesOut() throws {
        // A socket that listens but never answers: the kernel completes the
        // TCP handshake, the SMTP greeting never comes.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                #expect(bind(fd, raw, length) == 0)
                #expect(listen(fd, 4) == 0)
                #expect(getsockname(fd, raw, &length) == 0)
            }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        try #require(port != 0, "the socket got no port")
        let sender = try transport("smtp://127.0.0.1:\(port)", timeout: .seconds(1))
        let started = ContinuousClock.now
        let error = try sendError(sender, try message())
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(error.kind == .connection)
        #expect(error.message.hasPrefix("timed out talking to smtp://127.0.0.1:\(port)"))
    }

    @Test(arguments: [451, 550])
    func recipientRejectionNamesTheCode(code: Int) throws {
        let server = try TestSMTPServer.start(.init(rejectRecipientCode: code))
        defer { server.stop() }
        let error = try sendError(try transport(server.url), try message())
        #expect(error.kind == .rejected)
        #expect(error.smtpCode == code)
        #expect(error.message == "SMTP server refused the recipient (\(code))")
        #expect(error.isTransient == (code == 451))
        #expect(try server.messages().isEmpty)
    }

    @Test func senderRejectionNamesTheCode() throws {
        let server = try TestSMTPServer.start(.init(rejectSenderCode: 553))
        defer { server.stop() }
        let error = try sendError(try transport(server.url), try message())
        #expect(error.smtpCode == 553)
        #expect(error.message == "SMTP server refused the sender (553)")
    }

    @Test func dataRejectionNamesTheCode() throws {
        let server = try TestSMTPServer.start(.init(rejectDataCode: 554))
        defer { server.stop() }
        let error = try sendError(try transport(server.url), try message())
        #expect(error.kind == .rejected)
        #expect(error.smtpCode == 554)
        #expect(error.message == "SMTP server rejected the message (554)")
        #expect(!error.message.contains("Temporary password"))
    }

    @Test func authWithUsernameAndPasswordWorks() throws {
        let server = try TestSMTPServer.start(.init(requiredLogin: ("mailer", "s3cret-pass")))
        defer { server.stop() }
        try transport(server.url, username: "mailer", password: "s3cret-pass").send(try message())
        let received = try server.waitForMessages(count: 1, timeout: .seconds(10))
        #expect(received.first?.login == "mailer")
        #expect(received.first?.recipients == ["alice@example.org"])
    }

    @Test func wrongPasswordIsAnAuthenticationErrorWithoutThePassword() throws {
        let server = try TestSMTPServer.start(.init(requiredLogin: ("mailer", "s3cret-pass")))
        defer { server.stop() }
        let error = try sendError(try transport(server.url, username: "mailer", password: "wrong-pass"), try message())
        #expect(error.kind == .authentication)
        #expect(error.message.hasPrefix("SMTP server refused the login"))
        #expect(!error.message.contains("wrong-pass"))
        #expect(!error.isTransient)
    }

    @Test func missingLoginIsRefused() throws {
        let server = try TestSMTPServer.start(.init(requiredLogin: ("mailer", "s3cret-pass")))
        defer { server.stop() }
        let error = try sendError(try transport(server.url), try message())
        #expect(error.smtpCode == 530)
        #expect(try server.messages().isEmpty)
    }

    @Test(arguments: ["http://127.0.0.1:25", "file:///etc/passwd", "smtp://host\r\n:25", "127.0.0.1:25"])
    func refusesNonSMTPURLs(url: String) {
        #expect(throws: MailError.self) { try SMTPTransport(configuration: .init(url: url)) }
    }

    @Test func urlUserinfoIsRedacted() throws {
        let sender = try transport("smtps://user:p%40ss@mail.example.org:465/")
        #expect(sender.displayURL == "smtps://mail.example.org:465/")
    }

    // MARK: - FileTransport

    @Test func fileTransportWritesAParseablePrivateEml() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("caretaker-mail-\(UUID().uuidString)/outbox").path
        defer { try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent) }
        let mail = try message(subject: "Votre mot de passe temporaire")
        try FileTransport(directory: directory).send(mail)

        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(names.count == 1, "only the final file, no temporary left: \(names)")
        let name = try #require(names.first)
        #expect(name.hasSuffix("-\(mail.messageID).eml"))
        #expect(name.range(of: #"^\d{8}T\d{6}\.\d{3}Z-"#, options: .regularExpression) != nil)

        let path = directory + "/" + name
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let directoryAttributes = try FileManager.default.attributesOfItem(atPath: directory)
        #expect((directoryAttributes[.posixPermissions] as? Int) == 0o700)

        let contents = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(contents == Data(mail.rendered()))
        let parsed = try parseWithPython(contents)
        #expect(parsed["subject"] == "Votre mot de passe temporaire")
        #expect(parsed["to"] == "alice@example.org")
        #expect(parsed["message_id"] == "<\(mail.messageID)>")
        #expect(parsed["body"] == "Hello,\n\nTemporary password: Ab3$de=fGhjk?\n")
        #expect(parsed["defects"] == "0")
    }

    /// Parses a raw message with Python's `email` package (policy.default, so
    /// RFC 2047 words are decoded) and returns a few fields as strings.
    func parseWithPython(_ raw: Data) throws -> [String: String] {
        let script = """
            import sys, json, email, email.policy, email.utils
            m = email.message_from_bytes(sys.stdin.buffer.read(), policy=email.policy.default)
            defects = len(m.defects) + sum(len(p.defects) for p in m.walk())
            body = m.get_content()
            print(json.dumps({"subject": str(m["subject"]), "to": str(m["to"]), "from": str(m["from"]),
                "message_id": str(m["message-id"]), "body": body.replace("\\r\\n", "\\n"), "defects": str(defects),
                "date_ok": str(email.utils.parsedate_to_datetime(m["date"]) is not None)}))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(raw)
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return try JSONDecoder().decode([String: String].self, from: data)
    }
}
