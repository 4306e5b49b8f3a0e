import CaretakerConfig
import CaretakerDatabase
import CaretakerMail

/// `leader-succession` as the catalogue knows it (`JobDefinition`).
extension LeaderSuccession: JobDefinition {
    static let name = "leader-succession"
    static let defaultSchedule = "*/5 * * * *"

    static func readSettings(
        _ table: inout TableReader, file: String, worker: WorkerOptions
    ) throws(ConfigurationError) -> LeaderSuccessionSettings {
        try LeaderSuccessionSettings(reading: &table)
    }

    static func make(
        _ settings: LeaderSuccessionSettings, mail: (any MailTransport)?, mailOptions: MailOptions
    ) -> Self {
        LeaderSuccession(settings: settings)
    }

    /// The migrations' triggers on communities, members and users notify this channel.
    static var notifyChannel: String? { Migration.communityChangeChannel }

    static var appTablePrivileges: [String: RuntimeGrants.TablePrivileges] {
        typealias Privileges = RuntimeGrants.TablePrivileges
        return [
            "communities": Privileges(
                select: ["id", "leader_id", "successor_id", "archived_at"],
                update: ["leader_id", "successor_id", "archived_at"]),
            "community_members": Privileges(
                select: ["community_id", "user_id", "joined_at"], lockColumn: "community_id"),
            "users": Privileges(select: ["id", "deleted_at", "created_at"], lockColumn: "id"),
            "sessions": Privileges(select: ["user_id", "last_seen_at"]),
            "community_leader_changes": Privileges(
                insert: ["community_id", "previous_leader_id", "new_leader_id", "reason", "chosen_by", "run_id"]),
        ]
    }

    static var appColumns: [SchemaCheck.AppTable] {
        typealias Table = SchemaCheck.AppTable
        return [
            Table("users", ["id": .bigintID, "created_at": .timestamptz, "deleted_at": .timestamptz]),
            Table("sessions", ["user_id": .bigintID, "last_seen_at": .timestamptz]),
            Table(
                "communities",
                [
                    "id": .bigintID, "name": .text, "leader_id": .bigintID, "successor_id": .bigintID,
                    "is_private": .boolean, "created_at": .timestamptz, "archived_at": .timestamptz,
                ]),
            Table(
                "community_members", ["community_id": .bigintID, "user_id": .bigintID, "joined_at": .timestamptz]),
            Table(
                "community_leader_changes",
                [
                    "id": .bigintID, "community_id": .bigintID,
                    "previous_leader_id": .bigintID, "new_leader_id": .bigintID,
                    "reason": .text, "chosen_by": .text, "changed_at": .timestamptz,
                    "run_id": .bigintID,
                ]),
        ]
    }

    static var stats: [StatDeclaration] {
        [
            .count("leaders_appointed", charted: .work), .count("communities_archived"), .count("communities_skipped"),
            .count("communities_blocked"), .count("inactive_leaders_kept"),
        ]
    }
}
