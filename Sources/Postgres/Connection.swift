import CLibPQ
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A blocking libpq connection.
///
/// - Important: every call blocks its thread until the server answers. Use a
///   connection from one thread at a time and keep it off Swift's cooperative
///   pool (the daemon runs each job on a thread of its own, `OSThread` in
///   CaretakerCore). Only `cancel()` may be
///   called from another thread while a statement runs.
public final class Connection: @unchecked Sendable {
    /// What to connect to.
    public struct Configuration: Sendable {
        /// A libpq URI (`postgresql://…`) or `key=value` string; empty uses libpq's
        /// defaults and the `PG*` variables.
        public var conninfo: String
        /// Shown in `pg_stat_activity`.
        public var applicationName: String
        /// Gives up connecting after this long. libpq counts whole seconds, at least 2.
        public var connectTimeout: Duration
        /// A password read from a file or credential; `nil` leaves it to libpq (`.pgpass`, `PGPASSWORD`).
        public var password: String?

        public init(
            conninfo: String, applicationName: String = "caretaker",
            connectTimeout: Duration = .seconds(10), password: String? = nil
        ) {
            self.conninfo = conninfo
            self.applicationName = applicationName
            self.connectTimeout = connectTimeout
            self.password = password
        }
    }

    private let handle: OpaquePointer
    private let canceller: Mutex<CancelHandle?>
    private let sent = Atomic<Int>(0)

    /// How many statements this connection has sent: each `query`, each statement of
    /// a `pipeline`, each `execute(script:)`. Tests count with it how many round trips
    /// a piece of work takes.
    public var statementsSent: Int { sent.load(ordering: .relaxed) }

    /// Connects, or throws a `.connection` error with libpq's message.
    public init(_ configuration: Configuration) throws(PostgresError) {
        var keys = ["dbname", "application_name", "connect_timeout"]
        var values = [
            configuration.conninfo,
            configuration.applicationName,
            String(max(2, Self.wholeSecondsRoundingUp(configuration.connectTimeout))),
        ]
        if let password = configuration.password {
            keys.append("password")
            values.append(password)
        }
        let connection = withCStringArray(keys) { keyPointers in
            withCStringArray(values) { valuePointers in
                PQconnectdbParams(keyPointers, valuePointers, 1)
            }
        }
        guard let connection else {
            throw PostgresError(kind: .connection, message: "out of memory while connecting")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            // libpq echoes parts of a conninfo it cannot parse (a URI with a broken
            // IPv6 host, a bad percent-escape in the password): never the password.
            let message = Self.redactingPasswords(Self.trimmed(PQerrorMessage(connection)), of: configuration)
            PQfinish(connection)
            throw PostgresError(kind: .connection, message: message)
        }
        // Server NOTICEs ("relation already exists, skipping") are not for the operator's terminal.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        handle = connection
        canceller = Mutex(CancelHandle(PQgetCancel(connection)))
    }

    /// `message` with every password of `configuration` replaced by `***`: the
    /// separate one and every password-like parameter libpq finds in the conninfo.
    /// When libpq cannot parse the conninfo, whatever its message quotes is hidden.
    static func redactingPasswords(_ message: String, of configuration: Configuration) -> String {
        var secrets = configuration.password.map { [$0] } ?? []
        var result = message
        if let found = ConninfoSecrets.values(in: configuration.conninfo) {
            secrets += found
        } else {
            // What libpq quotes back from a conninfo it cannot parse may hold a password.
            result = ServerText.hidingQuotedText(result, with: "***")
        }
        for secret in Set(secrets).filter({ !$0.isEmpty }).sorted(by: { $0.utf8.count > $1.utf8.count }) {
            result = result.replacing(secret, with: "***")
        }
        return result
    }

    private static func wholeSecondsRoundingUp(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds + (attoseconds > 0 ? 1 : 0)
    }

    deinit {
        canceller.withLock { $0 = nil }
        PQfinish(handle)
    }

    /// True while libpq believes the connection is usable.
    public var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK && PQpipelineStatus(handle) == PQ_PIPELINE_OFF }

    /// The socket, for waiting on notifications together with other events.
    public var socket: Int32 { PQsocket(handle) }

    /// The server process serving this connection (`pg_backend_pid()`).
    public var backendPID: Int32 { PQbackendPID(handle) }

    /// Runs one statement with `$1…$n` parameters sent separately from the SQL text.
    @discardableResult
    public func query(_ sql: String, _ parameters: [any PostgresBindable] = []) throws(PostgresError) -> QueryResult {
        let texts = parameters.map(\.postgresText)
        sent.add(1, ordering: .relaxed)
        let result = withOptionalCStringArray(texts) { pointers in
            PQexecParams(handle, sql, Int32(texts.count), nil, pointers, nil, nil, 0)
        }
        return try consume(result, statement: sql)
    }

    /// Variadic form of `query(_:_:)`.
    @discardableResult
    public func query(_ sql: String, _ parameters: any PostgresBindable...) throws(PostgresError) -> QueryResult {
        try query(sql, parameters)
    }

    /// Runs one statement without parameters, giving up when no answer came within
    /// `timeout` (a pooler can hold a statement in its queue far longer than any
    /// server-side `statement_timeout` covers).
    ///
    /// - Important: after a timeout the statement is still pending on this
    ///   connection, which is then good for nothing else: close it.
    @discardableResult
    public func query(_ sql: String, timeout: Duration) throws(PostgresError) -> QueryResult {
        sent.add(1, ordering: .relaxed)
        guard PQsendQuery(handle, sql) == 1 else { throw connectionError() }
        let deadline = ContinuousClock.now + timeout
        while true {
            guard PQconsumeInput(handle) == 1 else { throw connectionError() }
            if PQisBusy(handle) == 0 { break }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else {
                throw PostgresError(
                    kind: .connection,
                    message: "no answer from the server within \(Self.wholeSecondsRoundingUp(timeout)) s")
            }
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            let milliseconds =
                remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000
            if poll(&descriptor, 1, Int32(clamping: max(1, milliseconds))) < 0 && errno != EINTR {
                throw PostgresError(kind: .connection, message: "poll failed while waiting for the server")
            }
        }
        let result = PQgetResult(handle)
        // A single statement ends with one NULL result; drain it so the connection is idle again.
        while let extra = PQgetResult(handle) { PQclear(extra) }
        return try consume(result, statement: sql)
    }

    /// One statement of a `pipeline`: SQL with `$1…$n` and their values.
    public struct Statement {
        public var sql: String
        public var parameters: [any PostgresBindable]

        public init(_ sql: String, _ parameters: [any PostgresBindable] = []) {
            self.sql = sql
            self.parameters = parameters
        }
    }

    /// Sends `statements` together and waits once (libpq pipeline mode): one round
    /// trip instead of one per statement. Returns their results in order.
    ///
    /// After an error the server skips the rest up to the end of the pipeline, and
    /// the first error is thrown. A transaction the pipeline began is then still
    /// open and aborted: roll it back.
    public func pipeline(_ statements: [Statement]) throws(PostgresError) -> [QueryResult] {
        guard PQenterPipelineMode(handle) == 1 else { throw connectionError() }
        for statement in statements {
            let texts = statement.parameters.map(\.postgresText)
            sent.add(1, ordering: .relaxed)
            let sent = withOptionalCStringArray(texts) { pointers in
                PQsendQueryParams(handle, statement.sql, Int32(texts.count), nil, pointers, nil, nil, 0)
            }
            guard sent == 1 else { throw connectionError() }
        }
        guard PQpipelineSync(handle) == 1 else { throw connectionError() }
        var results = [QueryResult?](repeating: nil, count: statements.count)
        var firstError: PostgresError?
        var index = 0
        // Each statement's results end with a NULL; the pipeline ends with PGRES_PIPELINE_SYNC.
        while index <= statements.count {
            guard let result = PQgetResult(handle) else {
                guard PQstatus(handle) == CONNECTION_OK else { throw connectionError() }
                index += 1
                continue
            }
            defer { PQclear(result) }
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_SYNC { break }
            switch status {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
                if index < results.count { results[index] = Self.read(result) }
            case PGRES_PIPELINE_ABORTED:
                break
            default:
                firstError =
                    firstError ?? error(from: result, statement: statements[min(index, statements.count - 1)].sql)
            }
        }
        guard PQexitPipelineMode(handle) == 1 else { throw connectionError() }
        if let firstError { throw firstError }
        return results.map { $0 ?? QueryResult(columns: [], rows: [], affectedRows: 0) }
    }

    /// A pipeline that could not be finished leaves the connection in pipeline mode,
    /// where no other call works: `isHealthy` is then false and the caller drops it.
    private func connectionError() -> PostgresError {
        PostgresError(kind: .connection, message: Self.trimmed(PQerrorMessage(handle)))
    }

    /// Runs a script of several statements without parameters (migrations, `SET`).
    public func execute(script: String) throws(PostgresError) {
        sent.add(1, ordering: .relaxed)
        _ = try consume(PQexec(handle, script), statement: script)
    }

    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    public func withTransaction<T>(_ body: () throws -> T) throws -> T {
        try query("BEGIN")
        do {
            let value = try body()
            try query("COMMIT")
            return value
        } catch {
            if isHealthy { _ = try? query("ROLLBACK") }
            throw error
        }
    }

    /// Asks the server to cancel the statement running on this connection. Safe from any thread.
    public func cancel() {
        canceller.withLock { handle in
            guard let cancel = handle?.pointer else { return }
            var buffer = [CChar](repeating: 0, count: 256)
            _ = PQcancel(cancel, &buffer, Int32(buffer.count))
        }
    }

    // MARK: LISTEN / NOTIFY

    /// A notification received on a channel this connection listens to.
    public struct Notification: Sendable, Equatable {
        public let channel: String
        public let payload: String
        public let senderPID: Int32
    }

    /// Waits up to `timeout` for notifications; returns those that arrived (possibly none).
    public func waitForNotifications(timeout: Duration) throws(PostgresError) -> [Notification] {
        var pending = try drainNotifications()
        if !pending.isEmpty { return pending }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(
            clamping: timeout.components.seconds * 1000
                + timeout.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&descriptor, 1, milliseconds)
        if ready < 0 && errno != EINTR {
            throw PostgresError(kind: .connection, message: "poll failed on the listening connection")
        }
        pending = try drainNotifications()
        return pending
    }

    private func drainNotifications() throws(PostgresError) -> [Notification] {
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(kind: .connection, message: Self.trimmed(PQerrorMessage(handle)))
        }
        var received: [Notification] = []
        while let notify = PQnotifies(handle) {
            let message = notify.pointee
            received.append(
                Notification(
                    channel: String(cString: message.relname),
                    payload: String(cString: message.extra),
                    senderPID: message.be_pid))
            PQfreemem(notify)
        }
        return received
    }

    // MARK: Results

    /// The rows of `result`, or the error it carries, labelled with `statement`'s first line.
    private func consume(_ result: OpaquePointer?, statement: String) throws(PostgresError) -> QueryResult {
        guard let result else {
            throw PostgresError(kind: .connection, message: Self.trimmed(PQerrorMessage(handle)))
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return Self.read(result)
        default:
            throw error(from: result, statement: statement)
        }
    }

    private func error(from result: OpaquePointer, statement: String) -> PostgresError {
        PostgresError.fromServer(
            kind: PQstatus(handle) == CONNECTION_OK ? .query : .connection,
            fallbackMessage: Self.trimmed(PQresultErrorMessage(result)), statement: statement
        ) {
            field(result, $0)
        }
    }

    private func field(_ result: OpaquePointer, _ code: Character) -> String? {
        guard let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
        return String(cString: value)
    }

    private static func read(_ result: OpaquePointer) -> QueryResult {
        let columnCount = Int(PQnfields(result))
        let rowCount = Int(PQntuples(result))
        let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        var rows: [Row] = []
        rows.reserveCapacity(rowCount)
        for row in 0..<rowCount {
            let values: [String?] = (0..<columnCount).map { column in
                if PQgetisnull(result, Int32(row), Int32(column)) == 1 { return nil }
                return String(cString: PQgetvalue(result, Int32(row), Int32(column)))
            }
            rows.append(Row(columns: columns, values: values))
        }
        let affected = Int(String(cString: PQcmdTuples(result))) ?? rowCount
        return QueryResult(columns: columns, rows: rows, affectedRows: affected)
    }

    private static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "unknown libpq error" }
        let text = String(cString: message)
        let trimmedText = text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingPrefix("ERROR:  ").drop { $0 == " " || $0 == "\t" } }
            .joined(separator: "; ")
        return trimmedText.isEmpty ? "unknown libpq error" : trimmedText
    }
}

/// Owns a `PGcancel` and frees it exactly once.
private final class CancelHandle {
    let pointer: OpaquePointer?
    init(_ pointer: OpaquePointer?) { self.pointer = pointer }
    deinit { if let pointer { PQfreeCancel(pointer) } }
}

private func withCStringArray<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    withOptionalCStringArray(strings.map { Optional($0) }, body)
}

private func withOptionalCStringArray<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let duplicates: [UnsafeMutablePointer<CChar>?] = strings.map { $0.flatMap { strdup($0) } }
    defer { duplicates.forEach { free($0) } }
    var pointers = duplicates.map { UnsafePointer($0) }
    pointers.append(nil)
    return body(pointers)
}

/// The secrets of a libpq conninfo, as libpq itself reads them.
enum ConninfoSecrets {
    /// The values of every password-like parameter (those libpq shows as `*`:
    /// `password`, `sslpassword`, …) of `conninfo`, key/value or URI, percent-decoded;
    /// `nil` when libpq cannot parse it.
    static func values(in conninfo: String) -> [String]? {
        var parseError: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &parseError) else {
            if let parseError { PQfreemem(parseError) }
            return nil
        }
        defer { PQconninfoFree(options) }
        var found: [String] = []
        var option = options
        while option.pointee.keyword != nil {
            if let display = option.pointee.dispchar, display.pointee == CChar(UInt8(ascii: "*")),
                let value = option.pointee.val
            {
                found.append(String(cString: value))
            }
            option += 1
        }
        return found
    }
}
