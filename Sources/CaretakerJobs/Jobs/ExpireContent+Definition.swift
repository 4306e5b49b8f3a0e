import CaretakerConfig
import CaretakerMail

/// `expire-content` as the catalogue knows it (`JobDefinition`).
extension ExpireContent: JobDefinition {
    static let name = "expire-content"
    static let defaultSchedule = "*/5 * * * *"

    static func readSettings(
        _ table: inout TableReader, file: String, worker: WorkerOptions
    ) throws(ConfigurationError) -> ExpireContentSettings {
        try ExpireContentSettings(reading: &table, worker: worker)
    }

    static func make(_ settings: ExpireContentSettings, mail: (any MailTransport)?, mailOptions: MailOptions) -> Self {
        ExpireContent(settings: settings)
    }

    static var isIdempotentBulkWork: Bool { true }

    /// Its pack looks (migration 10).
    static var caretakerTablePrivileges: [String: RuntimeGrants.TablePrivileges] {
        [
            "pack_looks": RuntimeGrants.TablePrivileges(delete: true, allColumns: true),
            "pack_marks": RuntimeGrants.TablePrivileges(delete: true, allColumns: true),
            "pack_look_state": RuntimeGrants.TablePrivileges(allColumns: true),
        ]
    }

    static var appTablePrivileges: [String: RuntimeGrants.TablePrivileges] {
        typealias Privileges = RuntimeGrants.TablePrivileges
        return [
            "packs": Privileges(select: ["id", "created_at", "is_admin"], delete: true, lockColumn: "id"),
            "pack_members": Privileges(select: ["pack_id"]),
            "posts": Privileges(
                select: ["id", "pack_id", "likes", "created_at", "ctid"], delete: true, lockColumn: "id"),
        ]
    }

    static var appColumns: [SchemaCheck.AppTable] {
        typealias Table = SchemaCheck.AppTable
        return [
            Table(
                "packs",
                [
                    "id": .bigintID, "name": .text, "creator_id": .bigintID, "is_admin": .boolean,
                    "created_at": .timestamptz,
                ]),
            Table("pack_members", ["pack_id": .bigintID, "user_id": .bigintID, "joined_at": .timestamptz]),
            Table(
                "posts",
                [
                    "id": .bigintID, "pack_id": .bigintID, "author_id": .bigintID, "title": .text, "body": .text,
                    "likes": .integer, "created_at": .timestamptz,
                ]),
        ]
    }

    /// The page sweep compresses its full-page images when `compress_wal` is on.
    static func settableParameters(_ settings: ExpireContentSettings) -> [String] {
        settings.compressWAL ? ["wal_compression"] : []
    }

    static var stats: [StatDeclaration] {
        [
            .count("posts_deleted", charted: .work), .count("packs_deleted", charted: .secondary),
            .count("packs_blocked"), .count("posts_blocked"), .count("packs_looked"), .count("batches"),
            .figure("batch_p99_ms"), .figure("batch_max_ms"), .count("swept_pages"), .count("pruned_pages"),
            .milliseconds("prune_ms"), .bytes("wal_bytes"),
            // Partition retirement (`retire_partitions`).
            .count("partitions_dropped"), .count("posts_dropped"), .count("partitions_waiting"),
            .count("partitions_not_owned"),
        ]
    }
}
