import CaretakerConfig
import CaretakerMail

/// `prune` as the catalogue knows it (`JobDefinition`).
extension Prune: JobDefinition {
    static let name = "prune"
    static let defaultSchedule = "@daily"

    static func readSettings(
        _ table: inout TableReader, file: String, worker: WorkerOptions
    ) throws(ConfigurationError) -> PruneSettings {
        try PruneSettings(reading: &table)
    }

    static func make(_ settings: PruneSettings, mail: (any MailTransport)?, mailOptions: MailOptions) -> Self {
        Prune(settings: settings)
    }

    static var deletesRunHistory: Bool { true }

    static var appTablePrivileges: [String: RuntimeGrants.TablePrivileges] {
        typealias Privileges = RuntimeGrants.TablePrivileges
        return [
            // It locks the rows it deletes (FOR UPDATE SKIP LOCKED), which needs UPDATE on a column.
            "sessions": Privileges(select: ["id", "revoked_at"], delete: true, lockColumn: "id"),
            "password_reset_requests": Privileges(
                select: ["id", "status", "requested_at"], delete: true, lockColumn: "id"),
        ]
    }

    static var appColumns: [SchemaCheck.AppTable] {
        [
            SchemaCheck.AppTable("sessions", ["id": .uuid, "revoked_at": .timestamptz]),
            SchemaCheck.AppTable(
                "password_reset_requests", ["id": .bigintID, "status": .text, "requested_at": .timestamptz]),
        ]
    }

    /// Rows deleted per table, and those of each the app kept (`PruneQueries.Target`).
    static var stats: [StatDeclaration] {
        [
            .count("runs_deleted", charted: .work), .count("slots_deleted"), .count("sessions_deleted"),
            .count("reset_requests_deleted"), .count("runs_blocked"), .count("slots_blocked"),
            .count("sessions_blocked"), .count("reset_requests_blocked"),
        ]
    }
}
