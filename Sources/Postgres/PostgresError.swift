/// An error from libpq or the server, with the SQLSTATE kept so callers can act on it.
///
/// Messages never contain the connection string: libpq's own connection errors
/// name the host and the user at most, and the server's messages do not echo
/// parameter values.
/// An error from libpq or the server, with the SQLSTATE kept so callers can act on it,
/// and the server's fields that say where: DETAIL, HINT, the constraint, schema,
/// table and column, and a short label of the statement that failed.
///
/// Messages never contain the connection string: libpq's own connection errors
/// name the host and the user at most. Nor do they carry values: parameters are
/// sent apart from the SQL text; the DETAIL's row values (`Failing row contains
/// (…)`, `Key (email)=(…)`) are dropped, keeping the column names; quoted input
/// that a data exception (class 22) echoes is hidden; and the statement label
/// stops before any quoted literal. (postgres-nio's `PSQLError` and GRDB's
/// `DatabaseError` keep the same parts apart.)
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Could not connect, or the connection broke.
        case connection
        /// The server answered a statement with an error.
        case query
    }

    public let kind: Kind
    /// The five-character SQLSTATE, when the server sent one (see `SQLState` for the names).
    public let sqlState: String?
    /// The server's (or libpq's) primary message, trimmed.
    public let message: String
    /// The server's DETAIL (`PG_DIAG_MESSAGE_DETAIL`), row values dropped.
    public let detail: String?
    /// The server's HINT (`PG_DIAG_MESSAGE_HINT`): what to do about it.
    public let hint: String?
    /// The constraint that failed (`PG_DIAG_CONSTRAINT_NAME`), for integrity errors.
    public let constraint: String?
    /// The schema, table and column the error is about (`PG_DIAG_SCHEMA_NAME`, …), when the server names them.
    public let schema: String?
    public let table: String?
    public let column: String?
    /// A short label of the statement that failed: its first line, cut before any quoted literal.
    public let statement: String?

    public init(
        kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil, hint: String? = nil,
        constraint: String? = nil, schema: String? = nil, table: String? = nil, column: String? = nil,
        statement: String? = nil
    ) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
        self.schema = schema
        self.table = table
        self.column = column
        self.statement = statement
    }

    /// `message (SQLSTATE 23514; constraint accounts_note_check on table public.accounts;
    /// detail: Failing row contains (…).; hint: …; statement: UPDATE accounts SET note = $2 WHERE id = $1)`.
    public var description: String {
        var parts: [String] = sqlState.map { ["SQLSTATE \($0)"] } ?? []
        let qualifiedTable = table.map { table in schema.map { "\($0).\(table)" } ?? table }
        var location: [String] = []
        if let constraint { location.append("constraint \(constraint)") }
        if let column { location.append("column \(column)") }
        if let qualifiedTable { location.append((location.isEmpty ? "table " : "on table ") + qualifiedTable) }
        if !location.isEmpty { parts.append(location.joined(separator: " ")) }
        if let detail { parts.append("detail: \(detail)") }
        if let hint { parts.append("hint: \(hint)") }
        if let statement { parts.append("statement: \(statement)") }
        return parts.isEmpty ? message : "\(message) (\(parts.joined(separator: "; ")))"
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
            || [
                SQLState.raiseException, SQLState.assertFailure, SQLState.lockNotAvailable,
                SQLState.deadlockDetected, SQLState.serializationFailure,
            ].contains(sqlState)
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
    public static let insufficientPrivilege = "42501"
    public static let readOnlySQLTransaction = "25006"
    public static let raiseException = "P0001"
    public static let assertFailure = "P0004"
    public static let adminShutdown = "57P01"
    public static let crashShutdown = "57P02"
    public static let cannotConnectNow = "57P03"
    /// Class 23, integrity constraint violations (foreign key, unique, check, not null, exclusion).
    public static let integrityConstraintViolationClass = "23"
    public static let divisionByZero = "22012"
    public static let notNullViolation = "23502"
    public static let foreignKeyViolation = "23503"
    public static let uniqueViolation = "23505"
    public static let checkViolation = "23514"
    /// Class 08, connection exceptions.
    public static let connectionExceptionClass = "08"
    /// Class 22, data exceptions (bad input for a type, division by zero, overflow): their messages may quote the input.
    public static let dataExceptionClass = "22"
}

extension PostgresError {
    /// Builds the error from the server's fields, dropping the values they may carry.
    /// `field` reads one `PG_DIAG_*` field by its code letter.
    static func fromServer(
        kind: Kind, fallbackMessage: String, statement sql: String?,
        field: (Character) -> String?
    ) -> PostgresError {
        let sqlState = field("C")
        var message = field("M") ?? fallbackMessage
        if sqlState?.hasPrefix(SQLState.dataExceptionClass) == true {
            // `invalid input syntax for type integer: "…"`: the input is a parameter value.
            message = ServerText.hidingQuotedText(message)
        }
        return PostgresError(
            kind: kind, sqlState: sqlState, message: message,
            detail: field("D").map(ServerText.detailWithoutValues), hint: field("H"),
            constraint: field("n"), schema: field("s"), table: field("t"), column: field("c"),
            statement: sql.flatMap(ServerText.statementLabel))
    }
}
