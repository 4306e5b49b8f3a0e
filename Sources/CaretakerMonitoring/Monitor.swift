import CaretakerConfig
import CaretakerDatabase
import CaretakerJobs
import CaretakerSupport
import Logging
import Postgres
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What operators see and hear: Prometheus metrics (`[metrics]`), alert mails
/// (`[alerts]`) and pings (`ping_url`), fed by `JobRunner` as a `RunObserver`.
///
/// A refresh reads the shared history once (`HistoryReadings`), updates the
/// metrics, evaluates alerts (which may send a mail) and rewrites the textfile.
/// The monitor has no thread or loop of its own. In the daemon's normal mode, the
/// daemon's event loop decides when to refresh (`MonitoringPlan`: after each run's
/// end and every `refreshInterval`) and polls the `[metrics] listen` socket with
/// its other sockets; it runs each refresh (`refreshOnOwnConnection`, on a
/// connection the monitor keeps between refreshes) and each scrape's answer on a
/// short-lived thread and hears of its end as an event. So the scheduler thread
/// never waits on a mail server or a slow scraper, and a run's lock is not held
/// while a mail goes out. Low-footprint mode and `once` keep no extra connection:
/// they refresh on the run's connection and thread, after the run is recorded.
public final class Monitor: RunObserver, @unchecked Sendable {
    package static let refreshInterval: Duration = .seconds(60)
    /// How often a `[metrics] listen` address that could not be bound is tried again.
    static let bindRetryInterval: Duration = .seconds(30)

    private let logger: Logger
    private let isDaemon: Bool
    private let started = ContinuousClock.now
    private let pinger: Pinger
    /// Only `caretaker run` exposes metrics.
    private let metrics: CaretakerMetrics?
    /// Normal-mode daemon with metrics or alerts: refreshes come from the daemon's
    /// loop, on the monitor's own connection; otherwise on each run's connection.
    public let refreshesOnOwnConnection: Bool
    private struct State {
        var configuration: Configuration
        var alerts: AlertNotifier?
        /// Since when each enabled job is watched: a new job's grace before "never succeeded".
        var watch: JobWatch
        var skippedCursor = HistoryReadings.SkippedCursor()
        /// The connection refreshes read on, between them (normal mode).
        var connection: Connection?
        /// Counts reloads that moved to another database, so that a refresh under way
        /// across one does not put its connection to the old database back.
        var databaseGeneration = 0
    }
    private let state: Mutex<State>
    /// One reading at a time: a refresh thread and run threads take turns.
    private let refreshing = Mutex<Void>(())
    /// Used by the daemon's loop thread only.
    private var server: MetricsHTTPServer?
    /// `[metrics] listen` as configured at start; while `server` is nil the bind is retried.
    private var listenAddress: ListenAddress?
    private var nextBindAttempt = ContinuousClock.now

    /// `isDaemon`: `caretaker run` (metrics, refreshes of its own); else `once` (pings and alerts only).
    public init(configuration: Configuration, isDaemon: Bool, logger: Logger) throws {
        self.logger = logger
        self.isDaemon = isDaemon
        pinger = Pinger(logger: logger)
        let metricsOn = isDaemon && (!configuration.metrics.listen.isEmpty || !configuration.metrics.textfile.isEmpty)
        metrics = metricsOn ? CaretakerMetrics(version: caretakerVersion) : nil
        refreshesOnOwnConnection =
            isDaemon && !configuration.worker.lowFootprint && (metricsOn || !configuration.alerts.mailTo.isEmpty)
        state = Mutex(
            State(
                configuration: configuration, alerts: try Self.alerts(configuration, logger: logger),
                watch: JobWatch(configuration)))
        metrics?.declare(jobs: configuration.jobs.filter(\.enabled).map(\.name))
    }

    private static func alerts(_ configuration: Configuration, logger: Logger) throws -> AlertNotifier? {
        configuration.alerts.mailTo.isEmpty ? nil : try AlertNotifier(configuration: configuration, logger: logger)
    }

    /// Opens the `[metrics] listen` listener (the daemon only).
    ///
    /// A listener that cannot bind (the port is taken, the address is not this host's)
    /// stops nothing: the error is logged once, the jobs run, and the daemon's loop
    /// tries the bind again every `bindRetryInterval` (`caretaker check` names it meanwhile).
    public func start() {
        let configuration = state.withLock { $0.configuration }
        if isDaemon, let address = ListenAddress(metrics: configuration.metrics.listen) {
            listenAddress = address
            bindListener(first: true)
        }
    }

    /// Closes the listener and the refresh connection, and sends what pings are
    /// queued (waiting a little longer than one ping's timeout). Call when no refresh
    /// or scrape is under way.
    public func stop() {
        server = nil
        state.withLock { $0.connection = nil }
        pinger.drain(timeout: .milliseconds(Pinger.timeoutMilliseconds + 1000))
    }

    /// SIGHUP: new jobs, ping URLs and alert recipient; `[metrics]` changes take effect at the next start.
    /// With `databaseChanged`, the next refresh connects afresh.
    public func reload(_ configuration: Configuration, databaseChanged: Bool = false) {
        let alerts: AlertNotifier?
        do {
            alerts = try Self.alerts(configuration, logger: logger)
        } catch {
            logger.error(
                "alerts: cannot set up the mail transport; keeping the previous alert settings",
                metadata: ["error": "\(error)"])
            alerts = state.withLock { $0.alerts }
        }
        let previous = state.withLock { state in
            defer {
                state.configuration = configuration
                state.alerts = alerts
                state.watch.reload(configuration)
                if databaseChanged {
                    state.connection = nil
                    state.databaseGeneration += 1
                }
            }
            return state.configuration.metrics
        }
        if previous != configuration.metrics {
            logger.warning("[metrics] changes take effect at the next start")
        }
        metrics?.declare(jobs: configuration.jobs.filter(\.enabled).map(\.name))
    }

    // MARK: The listener (the daemon's loop thread)

    /// The listening socket for the daemon's loop to poll; nil while there is none.
    public var listenerDescriptor: Int32? { server?.descriptor }

    /// How long until the next attempt to bind `[metrics] listen`; nil when it is bound or not configured.
    public var timeUntilBindAttempt: Duration? {
        guard server == nil, listenAddress != nil else { return nil }
        return max(.zero, ContinuousClock.now.duration(to: nextBindAttempt))
    }

    /// Binds `[metrics] listen` again when it failed before and the next attempt is due.
    public func retryBindIfDue() {
        guard server == nil, listenAddress != nil, ContinuousClock.now >= nextBindAttempt else { return }
        bindListener(first: false)
    }

    /// A scraper's connection waiting to be answered (`answerScrape`), or nil.
    public func acceptScrape() -> Int32? {
        guard metrics != nil else { return nil }
        return server?.acceptWaiting()
    }

    /// Answers a scraper's connection from `acceptScrape` with the metrics and closes it
    /// (any thread: it may wait up to the request timeout for a slow client).
    public func answerScrape(_ client: Int32) {
        guard let metrics else {
            close(client)
            return
        }
        MetricsHTTPServer.answer(client) { metrics.exposition() }
    }

    /// Binds `[metrics] listen`; logs a failure only the first time, and the bind that finally works.
    private func bindListener(first: Bool) {
        guard let listenAddress, server == nil else { return }
        do {
            let server = try MetricsHTTPServer(listenAddress)
            self.server = server
            logger.info("metrics listening", metadata: ["address": "\(server.boundAddress)", "path": "/metrics"])
        } catch {
            nextBindAttempt = ContinuousClock.now + Self.bindRetryInterval
            if first {
                logger.error(
                    "metrics: cannot listen; the jobs run without it and the bind is retried every \(Self.bindRetryInterval.components.seconds) s",
                    metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: RunObserver

    public func runStarted(_ job: JobConfiguration, runID: Int64, dryRun: Bool) {
        if !job.pingURL.isEmpty, !dryRun { pinger.ping(job.pingURL, .start, job: job.name) }
    }

    public func runFinished(
        _ job: JobConfiguration, runID: Int64, status: RunStatus, stats: JobStats,
        duration: Duration, dryRun: Bool, on connection: Connection
    ) {
        guard !dryRun else { return }
        if !job.pingURL.isEmpty {
            switch status {
            case .succeeded: pinger.ping(job.pingURL, .success, job: job.name)
            case .failed: pinger.ping(job.pingURL, .fail, job: job.name)
            // A shutdown is not a failure; the check's grace time notices a run that never ends.
            case .interrupted, .running, .skipped: break
            }
        }
        metrics?.recordRun(
            job: job.name, status: status, stats: stats, declared: job.declaredStats, duration: duration.seconds)
        // Normal mode: the daemon's loop hears of the run's end and plans the refresh.
        if !refreshesOnOwnConnection { refresh(on: connection) }
    }

    // MARK: Readings

    /// A refresh on the monitor's own connection, (re)connecting with `connector`
    /// when it has none that works; without one, the metrics say the database is down.
    /// Blocks (the database, a mail): the daemon calls it on a thread of its own.
    public func refreshOnOwnConnection(connector: DatabaseConnector) {
        let (kept, generation) = state.withLock { state in
            defer { state.connection = nil }
            return (state.connection, state.databaseGeneration)
        }
        var connection = kept
        if connection?.isHealthy != true {
            connection = try? connector.connect(applicationName: "caretaker/monitor")
        }
        if let connection {
            refresh(on: connection)
            // Kept for the next refresh, unless a reload moved to another database meanwhile.
            state.withLock { if $0.databaseGeneration == generation { $0.connection = connection } }
        } else {
            metrics?.databaseUnavailable()
            writeTextfile(state.withLock { $0.configuration.metrics.textfile })
        }
    }

    /// Reads the history, updates the metrics, evaluates alerts and rewrites the
    /// textfile. Failures are logged, never passed on: monitoring must not fail a run.
    func refresh(on connection: Connection) {
        refreshing.withLock { _ in
            let (configuration, alerts, watch, cursor) = state.withLock {
                ($0.configuration, $0.alerts, $0.watch, $0.skippedCursor)
            }
            guard metrics != nil || alerts != nil else { return }
            do {
                let read = {
                    try HistoryReadings.read(connection, configuration: configuration, watchedFor: watch.watchedFor())
                }
                // With alerts, their states are read first (`AlertNotifier.statesThenReadings` says why).
                let (stored, readings): ([String: AlertPolicy.Stored]?, HistoryReadings) =
                    try alerts.map { try $0.statesThenReadings(on: connection, read) } ?? (nil, read())
                if let metrics {
                    let (skipped, next) = try HistoryReadings.skippedSlots(
                        connection, after: cursor,
                        uptime: ContinuousClock.now - started)
                    state.withLock { $0.skippedCursor = next }
                    metrics.recordSkipped(skipped)
                    metrics.update(readings)
                }
                if let alerts, let stored { try alerts.evaluate(readings, stored: stored, on: connection) }
            } catch {
                metrics?.databaseUnavailable()
                logger.warning(
                    "monitoring could not read the run history or the alert state", metadata: ["error": "\(error)"])
            }
            writeTextfile(configuration.metrics.textfile)
        }
    }

    /// The metrics as a scrape gets them (empty without metrics).
    func metricsExposition() -> [UInt8] { metrics?.exposition() ?? [] }

    private func writeTextfile(_ path: String) {
        guard let metrics, !path.isEmpty else { return }
        do {
            try TextfileWriter.write(metrics.exposition(), to: path)
        } catch {
            logger.warning("metrics textfile not written", metadata: ["error": "\(error)"])
        }
    }
}
