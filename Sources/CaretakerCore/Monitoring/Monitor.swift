import Dispatch
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
/// After every run it reads the shared history, updates the metrics, writes the
/// textfile and evaluates alerts (which may send a mail). In normal mode a monitor
/// thread does that on a connection of its own, woken by each run's end and every
/// `refreshInterval` (so a job that goes stale while nothing runs is still noticed,
/// and `caretaker_database_up` stays current): the run's thread only counts, and
/// the job's lock is not held while a mail goes out. Low-footprint mode and `once`
/// keep no extra connection: they read on the run's connection, after the run is
/// recorded. The monitor thread also answers `GET /metrics` when `listen` is set.
public final class Monitor: RunObserver, @unchecked Sendable {
    static let refreshInterval: Duration = .seconds(60)
    /// How often a `[metrics] listen` address that could not be bound is tried again.
    static let bindRetryInterval: Duration = .seconds(30)

    private let logger: Logger
    private let isDaemon: Bool
    private let started = ContinuousClock.now
    private let pinger: Pinger
    /// Only `caretaker run` exposes metrics.
    private let metrics: CaretakerMetrics?
    private struct State {
        var configuration: Configuration
        var alerts: AlertNotifier?
        /// Since when each enabled job is watched: a new job's grace before "never succeeded".
        var watch: JobWatch
        var skippedCursor = HistoryReadings.SkippedCursor()
    }
    private let state: Mutex<State>
    /// One reading at a time: the monitor thread and run threads take turns.
    private let refreshing = Mutex<Void>(())
    private var server: MetricsHTTPServer?
    /// `[metrics] listen` as configured at start; while `server` is nil the monitor thread retries it.
    private var listenAddress: ListenAddress?
    private var nextBindAttempt = ContinuousClock.now
    /// Wakes the monitor thread: `refreshByte` after a run, `stopByte` to end it.
    private var wakePipe: (read: Int32, write: Int32) = (-1, -1)
    private static let refreshByte: UInt8 = 1
    private static let stopByte: UInt8 = 0
    /// Set once by `start`: the monitor thread reads the history on its own connection.
    private var refreshesOnOwnConnection = false
    private let threadDone = DispatchSemaphore(value: 0)
    private var threadRunning = false

    /// `isDaemon`: `caretaker run` (metrics, monitor thread); else `once` (pings and alerts only).
    public init(configuration: Configuration, isDaemon: Bool, logger: Logger) throws {
        self.logger = logger
        self.isDaemon = isDaemon
        pinger = Pinger(logger: logger)
        let metricsOn = isDaemon && (!configuration.metrics.listen.isEmpty || !configuration.metrics.textfile.isEmpty)
        metrics = metricsOn ? CaretakerMetrics(version: caretakerVersion) : nil
        state = Mutex(
            State(
                configuration: configuration, alerts: try Self.alerts(configuration, logger: logger),
                watch: JobWatch(configuration)))
        metrics?.declare(jobs: configuration.jobs.filter(\.enabled).map(\.name))
    }

    private static func alerts(_ configuration: Configuration, logger: Logger) throws -> AlertNotifier? {
        configuration.alerts.mailTo.isEmpty ? nil : try AlertNotifier(configuration: configuration, logger: logger)
    }

    /// Opens the listener and starts the monitor thread when there is work for it.
    ///
    /// A listener that cannot bind (the port is taken, the address is not this host's)
    /// stops nothing: the error is logged once, the jobs run, and the monitor thread
    /// tries the bind again every `bindRetryInterval` (`caretaker check` names it meanwhile).
    public func start() throws {
        let configuration = state.withLock { $0.configuration }
        if isDaemon, let address = ListenAddress(metrics: configuration.metrics.listen) {
            listenAddress = address
            bindListener(first: true)
        }
        let lowFootprint = configuration.worker.lowFootprint
        let refreshes =
            isDaemon && !lowFootprint
            && (metrics != nil || !configuration.alerts.mailTo.isEmpty)
        guard listenAddress != nil || refreshes else { return }
        refreshesOnOwnConnection = refreshes
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw MonitoringError("cannot create the monitor's wake-up pipe: \(SystemError.lastMessage())")
        }
        wakePipe = (fds[0], fds[1])
        threadRunning = true
        let connector = refreshes ? try DatabaseConnector(options: configuration.database) : nil
        OSThread.start(name: "caretaker/monitor", stackSize: 256 * 1024) { [self] in
            monitorLoop(connector: connector, lowFootprint: lowFootprint)
            threadDone.signal()
        }
    }

    /// Stops the monitor thread and sends what pings are queued (waiting a little longer than one ping's timeout).
    public func stop() {
        if threadRunning {
            var byte = Self.stopByte
            _ = write(wakePipe.write, &byte, 1)
            _ = threadDone.wait(timeout: .now() + .seconds(5))
            close(wakePipe.read)
            close(wakePipe.write)
            threadRunning = false
        }
        server = nil
        pinger.drain(timeout: .milliseconds(Pinger.timeoutMilliseconds + 1000))
    }

    /// SIGHUP: new jobs, ping URLs and alert recipient; `[metrics]` changes take effect at the next start.
    public func reload(_ configuration: Configuration) {
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
            }
            return state.configuration.metrics
        }
        if previous != configuration.metrics {
            logger.warning("[metrics] changes take effect at the next start")
        }
        metrics?.declare(jobs: configuration.jobs.filter(\.enabled).map(\.name))
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
        if refreshesOnOwnConnection {
            var byte = Self.refreshByte
            _ = write(wakePipe.write, &byte, 1)
        } else {
            refresh(on: connection)
        }
    }

    // MARK: Readings

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

    private func writeTextfile(_ path: String) {
        guard let metrics, !path.isEmpty else { return }
        do {
            try TextfileWriter.write(metrics.exposition(), to: path)
        } catch {
            logger.warning("metrics textfile not written", metadata: ["error": "\(error)"])
        }
    }

    /// The monitor thread: answers scrapes, and (with a connector) refreshes after
    /// each run and every `refreshInterval`.
    private func monitorLoop(connector: DatabaseConnector?, lowFootprint: Bool) {
        var connection: Connection?
        var nextRefresh = ContinuousClock.now
        var releaseBeforeSleeping = false
        while true {
            if let connector, ContinuousClock.now >= nextRefresh {
                if connection?.isHealthy != true {
                    connection = try? connector.connect(applicationName: "caretaker/monitor")
                }
                if let connection {
                    refresh(on: connection)
                } else {
                    metrics?.databaseUnavailable()
                    writeTextfile(state.withLock { $0.configuration.metrics.textfile })
                }
                nextRefresh = ContinuousClock.now + Self.refreshInterval
            }
            if server == nil, listenAddress != nil, ContinuousClock.now >= nextBindAttempt {
                bindListener(first: false)
            }
            var fds = [
                pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0),
                pollfd(fd: server?.descriptor ?? -1, events: Int16(POLLIN), revents: 0),
            ]
            var wakeAt: ContinuousClock.Instant? = connector == nil ? nil : nextRefresh
            if server == nil, listenAddress != nil { wakeAt = min(wakeAt ?? nextBindAttempt, nextBindAttempt) }
            let wait = wakeAt.map { Int32(max(0, ContinuousClock.now.duration(to: $0).microseconds / 1000)) } ?? -1
            // Low-footprint mode: a scrape maps code back in; hand it back until the next one,
            // last before poll(2), so that no code runs between the release and the sleep.
            if releaseBeforeSleeping {
                IdleMemory.release()
                releaseBeforeSleeping = false
            }
            let ready = poll(&fds, nfds_t(fds.count), wait)
            if ready < 0 && errno != EINTR { return }
            if fds[0].revents != 0 {
                var bytes = [UInt8](repeating: 0, count: 64)
                let count = read(wakePipe.read, &bytes, bytes.count)
                if count <= 0 || bytes[..<count].contains(Self.stopByte) { return }
                nextRefresh = ContinuousClock.now
            }
            if fds[1].revents & Int16(POLLIN) != 0, let server, let metrics {
                server.serveOne { metrics.exposition() }
                releaseBeforeSleeping = lowFootprint
            }
        }
    }
}
