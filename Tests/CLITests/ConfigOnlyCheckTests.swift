import CaretakerTestSupport
import Foundation
import Testing

/// `caretaker check --config-only`: what the unit's ExecReload runs before it signals the
/// service, so `systemctl reload` fails on a file the daemon would reject. No database.
@Suite struct ConfigOnlyCheckTests {
    @Test("a valid file exits 0 without a database; an invalid one 78 with the loader's message")
    func validAndInvalid() throws {
        let path = try BadConfigTests.write(BadConfigTests.header)
        defer { BadConfigTests.remove(path) }
        let valid = try Caretaker.run(["check", "--config-only", "--config", path])
        #expect(valid.status == 0, "\(valid.stderr)")
        #expect(valid.stdout.contains("configuration ok: \(path)"), "\(valid.stdout)")
        try (BadConfigTests.header + "[jobs.expire-content\n").write(toFile: path, atomically: true, encoding: .utf8)
        let invalid = try Caretaker.run(["check", "--config-only", "--config", path])
        #expect(invalid.status == 78)
        #expect(invalid.stderr.contains("configuration error: \(path):"), "\(invalid.stderr)")
    }

    @Test("[mail] username without an SMTP password: 78 naming where one goes; an empty credential is none")
    func mailPasswordNeeded() throws {
        let path = try BadConfigTests.write(
            BadConfigTests.header + "[mail]\nusername = \"mailer\"\nallow_plaintext_auth = true\n")
        defer { BadConfigTests.remove(path) }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        // What systemd hands over from SetCredential=smtp-password:\n when the file is missing.
        try "\n".write(toFile: directory + "/smtp-password", atomically: true, encoding: .utf8)
        let missing = try Caretaker.run(
            ["check", "--config-only", "--config", path], environment: ["CREDENTIALS_DIRECTORY": directory])
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("mail.username is set but there is no SMTP password"), "\(missing.stderr)")
        #expect(missing.stderr.contains("/etc/caretaker/smtp-password"), "\(missing.stderr)")
        try "relay-secret\n".write(toFile: directory + "/smtp-password", atomically: true, encoding: .utf8)
        let present = try Caretaker.run(
            ["check", "--config-only", "--config", path], environment: ["CREDENTIALS_DIRECTORY": directory])
        #expect(present.status == 0, "\(present.stderr)")
        #expect(!present.stderr.contains("relay-secret") && !present.stdout.contains("relay-secret"))
    }
}
