import CaretakerCore
import CaretakerTestSupport
import Foundation
import Postgres
import Testing

/// TLS to PostgreSQL (`sslmode=verify-full` + `sslrootcert` in `database.url`) and to an
/// SMTP relay with its own CA (`mail.ca_file`), each against a throwaway CA made with openssl.
@Suite struct TLSTests {
    /// The error `body` throws, as text; records an issue when it throws none.
    func failure(_ body: () throws -> Void) -> String {
        do {
            try body()
        } catch {
            return "\(error)"
        }
        Issue.record("succeeded but should have failed")
        return ""
    }

    @Test("PostgreSQL verify-full: connects over TLS with the CA, fails without it and with another CA, saying why")
    func postgresVerifyFull() throws {
        let ca = try TestCertificateAuthority()
        let stranger = try TestCertificateAuthority(name: "another CA")
        defer {
            ca.remove()
            stranger.remove()
        }
        let server = try TemporaryPostgres(tls: ca)
        defer { try? server.stop() }
        func configuration(_ rootCertificate: String?) throws -> String {
            let root = rootCertificate.map { " sslrootcert=\($0)" } ?? ""
            return """
                [database]
                url = "host=localhost port=\(server.port) user=postgres dbname=postgres sslmode=verify-full\(root)"
                connect_timeout = "5s"
                """
        }
        func connect(_ rootCertificate: String?) throws -> Connection {
            let options = try ConfigurationLoader.parse(configuration(rootCertificate), file: "tls.toml").database
            return try DatabaseConnector(options: options).connect()
        }

        let connection = try connect(ca.certificate)
        let session = try connection.query("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()").first
        #expect(session?.bool("ssl") == true)
        #expect(session?["version"]?.hasPrefix("TLSv1.") == true)

        let wrongCA = failure { _ = try connect(stranger.certificate) }
        #expect(wrongCA.contains("certificate verify failed"), "\(wrongCA)")
        let noCA = failure { _ = try connect("\(ca.directory)/missing.crt") }
        #expect(noCA.contains("root certificate file") && noCA.contains("does not exist"), "\(noCA)")

        // What an operator sees: exit 69 and libpq's reason.
        let path = NSTemporaryDirectory() + "caretaker-tls-\(UUID().uuidString).toml"
        try configuration(stranger.certificate).write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let check = try Caretaker.run(["check", "--config", path])
        #expect(check.status == 69)
        #expect(
            check.stderr.contains("database unavailable") && check.stderr.contains("certificate verify failed"),
            "\(check.stderr)")
    }

    /// A transport built from `[mail]` as the daemon builds it, so `ca_file` is read from the file.
    func transport(url: String, starttls: Bool, caFile: String) throws -> any MailTransport {
        let configuration = try ConfigurationLoader.parse(
            """
            [mail]
            url = "\(url)"
            starttls = \(starttls)
            ca_file = "\(caFile)"
            """, file: "mail.toml")
        return try MailSetup.transport(configuration.mail, environment: [:])
    }

    func message() throws -> MailMessage {
        MailMessage(
            from: try Mailbox(parsing: "Community <no-reply@example.org>"),
            to: try Mailbox(address: MailAddress("alice@example.org")),
            subject: "Your temporary password", body: "Temporary password: Ab3$de=fGhjk?\n")
    }

    @Test(
        "SMTP with mail.ca_file: STARTTLS and implicit TLS deliver over TLS; another CA fails the handshake, named as such",
        arguments: [false, true])
    func smtpCertificateAuthority(implicit: Bool) throws {
        let ca = try TestCertificateAuthority()
        let stranger = try TestCertificateAuthority(name: "another CA")
        defer {
            ca.remove()
            stranger.remove()
        }
        let server = try TestSMTPServer.start(.init(tls: implicit ? .implicit(ca) : .starttls(ca)))
        defer { server.stop() }
        #expect(server.url.hasPrefix(implicit ? "smtps://" : "smtp://"))

        try transport(url: server.url, starttls: !implicit, caFile: ca.certificate).send(message())
        let received = try server.waitForMessages(count: 1, timeout: .seconds(10))
        #expect(received.first?.tls == true)

        let refused = failure {
            try transport(url: server.url, starttls: !implicit, caFile: stranger.certificate).send(message())
        }
        #expect(
            refused.contains("TLS handshake with \(server.url) failed: its certificate is not trusted"), "\(refused)")
        #expect(try server.messages().count == 1)
    }

    @Test("SMTP: a ca_file that does not exist fails the send, naming TLS")
    func smtpMissingCertificateAuthority() throws {
        let ca = try TestCertificateAuthority()
        defer { ca.remove() }
        let server = try TestSMTPServer.start(.init(tls: .implicit(ca)))
        defer { server.stop() }
        let refused = failure {
            try transport(url: server.url, starttls: false, caFile: ca.directory + "/missing.crt").send(message())
        }
        #expect(refused.contains("TLS with \(server.url) failed"), "\(refused)")
        #expect(try server.messages().isEmpty)
    }
}
