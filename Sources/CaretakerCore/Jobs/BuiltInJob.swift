/// The catalogue of built-in jobs: the one place that lists them and says what the
/// rest of caretaker needs to know about each. The configuration loader, the runner,
/// the daemon's wake-ups, `MailSetup`, `check` (`SchemaCheck`), `migrate --grant`
/// (`RuntimeGrants`) and the dashboard ask it. A new job is a case here and one in
/// `JobSettings` below; the compiler then names every switch to fill in, all in this
/// file. See `docs/adding-a-job.md`.
public enum BuiltInJob: String, Sendable, CaseIterable {
    // In the order `jobs` and `once --all` list them.
    case expireContent = "expire-content"
    case logoutInactive = "logout-inactive"
    case sendTempPasswords = "send-temp-passwords"
    case leaderSuccession = "leader-succession"
    case prune = "prune"

    /// The built-in job `settings` configure; nil for an operator SQL job.
    public init?(_ settings: JobSettings) {
        switch settings {
        case .expireContent: self = .expireContent
        case .logoutInactive: self = .logoutInactive
        case .sendTempPasswords: self = .sendTempPasswords
        case .leaderSuccession: self = .leaderSuccession
        case .prune: self = .prune
        case .sql: return nil
        }
    }

    /// Default schedules (docs/configuration.md).
    var defaultSchedule: String {
        switch self {
        case .expireContent, .leaderSuccession: "*/5 * * * *"
        case .logoutInactive, .sendTempPasswords: "@every 1m"
        case .prune: "@daily"
        }
    }

    /// Reads the job's own keys from its `[jobs.NAME]` table (the common keys are the loader's);
    /// each settings type reads itself in its job's file.
    func readSettings(
        _ table: inout TableReader, file: String, worker: WorkerOptions
    ) throws(ConfigurationError) -> JobSettings {
        switch self {
        case .expireContent: .expireContent(try ExpireContentSettings(reading: &table, worker: worker))
        case .logoutInactive: .logoutInactive(try LogoutInactiveSettings(reading: &table))
        case .sendTempPasswords:
            .sendTempPasswords(try SendTempPasswordsSettings(reading: &table, file: file, worker: worker))
        case .leaderSuccession: .leaderSuccession(try LeaderSuccessionSettings(reading: &table))
        case .prune: .prune(try PruneSettings(reading: &table))
        }
    }

    /// Work that a crash may undo without harm because the next run redoes it: such a job
    /// commits its batches without waiting for the WAL flush by default (`synchronous_commit`).
    var isIdempotentBulkWork: Bool { self == .expireContent }

    /// The channel whose NOTIFY wakes the job (normal mode); the migrations' triggers interpolate the same value.
    public var notifyChannel: String? {
        switch self {
        case .sendTempPasswords: "caretaker_send_temp_passwords"
        case .leaderSuccession: "caretaker_leader_succession"
        case .expireContent, .logoutInactive, .prune: nil
        }
    }

    /// The job sends mail: the transport (and its password) is set up only when such a job is enabled.
    public var sendsMail: Bool { self == .sendTempPasswords }

    /// The job deletes caretaker's own history (`job_runs`, `job_slots`), so the runtime role needs DELETE there.
    var deletesRunHistory: Bool { self == .prune }

    /// What the job reads and writes of caretaker's own tables beyond the run history,
    /// for `migrate --grant`: `expire-content` keeps its pack looks (migration 10).
    var caretakerTablePrivileges: [String: RuntimeGrants.TablePrivileges] {
        guard self == .expireContent else { return [:] }
        return [
            "pack_looks": RuntimeGrants.TablePrivileges(delete: true, allColumns: true),
            "pack_marks": RuntimeGrants.TablePrivileges(delete: true, allColumns: true),
            "pack_look_state": RuntimeGrants.TablePrivileges(allColumns: true),
        ]
    }

    /// What the job reads and writes, per app table, for `migrate --grant`; the SQL is in the job's file.
    var appTablePrivileges: [String: RuntimeGrants.TablePrivileges] {
        typealias Privileges = RuntimeGrants.TablePrivileges
        switch self {
        case .expireContent:
            return [
                "packs": Privileges(select: ["id", "created_at", "is_admin"], delete: true, lockColumn: "id"),
                "pack_members": Privileges(select: ["pack_id"]),
                "posts": Privileges(
                    select: ["id", "pack_id", "likes", "created_at", "ctid"], delete: true, lockColumn: "id"),
            ]
        case .logoutInactive:
            return [
                "sessions": Privileges(
                    select: ["id", "last_seen_at", "revoked_at"], update: ["revoked_at", "revoked_reason"])
            ]
        case .sendTempPasswords:
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
        case .leaderSuccession:
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
        case .prune:
            return [
                // It locks the rows it deletes (FOR UPDATE SKIP LOCKED), which needs UPDATE on a column.
                "sessions": Privileges(select: ["id", "revoked_at"], delete: true, lockColumn: "id"),
                "password_reset_requests": Privileges(
                    select: ["id", "status", "requested_at"], delete: true, lockColumn: "id"),
            ]
        }
    }

    /// The app columns the job relies on, with the types `check` accepts: those it reads
    /// and writes (every column of `appTablePrivileges`), and the reference schema's columns
    /// no job reads of the tables it works on (so that all of docs/schema.md is verified). `check`
    /// verifies them while the job is enabled and warns about them while it is disabled.
    var appColumns: [SchemaCheck.AppTable] {
        typealias Table = SchemaCheck.AppTable
        switch self {
        case .expireContent:
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
        case .logoutInactive:
            return [
                Table(
                    "sessions",
                    [
                        "id": .uuid, "user_id": .bigintID, "created_at": .timestamptz,
                        "last_seen_at": .timestamptz, "revoked_at": .timestamptz, "revoked_reason": .text,
                    ])
            ]
        case .sendTempPasswords:
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
        case .leaderSuccession:
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
        case .prune:
            return [
                Table("sessions", ["id": .uuid, "revoked_at": .timestamptz]),
                Table("password_reset_requests", ["id": .bigintID, "status": .text, "requested_at": .timestamptz]),
            ]
        }
    }

    /// The counters of the job's stats that the dashboard's overview charts.
    public var chartedCounters: [String] {
        switch self {
        case .expireContent: ["posts_deleted", "packs_deleted"]
        case .logoutInactive: ["sessions_revoked"]
        case .sendTempPasswords: ["sent", "failed"]
        case .leaderSuccession: ["leaders_appointed"]
        case .prune: ["runs_deleted"]
        }
    }
}

/// What each kind of job needs beyond the common keys: a built-in job's own settings
/// (the type and its reader live in the job's file), or an operator job's SQL.
public enum JobSettings: Sendable {
    case expireContent(ExpireContentSettings)
    case logoutInactive(LogoutInactiveSettings)
    case sendTempPasswords(SendTempPasswordsSettings)
    case leaderSuccession(LeaderSuccessionSettings)
    case prune(PruneSettings)
    case sql(SQLJobSettings)
}

extension JobConfiguration {
    /// The built-in job this is; nil for an operator SQL job.
    public var builtIn: BuiltInJob? { BuiltInJob(settings) }

    /// The job that carries out this configuration.
    public func makeJob(mail: (any MailTransport)?, mailOptions: MailOptions) -> any Job {
        switch settings {
        case .expireContent(let settings): ExpireContent(settings: settings)
        case .logoutInactive(let settings): LogoutInactive(settings: settings)
        case .sendTempPasswords(let settings):
            SendTempPasswords(settings: settings, mail: mail, mailOptions: mailOptions)
        case .leaderSuccession(let settings): LeaderSuccession(settings: settings)
        case .prune(let settings): Prune(settings: settings)
        case .sql(let settings): OperatorSQL(settings: settings)
        }
    }

    /// What wakes this job besides its schedule: its catalogue entry's NOTIFY channel, or a deadline query.
    public var wakeups: JobWakeups {
        switch settings {
        case .logoutInactive(let settings):
            JobWakeups(
                nextDeadline: { connection, schema, since in
                    try LogoutInactive.deadlines(
                        connection, schema: schema, idleTimeout: settings.idleTimeout, since: since)
                }, deadlineLookahead: settings.idleTimeout)
        case .expireContent, .sendTempPasswords, .leaderSuccession, .prune, .sql:
            JobWakeups(notifyChannel: builtIn?.notifyChannel)
        }
    }
}
