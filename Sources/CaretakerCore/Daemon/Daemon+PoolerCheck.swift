import CaretakerDatabase
import Postgres

extension Daemon {
    /// Start-up, once the database answers: refuses to run behind a pooler that
    /// shares server sessions between connections (`PoolerCheck`), where the runs'
    /// advisory locks and LISTEN would silently stop meaning anything. Exit 78,
    /// not 69: the pooler does not change its mode by itself, so restarting
    /// cannot help (systemd's `RestartPreventExitStatus=78`).
    ///
    /// True when it refuses (logged as an error). A probe that cannot finish (the
    /// second connection fails, or the first one breaks meanwhile) is logged as a
    /// warning and does not stop the start.
    func refusesSharedSessions() -> Bool {
        guard let control = pool.control else { return false }
        let verdict: PoolerCheck.Verdict
        do {
            verdict = try PoolerCheck.probe(control, connector: connector)
        } catch {
            verdict = .inconclusive(reason: "\(error)")
            if !control.isHealthy { pool.dropAll() }
        }
        switch verdict {
        case .ownSessions:
            logger.debug("\(verdict)")
            return false
        case .sharedSessions:
            logger.error("refusing to start: \(verdict)")
            return true
        case .inconclusive:
            logger.warning("\(verdict)")
            return false
        }
    }
}
