import CaretakerConfig
import CaretakerDatabase
import CaretakerMail

/// `send-temp-passwords` as the catalogue knows it (`JobDefinition`).
extension SendTempPasswords: JobDefinition {
    static let name = "send-temp-passwords"
    static let defaultSchedule = "@every 1m"

    static func readSettings(
        _ table: inout TableReader, file: String, worker: WorkerOptions
    ) throws(ConfigurationError) -> SendTempPasswordsSettings {
        try SendTempPasswordsSettings(reading: &table, file: file, worker: worker)
    }

    static func make(
        _ settings: SendTempPasswordsSettings, mail: (any MailTransport)?, mailOptions: MailOptions
    ) -> Self {
        SendTempPasswords(settings: settings, mail: mail, mailOptions: mailOptions)
    }

    /// The migrations' trigger on `password_reset_requests` notifies this channel.
    static var notifyChannel: String? { Migration.resetRequestChannel }
    static var sendsMail: Bool { true }

    static var appTablePrivileges: [String: RuntimeGrants.TablePrivileges] {
        typealias Privileges = RuntimeGrants.TablePrivileges
        return [
            "users": Privileges(
                select: [
                    "id", "email", "display_name", "deleted_at",
                    "temp_password_hash", "temp_password_expires_at", "must_change_password",
                ],
                update: ["temp_password_hash", "temp_password_expires_at", "must_change_password"]),
            "password_reset_requests": Privileges(
                select: [
                    "id", "email", "requested_at", "status", "attempts", "next_attempt_at", "sent_at", "last_error",
                ],
                update: ["status", "attempts", "next_attempt_at", "sent_at", "last_error"]),
        ]
    }

    static var appColumns: [SchemaCheck.AppTable] {
        typealias Table = SchemaCheck.AppTable
        return [
            Table(
                "users",
                [
                    "id": .bigintID, "email": .text, "display_name": .text, "password_hash": .text,
                    "temp_password_hash": .text, "temp_password_expires_at": .timestamptz,
                    "must_change_password": .boolean, "deleted_at": .timestamptz,
                ]),
            Table(
                "password_reset_requests",
                [
                    "id": .bigintID, "email": .text, "requested_at": .timestamptz,
                    "status": .text, "attempts": .integer, "next_attempt_at": .timestamptz,
                    "sent_at": .timestamptz, "last_error": .text,
                ]),
        ]
    }

    static var stats: [StatDeclaration] {
        [
            .count("sent", charted: .work), .count("failed", charted: .failure), .count("ignored"), .count("retried"),
            .count("deferred"), .count("temp_passwords_cleared"), .count("requests_blocked"),
            .count("temp_passwords_blocked"),
        ]
    }
}
