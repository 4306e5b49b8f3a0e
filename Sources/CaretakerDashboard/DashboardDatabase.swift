import CaretakerCore
import Dispatch
import Postgres

/// The dashboard's one database connection, used by one request at a time.
///
/// libpq blocks, so each read runs on a serial dispatch queue, never on Swift's
/// cooperative pool. The session is read-only (`default_transaction_read_only`),
/// every read is a `READ ONLY` transaction, and statements stop after
/// `statementTimeout`. A broken connection is dropped and the next read reconnects.
public final class DashboardDatabase: @unchecked Sendable {
    /// Defaults to 5 s: a page that needs longer should not hold the history's locks.
    public static let defaultStatementTimeout: Duration = .seconds(5)

    private let connector: DatabaseConnector
    private let statementTimeout: Duration
    private let queue = DispatchQueue(label: "caretaker.dashboard.database")
    /// Touched only on `queue`.
    private var connection: Connection?

    public init(connector: DatabaseConnector, statementTimeout: Duration = defaultStatementTimeout) {
        self.connector = connector
        self.statementTimeout = statementTimeout
    }

    /// Runs `body` in a read-only transaction on the connection (connecting first when needed).
    public func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try self.readNow(body) })
            }
        }
    }

    private func readNow<T>(_ body: (Connection) throws -> T) throws -> T {
        let connection = try current()
        do {
            try connection.query("BEGIN READ ONLY")
            let value = try body(connection)
            try connection.query("COMMIT")
            return value
        } catch {
            if connection.isHealthy {
                _ = try? connection.query("ROLLBACK")
            } else {
                self.connection = nil
            }
            throw error
        }
    }

    private func current() throws -> Connection {
        if let connection, connection.isHealthy { return connection }
        connection = nil
        let fresh = try connector.connect(applicationName: "caretaker/dashboard")
        let milliseconds = statementTimeout.microseconds / 1000
        try fresh.query(
            """
            SELECT set_config('default_transaction_read_only', 'on', false),
                   set_config('statement_timeout', $1, false),
                   set_config('idle_in_transaction_session_timeout', $1, false)
            """, "\(max(milliseconds, 1))ms")
        connection = fresh
        return fresh
    }
}
