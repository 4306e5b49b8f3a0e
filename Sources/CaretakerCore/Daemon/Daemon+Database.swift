import CaretakerDatabase
import CaretakerSupport
import Logging
import Postgres

extension Daemon {
    /// The scheduler's connection: the pool's, or a fresh one made ready here first
    /// (`prepare`); nil while none can be had (lent, or the database unreachable: the
    /// pool's backoff plans the next attempt).
    func ensureControl() -> Connection? {
        switch pool.takeControl() {
        case .ready(let connection):
            return connection
        case .fresh(let connection):
            do {
                try prepare(connection)
            } catch {
                pool.controlNotPrepared(error)
                return nil
            }
            pool.controlPrepared(connection)
            return connection
        case .unavailable:
            return nil
        }
    }

    /// A connection for one run (low-footprint mode: the scheduler's, opened and made ready first).
    func borrowConnection() -> Connection? {
        if lowFootprint, ensureControl() == nil { return nil }
        return pool.borrow()
    }

    /// Checks the schema, reads the clock, rescues runs of dead processes and
    /// LISTENs. After a gap (any connection but the first) NOTIFYs may have been
    /// missed, so the jobs that listen run once to pick them up.
    func prepare(_ connection: Connection) throws {
        if try DatabaseRole.isStandby(connection) { throw DatabaseRole.standbyError }
        try requireCompleteSchema(connection)
        try clock.refresh(connection)
        let rescued = try RunRecorder(connection).interruptAllOrphans()
        if rescued > 0 {
            logger.warning("marked runs of dead processes interrupted", metadata: ["runs": "\(rescued)"])
        }
        if !lowFootprint {
            try listen(on: connection)
            if connectedBefore { carryOut(scheduler.listenReconnected()) }
        }
        connectedBefore = true
    }

    /// LISTENs on the channels of the enabled jobs.
    func listen(on connection: Connection) throws {
        for channel in Scheduler.notifyChannels(of: configuration.jobs) {
            try connection.query("LISTEN \(quoteIdentifier(channel))")
        }
    }

    /// Takes the NOTIFYs libpq has read on the LISTEN connection (during any query,
    /// or now from the socket) and hands them to the scheduler; drops the connection
    /// if it broke. True when any arrived.
    @discardableResult
    func drainNotifications() -> Bool {
        guard !lowFootprint, let control = pool.control else { return false }
        do {
            let notifications = try control.waitForNotifications(timeout: .zero)
            for notification in notifications {
                carryOut(scheduler.notified(channel: notification.channel))
            }
            return !notifications.isEmpty
        } catch {
            pool.controlFailed(error)
            return false
        }
    }

    /// Low-footprint mode: close the connection when the next run is more than
    /// `idle_disconnect` away (watchdog pings do not count: they need no database).
    func releaseIdleConnectionIfFar() {
        guard lowFootprint, pool.control != nil, !scheduler.hasSkipsToRecord else { return }
        if let wait = timeUntilNextRun(), wait <= configuration.worker.idleDisconnect { return }
        pool.closeIdleControl()
    }

    /// Low-footprint mode: once per idle stretch (no connection, next run more than
    /// `idle_disconnect` away), hands code pages and free heap back to the kernel.
    func releaseIdleMemoryIfFar() {
        guard lowFootprint, pool.control == nil, pool.canRecord, !idleMemoryReleased else { return }
        if let wait = timeUntilNextRun(), wait <= configuration.worker.idleDisconnect { return }
        idleMemoryReleased = true
        logger.debug("handing idle memory back until the next run")
        IdleMemory.release()
    }
}

/// The database answers but caretaker's schema is not (or not fully) there: the
/// daemon waits and tries again, like an unreachable database; it is not a failed query.
struct SchemaNotReady: Error, CustomStringConvertible {
    let description: String
}
