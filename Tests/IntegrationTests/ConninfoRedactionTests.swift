import Testing

@testable import Postgres

/// Connection errors are scrubbed of every password-like conninfo parameter libpq knows.
@Suite struct ConninfoRedactionTests {
    @Test(
        "password and sslpassword, in key/value and URI form, percent-decoded",
        arguments: [
            "host=/nowhere user=u password=S3cret-one sslpassword=S3cret-two",
            "postgresql://u:S3cret-one@/db?host=/nowhere&sslpassword=S3cret-two",
            "postgresql:///db?host=/nowhere&password=S3cret%2Done&sslpassword=S3cret-two",
            "host=/nowhere password = 'S3cret-one' sslpassword='S3cret-two'",
        ])
    func redacts(conninfo: String) {
        let message = "could not connect: S3cret-one, then S3cret-two"
        let redacted = Connection.redactingPasswords(message, of: .init(conninfo: conninfo))
        #expect(redacted == "could not connect: ***, then ***", "\(redacted)")
    }

    @Test("the separate password is scrubbed too")
    func separatePassword() {
        let redacted = Connection.redactingPasswords("failed for hunter2", of: .init(conninfo: "", password: "hunter2"))
        #expect(redacted == "failed for ***")
    }

    @Test("a conninfo libpq cannot parse: whatever the message quotes back is hidden")
    func unparsable() {
        let conninfo = "postgresql://u:S3cret@[::1/x"
        let message = "invalid IPv6 host address in URI: \"\(conninfo)\""
        #expect(
            Connection.redactingPasswords(message, of: .init(conninfo: conninfo))
                == "invalid IPv6 host address in URI: \"***\"")
    }
}
