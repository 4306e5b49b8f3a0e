/// An error from libpq or the server, with the SQLSTATE kept so callers can act on it.
///
/// Messages never contain the connection string: libpq's own connection errors
/// name the host and the user at most, and the server's messages do not echo
/// parameter values.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Could not connect, or the connection broke.
        case connection
        /// The server answered a statement with an error.
        case query
    }

    public let kind: Kind
    /// The five-character SQLSTATE, when the server sent one.
    public let sqlState: String?
    /// The server's (or libpq's) primary message, trimmed.
    public let message: String
    /// The constraint that failed (`PG_DIAG_CONSTRAINT_NAME`), for integrity errors.
    public let constraint: String?

    public init(kind: Kind, sqlState: String? = nil, message: String, constraint: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.constraint = constraint
    }

    public var description: String {
        if let sqlState { return "\(message) (SQLSTATE \(sqlState))" }
        return message
    }

    /// `55P03`: a `lock_timeout` expired or `NOWAIT` found the row locked.
    public var isLockNotAvailable: Bool { sqlState == SQLState.lockNotAvailable }
    /// `57014`: `statement_timeout` or a cancel request stopped the statement.
    public var isQueryCanceled: Bool { sqlState == SQLState.queryCanceled }
    /// `40P01`: the server broke a deadlock by aborting this transaction.
    public var isDeadlockDetected: Bool { sqlState == SQLState.deadlockDetected }
    /// `40001`: a serializable transaction must be retried.
    public var isSerializationFailure: Bool { sqlState == SQLState.serializationFailure }
    /// A table, column, schema or function the statement names is missing.
    public var isUndefinedObject: Bool {
        [SQLState.undefinedTable, SQLState.undefinedColumn, SQLState.invalidSchemaName, SQLState.undefinedFunction]
            .contains(sqlState ?? "")
    }
    /// `25006`: a write on a read-only server (a standby) or in a read-only transaction.
    public var isReadOnly: Bool { sqlState == SQLState.readOnlySQLTransaction }
    /// An error one row raised for reasons of the app's own: a constraint (class 23:
    /// a foreign key, a check, …), a trigger's `RAISE` (`P0001`, `P0004`), a row
    /// lock held too long (`55P03`), a deadlock (`40P01`) or a serialization
    /// failure (`40001`). Retrying the other rows of the batch one by one is worth it.
    public var isRowLevel: Bool {
        guard kind == .query, let sqlState else { return false }
        return sqlState.hasPrefix(SQLState.integrityConstraintViolationClass)
            || [SQLState.raiseException, SQLState.assertFailure, SQLState.lockNotAvailable,
                SQLState.deadlockDetected, SQLState.serializationFailure].contains(sqlState)
    }
    /// The connection is gone (class 08, admin shutdown 57P01–57P03, or libpq lost it).
    public var isConnectionLost: Bool {
        if kind == .connection { return true }
        guard let sqlState else { return false }
        return sqlState.hasPrefix(SQLState.connectionExceptionClass)
            || [SQLState.adminShutdown, SQLState.crashShutdown, SQLState.cannotConnectNow].contains(sqlState)
    }
}

/// The SQLSTATE codes caretaker acts on, by their names in PostgreSQL's
/// "PostgreSQL Error Codes" appendix.
public enum SQLState {
    public static let lockNotAvailable = "55P03"
    public static let queryCanceled = "57014"
    public static let deadlockDetected = "40P01"
    public static let serializationFailure = "40001"
    public static let undefinedTable = "42P01"
    public static let undefinedColumn = "42703"
    public static let undefinedFunction = "42883"
    public static let invalidSchemaName = "3F000"
    public static let readOnlySQLTransaction = "25006"
    public static let raiseException = "P0001"
    public static let assertFailure = "P0004"
    public static let adminShutdown = "57P01"
    public static let crashShutdown = "57P02"
    public static let cannotConnectNow = "57P03"
    /// Class 23, integrity constraint violations (foreign key, unique, check, not null, exclusion).
    public static let integrityConstraintViolationClass = "23"
    /// Class 08, connection exceptions.
    public static let connectionExceptionClass = "08"
}
