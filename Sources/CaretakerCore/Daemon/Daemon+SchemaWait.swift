import CaretakerJobs
import Postgres

extension Daemon {
    /// Throws `SchemaNotReady` while a migration is pending or what one built is gone
    /// (`SchemaReadiness`): no job runs on such a schema. The daemon does not exit
    /// (an upgraded package starts before its `caretaker migrate`): it says what is
    /// missing once in the log, and in its systemd status for as long as it waits,
    /// looks again every `SchemaNotReady.retryDelay`, and starts the jobs once the
    /// schema is complete.
    func requireCompleteSchema(_ connection: Connection) throws {
        let readiness = try SchemaReadiness.check(connection, appSchema: configuration.database.appSchema)
        if readiness.isReady {
            if schemaWait != nil {
                logger.info("caretaker's schema is complete now; starting the jobs")
                schemaWait = nil
                notifier.status(statusLine())
            }
            return
        }
        let message = readiness.message
        if schemaWait != message {
            logger.warning(
                "waiting for caretaker's schema; no job runs until it is complete", metadata: ["missing": "\(message)"])
            notifier.status("waiting for caretaker's schema: \(message)")
            schemaWait = message
        }
        throw SchemaNotReady(description: message)
    }
}

extension SchemaNotReady {
    /// How often the daemon looks at the schema again while it waits for `migrate`.
    static let retryDelay: Duration = .seconds(5)
}
