import CaretakerDatabase
import Logging
import Postgres
import Synchronization

/// When to try the database again while it is unreachable.
struct ReconnectBackoff {
    /// Failed attempts so far.
    var attempt: Int
    /// The wait before the next attempt (doubling up to `ConnectionPool.maximumReconnectDelay`).
    var delay: Duration
    var at: ContinuousClock.Instant
}

/// The daemon's PostgreSQL connections: the scheduler's own (`control`: clock
/// readings, skipped-slot claims, deadline queries, LISTEN), idle ones for runs,
/// the ones running a job right now (`busy`, cancelled when the shutdown grace runs
/// out), and the retired ones (busy when the database settings changed, closed when
/// their run ends).
///
/// Low-footprint mode has a single connection: it is lent to the one
/// running job (no place is free meanwhile) and closed while the next run is far away.
///
/// Never waits for the database longer than one connection attempt: while it is
/// unreachable, attempts follow a backoff (1 s, 2 s, 4 s, … 60 s), each logged.
final class ConnectionPool {
    /// The longest wait between connection attempts while the database is down.
    static let maximumReconnectDelay: Duration = .seconds(60)
    /// The first wait after a failed attempt.
    static let firstReconnectDelay: Duration = .seconds(1)
    /// `statement_timeout` of the scheduler's statements and of the run bookkeeping
    /// (a job's own transactions set theirs locally): an operator's `LOCK TABLE
    /// caretaker.job_runs` must not freeze the scheduler thread.
    static let bookkeepingStatementTimeout = "5s"

    let lowFootprint: Bool
    let logger: Logger
    /// Opens connections to the configured database (a reload replaces it).
    var connector: DatabaseConnector

    /// The scheduler's connection, when it is open and not lent.
    private(set) var control: Connection?
    /// Low-footprint mode: the single connection is running a job.
    private(set) var controlLent = false
    private var idle: [Connection] = []
    private var retired: Set<ObjectIdentifier> = []
    /// Connections running a job right now, readable from the shutdown timer's thread.
    let busy = Mutex<[ObjectIdentifier: Connection]>([:])
    /// While the database is unreachable: when to try again, and how long the next wait is.
    private(set) var reconnect: ReconnectBackoff?

    init(lowFootprint: Bool, logger: Logger, connector: DatabaseConnector) {
        self.lowFootprint = lowFootprint
        self.logger = logger
        self.connector = connector
    }

    /// Places for runs the connections allow (low-footprint mode: none while its one connection is lent).
    var placesFree: Int { controlLent ? 0 : Int.max }
    /// Skipped slots can be recorded now (a free scheduler connection is, or can be, there).
    var canRecord: Bool { !controlLent }
    /// The LISTEN connection's socket, for the scheduler to wait on.
    var listenSocket: Int32? { lowFootprint ? nil : control?.socket }
    var runningConnections: Int { busy.withLock { $0.count } }

    // MARK: The scheduler's connection

    /// The scheduler's connection as it can be had now.
    enum ControlConnection {
        /// Open and ready.
        case ready(Connection)
        /// Just opened: the daemon prepares it (schema check, LISTEN, …), then hands it to
        /// `controlPrepared`, or its error to `controlNotPrepared`.
        case fresh(Connection)
        /// None now: lent, or the backoff allows no connection attempt yet (or this one failed).
        case unavailable
    }

    /// The scheduler's connection, opening one when there is none and the backoff
    /// allows an attempt now.
    func takeControl() -> ControlConnection {
        if let control {
            // After a statement timeout the connection waits out its backoff, then is tried again.
            guard let reconnect else { return .ready(control) }
            if reconnect.at > .now { return .unavailable }
            self.reconnect = nil
            return .ready(control)
        }
        guard !controlLent, !isBackingOff else { return .unavailable }
        do {
            return .fresh(try openConnection())
        } catch {
            unreachable(error)
            return .unavailable
        }
    }

    /// The daemon made a fresh connection (from `takeControl`) ready: it is the scheduler's now.
    func controlPrepared(_ connection: Connection) {
        control = connection
        reachable()
    }

    /// The daemon could not make a fresh connection ready: it is closed, and the next attempt waits.
    func controlNotPrepared(_ error: any Error) {
        unreachable(error)
    }

    private var isBackingOff: Bool { reconnect.map { $0.at > .now } ?? false }

    /// How long until the next connection attempt while the database is unreachable.
    var timeUntilReconnectAttempt: Duration? {
        reconnect.map { max(.zero, ContinuousClock.now.duration(to: $0.at)) }
    }

    /// Opens a connection named `caretaker` in `pg_stat_activity`, whose statements
    /// are bounded by `bookkeepingStatementTimeout` unless a job's transaction sets its own.
    ///
    /// It also asks the server to check for a vanished client during long statements
    /// (`client_connection_check_interval`, PostgreSQL 14+): when this process is
    /// killed mid-statement, the server ends the backend within a second, which
    /// releases the run's advisory lock, so the next instance can mark the run
    /// `interrupted` at once. Older servers refuse that setting; it only costs the speed-up.
    private func openConnection() throws -> Connection {
        let connection = try connector.connect(applicationName: "caretaker")
        try connection.query("SELECT set_config('statement_timeout', $1, false)", Self.bookkeepingStatementTimeout)
        _ = try? connection.query("SET client_connection_check_interval = '1s'")
        return connection
    }

    private func reachable() {
        if let reconnect {
            logger.info("database reachable again", metadata: ["attempts": "\(reconnect.attempt + 1)"])
        }
        reconnect = nil
    }

    /// Plans the next attempt (1 s, 2 s, 4 s, … up to 60 s) and logs this one.
    func unreachable(_ error: any Error) {
        if error is SchemaNotReady {
            // The daemon logged what is missing; it looks again soon, to start once `migrate` has run.
            reconnect = ReconnectBackoff(
                attempt: (reconnect?.attempt ?? 0) + 1, delay: SchemaNotReady.retryDelay,
                at: .now + SchemaNotReady.retryDelay)
            return
        }
        let attempt = (reconnect?.attempt ?? 0) + 1
        let delay = reconnect.map { min($0.delay * 2, Self.maximumReconnectDelay) } ?? Self.firstReconnectDelay
        reconnect = ReconnectBackoff(attempt: attempt, delay: delay, at: .now + delay)
        logger.warning(
            "database unavailable; retrying",
            metadata: [
                "attempt": "\(attempt)", "retry_in_ms": "\(delay.microseconds / 1000)", "error": "\(error)",
            ])
    }

    /// A statement on the scheduler's connection failed. A timeout (an operator's
    /// lock on caretaker's tables) keeps the connection and waits like a failed
    /// connection attempt; anything else drops it (and the idle ones, which share
    /// its fate when the server went away). Either way it is logged and retried.
    func controlFailed(_ error: any Error) {
        if let error = error as? PostgresError, error.isQueryCanceled, control?.isHealthy == true {
            logger.warning(
                "the scheduler's statement timed out; retrying",
                metadata: [
                    "statement_timeout": "\(Self.bookkeepingStatementTimeout)", "error": "\(error)",
                ])
            unreachable(error)
            return
        }
        logger.warning("lost the scheduler's database connection", metadata: ["error": "\(error)"])
        dropAll()
    }

    /// Closes the scheduler's and the idle connections; runs keep theirs.
    func dropAll() {
        control = nil
        idle.removeAll()
    }

    /// The database settings changed: connect afresh, and close the busy connections when their runs end.
    func retireAll() {
        dropAll()
        retired.formUnion(busy.withLock { Set($0.keys) })
    }

    /// Low-footprint mode: closes the idle connection (the caller found the next run more than `idle_disconnect` away).
    func closeIdleControl() {
        guard lowFootprint, control != nil else { return }
        control = nil
        logger.debug("closed the idle connection until the next run")
    }

    // MARK: Connections for runs

    /// A connection for one run: an idle or new one in normal mode; in
    /// low-footprint mode the scheduler's (the daemon makes sure it is there), lent
    /// until the run gives it back. Nil when the database cannot be reached (the
    /// backoff then plans the next attempt).
    func borrow() -> Connection? {
        let connection: Connection?
        if lowFootprint {
            connection = reconnect == nil ? control : nil
            if connection != nil {
                control = nil
                controlLent = true
            }
        } else {
            connection = idleOrNew()
        }
        if let connection { busy.withLock { $0[ObjectIdentifier(connection)] = connection } }
        return connection
    }

    private func idleOrNew() -> Connection? {
        while let connection = idle.popLast() {
            if connection.isHealthy { return connection }
        }
        guard !isBackingOff else { return nil }
        do {
            let connection = try openConnection()
            reconnect = nil
            return connection
        } catch {
            unreachable(error)
            return nil
        }
    }

    /// Takes back a run's connection, keeping it when it is still usable and still for the configured database.
    func giveBack(_ connection: Connection?) {
        if let connection { busy.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(connection)) } }
        let usable = connection.flatMap { connection in
            retired.remove(ObjectIdentifier(connection)) == nil && connection.isHealthy ? connection : nil
        }
        if lowFootprint {
            controlLent = false
            control = usable
        } else if let usable {
            idle.append(usable)
        }
    }

    /// Cancels the statements of every running job (the shutdown grace runs out).
    func cancelBusy() {
        busy.withLock { Array($0.values) }.forEach { $0.cancel() }
    }
}
