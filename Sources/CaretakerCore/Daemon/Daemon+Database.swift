import Foundation
import Logging
import Postgres

extension Daemon {
    /// The longest wait between connection attempts while the database is down.
    static let maximumReconnectDelay: Duration = .seconds(60)

    /// The LISTEN connection's socket, when there is one to wait on.
    var listenSocket: Int32? {
        guard !lowFootprint, let control, runningOnControl == false else { return nil }
        return control.socket
    }

    /// In low-footprint mode the single connection is lent to the running job.
    var runningOnControl: Bool { lowFootprint && runningCount > 0 }

    /// Connects the scheduler's connection, retrying with backoff (logging each
    /// attempt) until it works or shutdown is requested. Returns false on shutdown.
    @discardableResult
    func connectControl(firstTime: Bool = false) -> Bool {
        var delay: Duration = .seconds(1)
        var attempt = 1
        while !stopRequested.load(ordering: .relaxed) {
            do {
                let connection = try runner.configuration.connector().connect(applicationName: "caretaker")
                try prepare(connection, firstTime: firstTime)
                control = connection
                if attempt > 1 { logger.info("database reachable again", metadata: ["attempts": "\(attempt)"]) }
                return true
            } catch {
                logger.warning("database unavailable; retrying", metadata: [
                    "attempt": "\(attempt)", "retry_in_ms": "\(delay.microseconds / 1000)", "error": "\(error)"])
                events.wait(timeout: delay).events.forEach(handle)
                delay = min(delay * 2, Self.maximumReconnectDelay)
                attempt += 1
            }
        }
        return false
    }

    /// Reads the clock, rescues runs of dead processes and LISTENs.
    private func prepare(_ connection: Connection, firstTime: Bool) throws {
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
            if !firstTime {
                // LISTEN is only a speed-up: after a gap, run once to pick up what was missed.
                markNotified()
            }
        }
    }

    private func listen(on connection: Connection) throws {
        for job in configuration.jobs where job.enabled {
            if let channel = NotifyChannel.channel(for: job.name) {
                try connection.query("LISTEN \(quoteIdentifier(channel))")
            }
        }
    }

    private func markNotified() {
        for job in configuration.jobs where job.enabled && NotifyChannel.channel(for: job.name) != nil {
            states[job.name, default: JobState()].notified = true
        }
    }

    /// Reads NOTIFYs from the control connection; reconnects if it broke.
    func readNotifications() {
        guard let control else { return }
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

    /// Drops the scheduler's connection after an error and connects again.
    func controlLost(_ error: any Error) {
        logger.warning("lost the scheduler's database connection", metadata: ["error": "\(error)"])
        control = nil
        connectControl()
    }

    /// Returns the scheduler's connection, connecting first when low-footprint mode closed it.
    func ensureControl() -> Connection? {
        if let control, control.isHealthy { return control }
        control = nil
        return connectControl() ? control : nil
    }

    /// Low-footprint mode: close the connection when the next run is more than `idle_disconnect` away.
    func releaseIdleConnectionIfFar() {
        guard lowFootprint, control != nil, runningCount == 0 else { return }
        if let wait = timeUntilNextWake(), wait <= configuration.worker.idleDisconnect { return }
        control = nil
        logger.debug("closed the idle connection until the next run")
    }

    /// A connection for one job run: the pool in normal mode, the single one in low-footprint mode.
    func borrowConnection() -> Connection? {
        if lowFootprint { return ensureControl() }
        while let connection = idleConnections.popLast() {
            if connection.isHealthy { return connection }
        }
        do {
            return try runner.configuration.connector().connect(applicationName: "caretaker")
        } catch {
            logger.warning("cannot open a connection for a job run", metadata: ["error": "\(error)"])
            return nil
        }
    }

    func giveBack(_ connection: Connection?) {
        guard let connection, !lowFootprint, connection.isHealthy else { return }
        idleConnections.append(connection)
    }
}

extension Configuration {
    /// A connector for `[database]`; the password file was readable at start-up, so this only fails if it vanished.
    func connector() throws -> DatabaseConnector {
        try DatabaseConnector(options: database)
    }
}
