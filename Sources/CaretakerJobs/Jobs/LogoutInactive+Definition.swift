import CaretakerConfig
import CaretakerMail

/// `logout-inactive` as the catalogue knows it (`JobDefinition`).
extension LogoutInactive: JobDefinition {
    static let name = "logout-inactive"
    static let defaultSchedule = "@every 1m"

    static func readSettings(
        _ table: inout TableReader, file: String, worker: WorkerOptions
    ) throws(ConfigurationError) -> LogoutInactiveSettings {
        try LogoutInactiveSettings(reading: &table)
    }

    static func make(_ settings: LogoutInactiveSettings, mail: (any MailTransport)?, mailOptions: MailOptions) -> Self {
        LogoutInactive(settings: settings)
    }

    /// The daemon asks `deadlines` when the next session goes idle, and looks again
    /// at the latest one `idle_timeout` later (a session active now cannot go idle before).
    static func wakeups(_ settings: LogoutInactiveSettings) -> JobWakeups {
        JobWakeups(
            nextDeadline: { connection, schema, since in
                try deadlines(connection, schema: schema, idleTimeout: settings.idleTimeout, since: since)
            }, deadlineLookahead: settings.idleTimeout)
    }

    static var appTablePrivileges: [String: RuntimeGrants.TablePrivileges] {
        [
            "sessions": RuntimeGrants.TablePrivileges(
                select: ["id", "last_seen_at", "revoked_at"], update: ["revoked_at", "revoked_reason"])
        ]
    }

    static var appColumns: [SchemaCheck.AppTable] {
        [
            SchemaCheck.AppTable(
                "sessions",
                [
                    "id": .uuid, "user_id": .bigintID, "created_at": .timestamptz,
                    "last_seen_at": .timestamptz, "revoked_at": .timestamptz, "revoked_reason": .text,
                ])
        ]
    }

    static var stats: [StatDeclaration] { [.count("sessions_revoked", charted: .work), .count("sessions_blocked")] }
}
