import Foundation
import Testing

@testable import CaretakerConfig
@testable import CaretakerCore
@testable import CaretakerDatabase
@testable import CaretakerJobs

/// The catalogue of built-in jobs (`Jobs/BuiltInJob.swift`) agrees with itself and with `check`.
@Suite struct BuiltInJobTests {
    @Test("each built-in job's settings map back to its catalogue entry, and operator SQL to none")
    func settingsRoundTrip() throws {
        let configuration = try ConfigurationLoader.parse(
            "[jobs.clean]\nschedule = \"@hourly\"\nsql = \"SELECT 1\"\n", file: "jobs.toml")
        for builtIn in BuiltInJob.allCases {
            #expect(configuration.job(named: builtIn.rawValue)?.builtIn == builtIn)
        }
        #expect(configuration.job(named: "clean")?.builtIn == nil)
    }

    @Test("the pack-marking triggers spare the sessions of the job that keeps the marks itself")
    func packMarkingJobIsExpireContent() throws {
        #expect(Migration.packMarkingJob == ExpireContent.name)
        let sql = Migration.packLooks.sql(appSchema: "public")
        #expect(sql.contains("current_setting('application_name') <> 'caretaker/\(ExpireContent.name)'"))
    }

    @Test("check verifies, for each built-in job, every app column it is granted", arguments: BuiltInJob.allCases)
    func checkCoversGrantedColumns(job: BuiltInJob) {
        let checked = Set(job.appColumns.flatMap { table in table.columns.map { "\(table.name).\($0.name)" } })
        for (table, privileges) in job.appTablePrivileges {
            let columns = privileges.select.union(privileges.update).union(privileges.insert)
                .union([privileges.lockColumn].compactMap { $0 })
                .subtracting(["ctid"])  // a system column every table has
            for column in columns.sorted() {
                #expect(
                    checked.contains("\(table).\(column)"),
                    "\(job.rawValue) uses \(table).\(column), which check does not verify for it")
            }
        }
    }

    /// SPEC §1's reference schema: the columns the worker relies on, and the types `check` accepts.
    static let referenceSchema: [String: [String: Set<String>]] = {
        let text: Set<String> = ["text", "character varying", "citext", "character"]
        let bigint: Set<String> = ["bigint"], integer: Set<String> = ["integer", "bigint", "smallint"]
        let timestamptz: Set<String> = ["timestamp with time zone"], boolean: Set<String> = ["boolean"]
        return [
            "users": [
                "id": bigint, "email": text, "display_name": text, "password_hash": text, "temp_password_hash": text,
                "temp_password_expires_at": timestamptz, "must_change_password": boolean, "created_at": timestamptz,
                "deleted_at": timestamptz,
            ],
            "sessions": [
                "id": ["uuid"], "user_id": bigint, "created_at": timestamptz, "last_seen_at": timestamptz,
                "revoked_at": timestamptz, "revoked_reason": text,
            ],
            "packs": [
                "id": bigint, "name": text, "creator_id": bigint, "is_admin": boolean, "created_at": timestamptz,
            ],
            "pack_members": ["pack_id": bigint, "user_id": bigint, "joined_at": timestamptz],
            "posts": [
                "id": bigint, "pack_id": bigint, "author_id": bigint, "title": text, "body": text, "likes": integer,
                "created_at": timestamptz,
            ],
            "password_reset_requests": [
                "id": bigint, "email": text, "requested_at": timestamptz, "status": text,
                "attempts": integer, "next_attempt_at": timestamptz, "sent_at": timestamptz,
                "last_error": text,
            ],
            "communities": [
                "id": bigint, "name": text, "leader_id": bigint, "successor_id": bigint, "is_private": boolean,
                "created_at": timestamptz, "archived_at": timestamptz,
            ],
            "community_members": ["community_id": bigint, "user_id": bigint, "joined_at": timestamptz],
            "community_leader_changes": [
                "id": bigint, "community_id": bigint, "previous_leader_id": bigint,
                "new_leader_id": bigint, "reason": text, "chosen_by": text,
                "changed_at": timestamptz, "run_id": bigint,
            ],
        ]
    }()

    @Test(
        "with every job enabled, check verifies exactly SPEC §1's columns with its types; jobs sharing a column agree on them"
    )
    func checkCoversTheReferenceSchema() {
        var checked: [String: [String: Set<String>]] = [:]
        for job in BuiltInJob.allCases {
            for table in job.appColumns {
                for column in table.columns {
                    if let earlier = checked[table.name]?[column.name] {
                        #expect(
                            earlier == column.type.accepted,
                            "\(job.rawValue) accepts other types for \(table.name).\(column.name)")
                    }
                    checked[table.name, default: [:]][column.name] = column.type.accepted
                }
            }
        }
        #expect(checked == Self.referenceSchema)
        #expect(Set(RuntimeGrants.referenceTables) == Set(Self.referenceSchema.keys))
        #expect(RuntimeGrants.referenceTables.count == Self.referenceSchema.count)
    }

    @Test(
        "each built-in job has its section in the annotated jobs.toml and is described in README.md",
        arguments: BuiltInJob.allCases)
    func documented(job: BuiltInJob) throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let annotated = try String(contentsOf: root.appendingPathComponent("jobs.toml"), encoding: .utf8)
        #expect(annotated.contains("\n[jobs.\(job.rawValue)]\n"), "jobs.toml has no [jobs.\(job.rawValue)] section")
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("`\(job.rawValue)`"), "README.md does not mention `\(job.rawValue)`")
    }

    @Test("only send-temp-passwords sends mail, only prune deletes run history")
    func flags() {
        #expect(BuiltInJob.allCases.filter(\.sendsMail) == [BuiltInJob(SendTempPasswords.self)])
        #expect(BuiltInJob.allCases.filter(\.deletesRunHistory) == [BuiltInJob(Prune.self)])
    }
}
