import Postgres

/// Finds out whether `database.url` leads to a pooler that shares server sessions
/// between client connections (PgBouncer's transaction or statement mode), which
/// breaks caretaker's session advisory locks and LISTEN.
///
/// Two client connections stay open together and take turns asking which server
/// process answers (`pg_backend_pid()`): first, second, first, … Without such a
/// pooler every connection keeps one server session of its own for its whole
/// life, so each connection always sees the same process and the two never see
/// the same one. Either rule broken proves the pooler; it does not take other
/// clients to show it. Idle, the pooler hands the second connection the server
/// connection the first one just released (PgBouncer reuses the most recently
/// used one); busy, the first connection's next statement lands elsewhere.
public struct PoolerCheck: Sendable {
    /// What the probe concluded; its description is a sentence for the operator.
    public enum Verdict: Sendable, Equatable, CustomStringConvertible {
        /// Each connection kept a server session of its own. `pooled` is true when a
        /// pooler sits in between all the same (a session-mode pooler: fine).
        case ownSessions(pooled: Bool)
        /// Server sessions moved between client connections; `evidence` says what was seen.
        case sharedSessions(evidence: String)
        /// The probe could not finish: a second connection failed or got no answer.
        case inconclusive(reason: String)

        /// True for `ownSessions`: caretaker's locks and LISTEN work on this database.
        public var keepsOwnSessions: Bool {
            if case .ownSessions = self { return true }
            return false
        }

        public var description: String {
            switch self {
            case .ownSessions(let pooled):
                "each connection keeps a server session of its own (\(pooled ? "through a pooler in session mode" : "no pooler seen"))"
            case .sharedSessions(let evidence):
                "database.url leads to a pooler in transaction or statement mode (\(evidence)); "
                    + "caretaker's advisory locks and LISTEN need a server session of their own per connection: "
                    + "set pool_mode = session for this database in the pooler, or connect caretaker to PostgreSQL directly"
            case .inconclusive(let reason):
                "could not tell whether a pooler shares server sessions between connections: \(reason)"
            }
        }
    }

    /// Which of the probe's two client connections ran a statement.
    public enum Side: Sendable { case first, second }

    /// How many times each side asks (the first side once more, to end the probe).
    public static let rounds = 3
    /// `application_name` of the probe's second connection, as `pg_stat_activity` shows it.
    public static let applicationName = "caretaker-pooler-check"

    private var firstPIDs: [Int] = []
    private var secondPIDs: [Int] = []

    public init() {}

    /// Records that a statement on `side` was answered by server process `serverPID`.
    public mutating func observe(_ side: Side, serverPID: Int) {
        switch side {
        case .first: firstPIDs.append(serverPID)
        case .second: secondPIDs.append(serverPID)
        }
    }

    /// What the observations so far prove; nil while they fit one server session per connection.
    public var evidence: String? {
        for pids in [firstPIDs, secondPIDs] {
            let distinct = pids.reduce(into: [Int]()) { seen, pid in if !seen.contains(pid) { seen.append(pid) } }
            if distinct.count > 1 {
                return
                    "one connection's statements ran on server processes \(distinct.map(String.init).joined(separator: ", "))"
            }
        }
        if let shared = firstPIDs.first(where: secondPIDs.contains) {
            return "two connections open at the same time both ran on server process \(shared)"
        }
        return nil
    }

    /// Probes through `connection` and a second connection that `connector` opens
    /// (and this closes again). Every statement on the second connection gives up
    /// after `database.connect_timeout`: a pooler whose pool `connection` already
    /// fills holds it in its queue. Throws only when `connection` itself fails.
    public static func probe(_ connection: Connection, connector: DatabaseConnector) throws(PostgresError) -> Verdict {
        var check = PoolerCheck()
        let firstPID = try serverPID(connection)
        check.observe(.first, serverPID: firstPID)
        // PgBouncer makes up the process id it reports when a client connects.
        let pooled = firstPID != Int(connection.backendPID)
        let second: Connection
        do {
            second = try connector.connect(applicationName: applicationName)
        } catch {
            return .inconclusive(reason: "a second connection failed: \(error)")
        }
        for _ in 0..<rounds {
            do {
                check.observe(.second, serverPID: try serverPID(second, timeout: connector.options.connectTimeout))
            } catch {
                return .inconclusive(reason: "a second connection got no answer: \(error)")
            }
            check.observe(.first, serverPID: try serverPID(connection))
            if let evidence = check.evidence { return .sharedSessions(evidence: evidence) }
        }
        return .ownSessions(pooled: pooled)
    }

    private static let pidQuery = "SELECT pg_backend_pid() AS pid"

    private static func serverPID(_ connection: Connection, timeout: Duration? = nil) throws(PostgresError) -> Int {
        let result =
            if let timeout { try connection.query(pidQuery, timeout: timeout) } else { try connection.query(pidQuery) }
        guard let pid = result.first?.int("pid") else {
            throw PostgresError(kind: .query, message: "pg_backend_pid() returned no row")
        }
        return pid
    }
}
