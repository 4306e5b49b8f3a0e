import CaretakerConfig
import Postgres

/// The privileges a runtime role needs for the enabled built-in jobs, and nothing else
/// (`caretaker migrate --grant ROLE`).
///
/// `migrate` runs as the owner of the schema; the daemon should not. The grant is exact
/// and repeatable: it first revokes everything the role holds on caretaker's tables and
/// the reference app tables, then grants per column what the enabled jobs read and write.
/// Operator SQL jobs get nothing here: their grants are the operator's (docs/jobs/operator-sql.md).
///
/// PostgreSQL lets a role lock rows (`FOR UPDATE`, `FOR SHARE`) only with UPDATE on at
/// least one column of the table. Where the jobs lock rows of a table they update no
/// column of, the role gets UPDATE on its first key column, which the app's foreign keys guard.
public struct RuntimeGrants: Sendable {
    /// What the role may do on one table; column lists are unquoted names.
    public struct TablePrivileges: Sendable, Equatable {
        public var select: Set<String> = []
        public var update: Set<String> = []
        public var insert: Set<String> = []
        public var delete = false
        /// The job locks rows (`FOR UPDATE`/`FOR SHARE`): without other UPDATE columns,
        /// the role gets UPDATE on this key column, which PostgreSQL requires for locking.
        public var lockColumn: String?
        /// Whole-table SELECT/INSERT/UPDATE (caretaker's own tables).
        public var allColumns = false
    }

    public let appSchema: String
    /// The enabled built-in jobs the grants cover.
    public let jobs: [String]
    /// The app tables the role loses every right on before the grants: those of the
    /// catalogue's jobs (`referenceTables`) and of any other configured job.
    let revokedTables: [String]
    /// caretaker's own tables (schema `caretaker`), by name.
    public let caretakerTables: [String: TablePrivileges]
    /// Tables in `appSchema`, by name; only those some enabled job touches.
    public let appTables: [String: TablePrivileges]
    /// Server parameters the role may set for its own transactions (`GRANT SET ON
    /// PARAMETER`, PostgreSQL 15), as the enabled jobs declare them
    /// (`JobDefinition.settableParameters`, such as `wal_compression`).
    public let parameters: [String]
    /// Some enabled job keeps `max_replica_lag`, which needs the standbys' replay positions:
    /// `apply` says so when the role may not see them (`pg_read_all_stats`). Not granted
    /// here: that role also shows every session's statistics and query text, a right
    /// the operator should give knowingly.
    public let watchesStandbys: Bool
    /// `expire-content` is enabled with `retire_partitions`: only the owner of `posts`
    /// and its partitions may detach and drop them, so the role may own them (by being a
    /// member of the role that owns them), and nothing else (`checkGrantee`).
    public let retiresPartitions: Bool

    /// The grants for `jobs` (only the enabled built-in ones count).
    public init(appSchema: String, jobs: [JobConfiguration]) {
        self.appSchema = appSchema
        retiresPartitions = Self.retiresPartitions(jobs)
        watchesStandbys = jobs.contains { $0.enabled && $0.maxReplicaLag != nil }
        var caretakerTables = Self.bookkeeping.merging(Self.jobOwnTables) { a, _ in a }
        var appTables: [String: TablePrivileges] = [:]
        var covered: [String] = []
        var parameters: [String] = []
        for job in jobs where job.enabled {
            guard let builtIn = job.builtIn else { continue }
            covered.append(job.name)
            parameters += job.settableParameters
            for (table, privileges) in builtIn.appTablePrivileges {
                appTables[table, default: TablePrivileges()].merge(privileges)
            }
            for (table, privileges) in builtIn.caretakerTablePrivileges {
                caretakerTables[table, default: TablePrivileges()].merge(privileges)
            }
            if builtIn.deletesRunHistory {
                caretakerTables["job_runs"]?.delete = true
                caretakerTables["job_slots"]?.delete = true
            }
        }
        self.jobs = covered
        var revoked = Self.referenceTables
        for table in jobs.compactMap(\.builtIn).flatMap(\.appColumns) where !revoked.contains(table.name) {
            revoked.append(table.name)
        }
        self.revokedTables = revoked
        self.caretakerTables = caretakerTables
        self.appTables = appTables
        self.parameters = Self.settableParameters.filter(parameters.contains)
    }

    /// The parameters whose `SET` right the grant manages: revoked, then granted if needed.
    static let settableParameters = ["wal_compression"]

    /// caretaker's own tables: the runner records runs, claims slots and keeps state;
    /// `check` and the daemon read the migration history; alerts keep their state.
    static let bookkeeping: [String: TablePrivileges] = [
        "job_runs": TablePrivileges(allColumns: true),
        "job_slots": TablePrivileges(allColumns: true),
        "job_state": TablePrivileges(allColumns: true),
        // [alerts]: each instance reads and claims the alert state of every job.
        "job_alerts": TablePrivileges(allColumns: true),
        "schema_migrations": TablePrivileges(select: ["version", "app_schema", "applied_at"]),
    ]

    /// caretaker's tables that belong to a job (`JobDefinition.caretakerTablePrivileges`):
    /// nothing on them unless the job is enabled.
    static let jobOwnTables: [String: TablePrivileges] = Dictionary(
        BuiltInJob.allCases.flatMap(\.caretakerTablePrivileges.keys).map { ($0, TablePrivileges()) },
        uniquingKeysWith: { a, _ in a })

    /// The app tables the built-in jobs work on (the reference schema, docs/schema.md), from the
    /// catalogue: the role loses every right on each, then gets what the enabled jobs need.
    static let referenceTables: [String] = BuiltInJob.allCases.flatMap(\.appColumns).map(\.name)
        .reduce(into: []) { tables, table in if !tables.contains(table) { tables.append(table) } }

    /// The statements, in order, with every identifier quoted: schema usage, then per
    /// table a revoke of everything and the grants.
    public func statements(role: String) -> [String] {
        let grantee = quoteIdentifier(role)
        var statements = ["GRANT USAGE ON SCHEMA caretaker, \(quoteIdentifier(appSchema)) TO \(grantee)"]
        let known =
            caretakerTables.keys.sorted().map { ("caretaker", $0, caretakerTables[$0]) }
            + revokedTables.map { (appSchema, $0, appTables[$0]) }
        for (schema, table, privileges) in known {
            let name = quoteIdentifier(schema) + "." + quoteIdentifier(table)
            statements.append("REVOKE ALL ON TABLE \(name) FROM \(grantee)")
            if let list = privileges?.grantList, !list.isEmpty {
                statements.append("GRANT \(list) ON TABLE \(name) TO \(grantee)")
            }
        }
        return statements
    }

    /// The parameter statements: a revoke of `SET` on each parameter the grant manages,
    /// and a grant of those the enabled jobs set. Only a superuser may run them.
    public func parameterStatements(role: String) -> [String] {
        let grantee = quoteIdentifier(role)
        return Self.settableParameters.map { "REVOKE SET ON PARAMETER \($0) FROM \(grantee)" }
            + parameters.map { "GRANT SET ON PARAMETER \($0) TO \(grantee)" }
    }

    /// Applies `statements(role:)`, and `parameterStatements(role:)` when this session may
    /// (a superuser on PostgreSQL 15 or later), in one transaction, after checking that
    /// `role` exists and is neither a superuser nor the owner of a table it would lose
    /// rights on. Returns a note for each parameter it could not grant and the role may
    /// not set already, saying why and what to do (the rest of the grant stands without
    /// it), and one when `max_replica_lag` needs a right the role lacks (`watchesStandbys`).
    @discardableResult
    public func apply(role: String, on connection: Connection) throws -> [String] {
        let notes = try applyGrants(role: role, on: connection)
        return try notes + standbyNote(role: role, on: connection) + retirementNote(role: role, on: connection)
    }

    /// Whether some enabled `expire-content` has `retire_partitions` on.
    public static func retiresPartitions(_ jobs: [JobConfiguration]) -> Bool {
        jobs.contains { $0.enabled && $0.settings(as: ExpireContentSettings.self)?.retirePartitions == true }
    }

    /// The first of a partitioned `$2` (`posts`, schema-qualified) and its partitions that
    /// role `$1` does not own (as a member of its owner) → `name`; no row when it owns
    /// them all or `posts` is not partitioned.
    static let postsNotOwned = """
        SELECT n.nspname || '.' || c.relname AS name
        FROM pg_partition_tree(to_regclass($2)) t
        JOIN pg_class c ON c.oid = t.relid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE (SELECT relkind FROM pg_class WHERE oid = to_regclass($2)) = 'p'
          AND NOT pg_has_role($1, c.relowner, 'USAGE')
        ORDER BY t.level, 1 LIMIT 1
        """

    /// With `retire_partitions`, what the role cannot retire: `posts` or a partition of it
    /// that it does not own (`GRANT` grants no right to detach or drop a partition).
    private func retirementNote(role: String, on connection: Connection) throws -> [String] {
        guard retiresPartitions,
            let table = try connection.query(
                Self.postsNotOwned, role, quoteIdentifier(appSchema) + ".posts"
            ).first?.string("name")
        else { return [] }
        return [Self.retirementAdvice(role: role, notOwned: table)]
    }

    /// What to do when `role` cannot detach or drop `table` (`posts` or a partition of it).
    public static func retirementAdvice(role: String, notOwned table: String) -> String {
        """
        retire_partitions is on, but \(role) does not own \(table) (nor is it a member of its owner), \
        and only the owner may detach or drop a partition: make one role own posts and every partition \
        of it, and only them, then run: GRANT that role TO \(quoteIdentifier(role)) (docs/database.md)
        """
    }

    /// Without `pg_read_all_stats` a WAL sender shows the role only its pid, so a job
    /// cannot keep `max_replica_lag` (it warns once per run where a standby streams).
    private func standbyNote(role: String, on connection: Connection) throws -> [String] {
        guard watchesStandbys,
            try connection.query(
                "SELECT pg_has_role($1, 'pg_read_all_stats', 'USAGE') AS sees", role
            ).first?.bool("sees") == false
        else { return [] }
        return [
            """
            \(role) cannot see a standby's replay position, so where a standby streams max_replica_lag \
            is not kept (each run warns); to keep it, run: GRANT pg_read_all_stats TO \(quoteIdentifier(role)) \
            (it also shows the role every session's statistics and query text), or set max_replica_lag = ""
            """
        ]
    }

    /// How many times `apply` runs its transaction at most (`retryingConcurrentCatalogChange`).
    public static let concurrentChangeAttempts = 5

    /// Runs `change` (a transaction of `GRANT`s and `REVOKE`s) again, up to
    /// `attempts` times in all, while it fails because another session changed the
    /// same catalog row and committed first ("tuple concurrently updated", or
    /// "deleted", SQLSTATE XX000). PostgreSQL updates a right's catalog row in place,
    /// without waiting for a lock on it: two grants of one parameter at once (the
    /// rights are the cluster's, so two databases' `migrate --grant`, or the tests'
    /// parallel grants to one role) make the later one fail. Run again, it reads the
    /// row as the other left it.
    static func retryingConcurrentCatalogChange(
        attempts: Int = concurrentChangeAttempts, _ change: () throws -> Void
    ) throws {
        for attempt in 1...attempts {
            do {
                return try change()
            } catch let error as PostgresError
                where attempt < attempts && error.sqlState == "XX000" && error.message.contains("concurrently")
            {
                continue
            }
        }
    }

    private func applyGrants(role: String, on connection: Connection) throws -> [String] {
        try Self.checkGrantee(role, appSchema: appSchema, ownsPosts: retiresPartitions, on: connection)
        let session = try connection.query(
            """
            SELECT current_user AS me, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser,
                   current_setting('server_version_num')::int >= 150000 AS parameter_grants
            """
        ).first
        let mayGrantParameters = session?.bool("superuser") == true && session?.bool("parameter_grants") == true
        try Self.retryingConcurrentCatalogChange {
            try connection.withTransaction {
                for statement in statements(role: role) { try connection.execute(script: statement) }
                if mayGrantParameters {
                    for statement in parameterStatements(role: role) { try connection.execute(script: statement) }
                }
            }
        }
        guard !mayGrantParameters else { return [] }
        let parameterGrants = session?.bool("parameter_grants") == true
        let why =
            parameterGrants
            ? "\(session?["me"] ?? "this role") is not a superuser" : "the server is older than PostgreSQL 15"
        let missing = try parameters.filter { parameter in
            guard parameterGrants else { return true }
            return try connection.query(
                "SELECT has_parameter_privilege($1, $2, 'SET') AS granted", role, parameter
            ).first?.bool("granted") != true
        }
        return missing.map { parameter in
            """
            \(role) may not set \(parameter) (\(why)), so the page sweep writes its full page images \
            uncompressed; a superuser can run: GRANT SET ON PARAMETER \(parameter) TO \(quoteIdentifier(role))
            """
        }
    }

    /// Refuses a role that is missing, a superuser, or owns caretaker's or the app's tables;
    /// with `ownsPosts` (`retire_partitions`), owning `posts` and its partitions is allowed.
    static func checkGrantee(_ role: String, appSchema: String, ownsPosts: Bool, on connection: Connection) throws {
        guard let row = try connection.query("SELECT rolsuper FROM pg_roles WHERE rolname = $1", role).first else {
            throw GrantError(
                role: role, reason: "no such role; create it first, e.g. CREATE ROLE \(quoteIdentifier(role)) LOGIN")
        }
        if row.bool("rolsuper") == true {
            throw GrantError(role: role, reason: "it is a superuser, which bypasses every grant")
        }
        let owned = try connection.query(
            """
            SELECT n.nspname || '.' || c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname IN ('caretaker', $2) AND c.relkind IN ('r', 'p') AND pg_has_role($1, c.relowner, 'USAGE')
              AND NOT ($3 AND c.oid IN (SELECT relid FROM pg_partition_tree(to_regclass($4))))
            ORDER BY 1 LIMIT 1
            """, role, appSchema, ownsPosts, quoteIdentifier(appSchema) + ".posts"
        ).first?["name"]
        if let owned {
            let allowed =
                ownsPosts
                ? "; retire_partitions allows it to own posts and its partitions, and nothing else" : ""
            throw GrantError(
                role: role,
                reason: "it owns \(owned) (or is a member of its owner)\(allowed): run the worker as a role of its own")
        }
    }
}

extension RuntimeGrants.TablePrivileges {
    mutating func merge(_ other: Self) {
        select.formUnion(other.select)
        update.formUnion(other.update)
        insert.formUnion(other.insert)
        delete = delete || other.delete
        lockColumn = lockColumn ?? other.lockColumn
        allColumns = allColumns || other.allColumns
    }

    /// `SELECT ("a", "b"), UPDATE ("c"), DELETE`, or `SELECT, INSERT, UPDATE, DELETE` for a whole table.
    var grantList: String {
        if allColumns { return "SELECT, INSERT, UPDATE" + (delete ? ", DELETE" : "") }
        func columns(_ names: Set<String>) -> String { names.sorted().map(quoteIdentifier).joined(separator: ", ") }
        var parts: [String] = []
        if !select.isEmpty { parts.append("SELECT (\(columns(select)))") }
        if !insert.isEmpty { parts.append("INSERT (\(columns(insert)))") }
        let update = self.update.isEmpty ? Set([lockColumn].compactMap { $0 }) : self.update
        if !update.isEmpty { parts.append("UPDATE (\(columns(update)))") }
        if delete { parts.append("DELETE") }
        return parts.joined(separator: ", ")
    }
}

/// `migrate --grant` refused the role.
public struct GrantError: Error, CustomStringConvertible {
    public let role: String
    public let reason: String
    public var description: String { "cannot grant the runtime privileges to role \(quoteIdentifier(role)): \(reason)" }
}
