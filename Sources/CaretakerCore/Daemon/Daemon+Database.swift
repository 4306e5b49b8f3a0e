import Logging
import Postgres

/// When to try the database again while it is unreachable.
struct ReconnectBackoff {
    /// Failed attempts so far.
    var attempt: Int
    /// The wait before the next attempt (doubling up to `Daemon.maximumReconnectDelay`).
    var delay: Duration
    var at: ContinuousClock.Instant
}

extension Daemon {
    /// The longest wait between connection attempts while the database is down.
    static let maximumReconnectDelay: Duration = .seconds(60)
    /// The first wait after a failed attempt.
    static let firstReconnectDelay: Duration = .seconds(1)

    /// The LISTEN connection's socket, for the scheduler to wait on.
    var listenSocket: Int32? {
        guard !lowFootprint, let control else { return nil }
        return control.socket
    }

    // MARK: The scheduler's connection

    /// The scheduler's connection, connecting first when there is none and the
    /// reconnection backoff allows an attempt now. Never waits for the database
    /// longer than one connection attempt: the caller carries on without it and
    /// `timeUntilNextWake` plans the next attempt.
    ///
    /// Returns nil while low-footprint mode has lent its connection to a job.
    func ensureControl() -> Connection? {
        if let control { return control }
        guard !controlLent, !stopRequested.load(ordering: .relaxed) else { return nil }
        if let reconnect, reconnect.at > .now { return nil }
        do {
            let connection = try openConnection()
            try prepare(connection)
            control = connection
            databaseReachable()
            return connection
        } catch {
            databaseUnreachable(error)
            return nil
        }
    }

    /// Opens a connection named `caretaker` in `pg_stat_activity`.
    ///
    /// It asks the server to check for a vanished client during long statements
    /// (`client_connection_check_interval`, PostgreSQL 14+): when this process is
    /// killed mid-statement, the server ends the backend within a second, which
    /// releases the run's advisory lock, so the next instance can mark the run
    /// `interrupted` at once instead of after the statement. Older servers refuse
    /// the setting; that only costs the speed-up.
    func openConnection() throws -> Connection {
        let connection = try configuration.connector().connect(applicationName: "caretaker")
        _ = try? connection.query("SET client_connection_check_interval = '1s'")
        return connection
    }

    /// Checks the schema, reads the clock, rescues runs of dead processes and
    /// LISTENs. After a gap (any connection but the first) NOTIFYs may have been
    /// missed, so the jobs that listen run once to pick them up.
    private func prepare(_ connection: Connection) throws {
        if try DatabaseRole.isStandby(connection) { throw DatabaseRole.standbyError }
        let applied = try Migrator(appSchema: configuration.database.appSchema).appliedVersions(on: connection)
        guard applied.contains(1) else {
            throw PostgresError(kind: .query, message: "caretaker's schema is missing: run `caretaker migrate`")
        }
        try clock.refresh(connection)
        let rescued = try RunHistory.interruptAllOrphans(connection)
        if rescued > 0 {
            logger.warning("marked runs of dead processes interrupted", metadata: ["runs": "\(rescued)"])
        }
        if !lowFootprint {
            try listen(on: connection)
            if connectedBefore { markNotified() }
        }
        connectedBefore = true
    }

    func listen(on connection: Connection) throws {
        for job in enabledJobs {
            if let channel = NotifyChannel.channel(for: job.name) {
                try connection.query("LISTEN \(quoteIdentifier(channel))")
            }
        }
    }

    private func markNotified() {
        for job in enabledJobs where NotifyChannel.channel(for: job.name) != nil {
            states[job.name, default: JobState()].notified = true
        }
    }

    /// Logs the first success after failed attempts and clears the backoff.
    private func databaseReachable() {
        if let reconnect {
            logger.info("database reachable again", metadata: ["attempts": "\(reconnect.attempt + 1)"])
        }
        reconnect = nil
    }

    /// Plans the next attempt (1 s, 2 s, 4 s, … up to 60 s) and logs this one.
    func databaseUnreachable(_ error: any Error) {
        let attempt = (reconnect?.attempt ?? 0) + 1
        let delay = reconnect.map { min($0.delay * 2, Self.maximumReconnectDelay) } ?? Self.firstReconnectDelay
        reconnect = ReconnectBackoff(attempt: attempt, delay: delay, at: .now + delay)
        logger.warning("database unavailable; retrying", metadata: [
            "attempt": "\(attempt)", "retry_in_ms": "\(delay.microseconds / 1000)", "error": "\(error)"])
    }

    /// The scheduler's connection failed: drop it (and the idle pool, which shares
    /// its fate when the server went away). The next loop connects again.
    func controlLost(_ error: any Error) {
        logger.warning("lost the scheduler's database connection", metadata: ["error": "\(error)"])
        dropConnections()
    }

    func dropConnections() {
        control = nil
        idleConnections.removeAll()
    }

    /// Reads NOTIFYs that arrived on the LISTEN connection; drops it if it broke.
    func readNotifications() {
        guard !lowFootprint, let control else { return }
        do {
            for notification in try control.waitForNotifications(timeout: .zero) {
                if let job = NotifyChannel.job(for: notification.channel) {
                    states[job, default: JobState()].notified = true
                }
            }
        } catch {
            controlLost(error)
        }
    }

    /// Low-footprint mode: close the connection when the next run is more than
    /// `idle_disconnect` away (watchdog pings do not count: they need no database).
    func releaseIdleConnectionIfFar() {
        guard lowFootprint, control != nil, pendingSkips.isEmpty else { return }
        if let wait = timeUntilNextRun(), wait <= configuration.worker.idleDisconnect { return }
        control = nil
        logger.debug("closed the idle connection until the next run")
    }

    /// Low-footprint mode: once per idle stretch (no connection, next run more than
    /// `idle_disconnect` away), hands code pages and free heap back to the kernel.
    func releaseIdleMemoryIfFar() {
        guard lowFootprint, control == nil, !controlLent, !idleMemoryReleased else { return }
        if let wait = timeUntilNextRun(), wait <= configuration.worker.idleDisconnect { return }
        idleMemoryReleased = true
        logger.debug("handing idle memory back until the next run")
        IdleMemory.release()
    }

    // MARK: Connections for runs

    /// A connection for one job run: from the pool in normal mode; in
    /// low-footprint mode the single one, lent until the run gives it back.
    /// Nil when the database cannot be reached (the backoff then plans the retry).
    func borrowConnection() -> Connection? {
        if lowFootprint {
            guard let connection = ensureControl() else { return nil }
            control = nil
            controlLent = true
            idleMemoryReleased = false
            return connection
        }
        while let connection = idleConnections.popLast() {
            if connection.isHealthy { return connection }
        }
        if let reconnect, reconnect.at > .now { return nil }
        do {
            let connection = try openConnection()
            reconnect = nil
            return connection
        } catch {
            databaseUnreachable(error)
            return nil
        }
    }

    /// Takes back a run's connection when it is still usable (and still for the configured database).
    func giveBack(_ connection: Connection?) {
        let usable = connection.flatMap { connection in
            retiredConnections.remove(ObjectIdentifier(connection)) == nil && connection.isHealthy ? connection : nil
        }
        if lowFootprint {
            controlLent = false
            control = usable
        } else if let usable {
            idleConnections.append(usable)
        }
    }
}

extension Configuration {
    /// A connector for `[database]`; the password file was readable at start-up, so this only fails if it vanished.
    func connector() throws -> DatabaseConnector {
        try DatabaseConnector(options: database)
    }
}
