import CaretakerConfig
import CaretakerDatabase
import CaretakerMail
import CaretakerMonitoring
import CaretakerSupport
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

/// `caretaker run`: the long-running scheduler, the shell around `Scheduler`.
///
/// One scheduler thread owns all state. It sleeps in `poll(2)` until the
/// earliest due time, a signal, a finished run, a NOTIFY or a metrics scrape, asks
/// the `Scheduler` what to do on a fresh reading of the database clock, and carries
/// that out: starts runs on threads of their own (libpq blocks; nothing here touches
/// Swift's cooperative pool), records skipped slots, asks deadline queries, feeds the
/// watchdog, handles signals. Monitoring's refreshes and scrapes are started from
/// the same loop, each on a short-lived thread (`Daemon+Monitoring.swift`). The connections, and the low-footprint rules for
/// them, belong to the `ConnectionPool`. Nothing on the scheduler thread waits for
/// the database longer than one statement (`statement_timeout`) or one connection
/// attempt: while it is unreachable, attempts are planned like any other wake-up.
public final class Daemon: @unchecked Sendable {
    enum Event: Sendable {
        case signal(Int32)
        /// A run ended on its thread: its outcome, or the error its bookkeeping threw
        /// (the database: connection lost, bookkeeping missing or timed out), not relabelled.
        case finished(request: JobRunner.Request, outcome: Result<RunOutcome, any Error>, connection: Connection?)
        /// A monitoring refresh ended on its thread.
        case monitoringRefreshed
        /// A scrape of `/metrics` was answered on its thread.
        case scrapeAnswered
    }

    let configurationPath: String
    let lowFootprintFlag: Bool
    /// Fixed at start-up: the mode decides how connections are held, so a reload cannot switch it.
    let lowFootprint: Bool
    var configuration: Configuration
    /// Opens connections with the database password read once, at start and on each reload
    /// (not on every connection): a SIGHUP picks up a rotated password file. The pool's.
    var connector: DatabaseConnector { pool.connector }
    var runner: JobRunner
    /// Metrics, alerts and pings (`Monitoring/`), told of every run by `runner`;
    /// refreshed and scraped from this loop (`Daemon+Monitoring.swift`).
    let monitor: Monitor
    /// When `monitor` refreshes on its own connection.
    var monitoringPlan: MonitoringPlan
    /// A scrape's answer is under way on its thread: the listener is not polled meanwhile.
    var scraping = false
    let logger: Logger
    let notifier: SystemdNotifier
    let events = EventQueue<Event>()
    let stopRequested = Atomic<Bool>(false)
    /// `worker.shutdown_grace` in microseconds, readable from the signal thread while a reload changes it.
    let shutdownGraceMicroseconds: Atomic<Int64>
    let pool: ConnectionPool
    var scheduler: Scheduler
    /// Low-footprint mode: idle memory was handed back since the last run or reload.
    var idleMemoryReleased = false
    /// A connection has worked before: a later one must catch up on NOTIFYs it missed.
    var connectedBefore = false
    /// While caretaker's schema is incomplete: what is missing, as last logged.
    var schemaWait: String?
    var clock = ClockEstimate(databaseTime: Date(timeIntervalSince1970: 0))
    var lastWatchdog = ContinuousClock.now

    public init(configurationPath: String, lowFootprint: Bool, configuration: Configuration, logger: Logger) throws {
        self.configurationPath = configurationPath
        self.lowFootprintFlag = lowFootprint
        self.lowFootprint = configuration.worker.lowFootprint
        self.configuration = configuration
        self.logger = logger
        self.notifier = SystemdNotifier()
        self.shutdownGraceMicroseconds = Atomic(configuration.worker.shutdownGrace.microseconds)
        self.monitor = try Monitor(configuration: configuration, isDaemon: true, logger: logger)
        self.monitoringPlan = MonitoringPlan(
            enabled: monitor.refreshesOnOwnConnection, interval: Monitor.refreshInterval, now: .now)
        self.runner = JobRunner(
            configuration: configuration,
            mail: try MailSetup.transport(for: configuration.jobs.filter(\.enabled), configuration: configuration),
            logger: logger, observer: monitor)
        self.pool = ConnectionPool(
            lowFootprint: configuration.worker.lowFootprint, logger: logger,
            connector: try DatabaseConnector(options: configuration.database))
        self.scheduler = Scheduler(
            jobs: [], maxConcurrentJobs: 1, deadlineChecks: false, now: Date(timeIntervalSince1970: 0))
    }

    /// Runs until SIGTERM or SIGINT; returns the exit status (0 after a clean shutdown).
    public func run() -> ExitStatus {
        installSignalHandlers()
        logger.info(
            "starting",
            metadata: [
                "version": "\(caretakerVersion)", "config": "\(configurationPath)",
                "low_footprint": "\(lowFootprint)", "max_concurrent_jobs": "\(configuration.worker.maxConcurrentJobs)",
            ])
        monitor.start()
        guard waitForDatabase() else { return shutdown() }
        if refusesSharedSessions() { return .configuration }
        startScheduling()
        notifier.ready(status: statusLine())
        logger.info(
            "ready", metadata: ["jobs": "\(configuration.jobs.filter(\.enabled).map(\.name).joined(separator: ","))"])
        while !stopRequested.load(ordering: .relaxed) {
            // Normal mode keeps its LISTEN connection open, reconnecting as the backoff allows.
            if !lowFootprint { _ = ensureControl() }
            dispatchDueWork()
            // A NOTIFY that libpq read along with a query's result waits in its buffer,
            // where poll(2) cannot see it: take it before sleeping, and act on it now.
            if drainNotifications() { continue }
            releaseIdleConnectionIfFar()
            // The release goes last before poll(2): whatever code runs after it maps its pages back.
            waitForEvents(timeout: timeUntilNextWake(), beforeSleeping: releaseIdleMemoryIfFar)
        }
        return shutdown()
    }

    /// Start-up: connects (retrying with backoff, logging each attempt) until the
    /// database answers and caretaker's schema is there. False on shutdown.
    private func waitForDatabase() -> Bool {
        while !stopRequested.load(ordering: .relaxed) {
            if ensureControl() != nil { return true }
            waitForEvents(timeout: Self.earliest(pool.timeUntilReconnectAttempt, timeUntilWatchdogPing()))
        }
        return false
    }

    /// Sleeps until the timeout, an event, a NOTIFY, a scrape or the next monitoring
    /// refresh; handles what arrived, starts the monitoring work due and feeds the watchdog.
    private func waitForEvents(timeout: Duration?, beforeSleeping: () -> Void = {}) {
        let sockets = [pool.listenSocket, scraping ? nil : monitor.listenerDescriptor].compactMap { $0 }
        events.wait(
            timeout: Self.earliest(timeout, timeUntilMonitoring()), sockets: sockets, beforeSleeping: beforeSleeping
        ).forEach(handle)
        drainNotifications()
        dispatchMonitoring()
        feedWatchdog()
    }

    // MARK: Events

    func handle(_ event: Event) {
        switch event {
        case .signal(SIGHUP):
            reload()
        case .signal(let number):
            logger.info("shutdown requested", metadata: ["signal": "\(number == SIGTERM ? "SIGTERM" : "SIGINT")"])
            stopRequested.store(true, ordering: .relaxed)
        case .finished(let request, let outcome, let connection):
            finished(request, outcome: outcome, connection: connection)
            // A recorded run's figures should show now (the runner counted them already).
            if case .success(.finished) = outcome, !request.dryRun { monitoringPlan.runEnded(now: .now) }
        case .monitoringRefreshed:
            monitoringPlan.refreshEnded(now: .now)
        case .scrapeAnswered:
            scraping = false
            // Answering mapped code back in: low-footprint mode hands it back before sleeping again.
            idleMemoryReleased = false
        }
    }

    /// The signals the daemon answers, taken by a thread of its own with `sigwait`.
    private static let handledSignals = [SIGTERM, SIGINT, SIGHUP]

    /// Blocks the handled signals in this thread (every thread started later inherits
    /// the mask, so none of them is interrupted) and starts one plain thread that waits
    /// for them. Not Dispatch's signal sources: they run libdispatch's event thread,
    /// which asks for a nice below 0 when it starts, and a service without
    /// CAP_SYS_NICE is refused, with a "Failed to set thread priority" line in the journal.
    private func installSignalHandlers() {
        var signals = sigset_t()
        sigemptyset(&signals)
        for number in Self.handledSignals { sigaddset(&signals, number) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        let waited = signals
        OSThread.start(name: "signals", stackSize: 64 * 1024) { [weak self] in
            var signals = waited
            while true {
                var number: Int32 = 0
                guard sigwait(&signals, &number) == 0 else { continue }
                guard let self else { return }
                self.signalled(number)
            }
        }
    }

    /// Runs on the signal thread, so the shutdown deadline is armed even while the scheduler thread is busy.
    private func signalled(_ number: Int32) {
        if number != SIGHUP && !stopRequested.exchange(true, ordering: .relaxed) {
            armShutdownDeadline()
        }
        events.post(.signal(number))
    }

    /// The process exits by `shutdown_grace` in any case. Running statements are
    /// cancelled a little before (a tenth of the grace, at most 2 s), so their runs
    /// can still be marked `interrupted` in time; a run that cannot be is found by
    /// the next instance, because its advisory lock goes with the connection. A plain
    /// thread that sleeps keeps the time, not a Dispatch timer (see `installSignalHandlers`).
    private func armShutdownDeadline() {
        let grace = Duration.microseconds(shutdownGraceMicroseconds.load(ordering: .relaxed))
        let cancelAt = grace - min(grace / 10, .seconds(2))
        OSThread.start(name: "shutdown-grace", stackSize: 64 * 1024) { [weak self] in
            OSThread.sleep(for: cancelAt)
            if let self {
                let running = self.pool.runningConnections
                if running > 0 {
                    // Logged first: once cancelled, the runs end and the process may exit at once.
                    self.logger.warning(
                        "shutdown grace running out: cancelling running statements", metadata: ["runs": "\(running)"])
                    self.pool.cancelBusy()
                }
            }
            OSThread.sleep(for: grace - cancelAt)
            self?.logger.error(
                "runs did not stop within shutdown_grace; exiting (the next instance marks them interrupted)")
            exit(0)
        }
    }

    // MARK: Shutdown

    /// Starts nothing new and waits for running jobs, which stop between batches
    /// and mark their runs `interrupted` (the deadline armed by the signal bounds the wait).
    private func shutdown() -> ExitStatus {
        notifier.stopping()
        stopRequested.store(true, ordering: .relaxed)
        if scheduler.runningCount > 0 {
            logger.info(
                "waiting for running jobs to stop between batches", metadata: ["runs": "\(scheduler.runningCount)"])
        }
        while scheduler.runningCount > 0 {
            events.wait(timeout: notifier.watchdogInterval).forEach(handle)
            feedWatchdog()
        }
        waitForMonitoringWork()
        // Slots that came due while low-footprint mode's only connection was busy.
        if scheduler.hasSkipsToRecord, pool.control != nil {
            carryOut(scheduler.dispatch(now: clock.now, freePlaces: 0, canRecord: true, stopping: true))
        }
        pool.dropAll()
        monitor.stop()
        logger.info("stopped")
        return .ok
    }

    // MARK: Reload

    /// SIGHUP: reads `jobs.toml` again; an invalid file leaves everything as it was.
    ///
    /// `low_footprint` is not reloaded, as a whole: the file is read as if it had the
    /// running mode's value, so the mode's defaults (batch size, pause, bcrypt cost,
    /// one job at a time) stay those of the running mode too, and the log says so.
    private func reload() {
        let fresh: Configuration
        let freshConnector: DatabaseConnector
        let mail: (any MailTransport)?
        let ignoredLowFootprint: Bool
        do {
            (fresh, ignoredLowFootprint) = try Self.loadForReload(
                path: configurationPath, runningLowFootprint: lowFootprint,
                lowFootprintFlag: lowFootprintFlag)
            freshConnector = try DatabaseConnector(options: fresh.database)
            mail = try MailSetup.transport(for: fresh.jobs.filter(\.enabled), configuration: fresh)
        } catch {
            logger.error(
                "configuration reload failed; keeping the previous configuration",
                metadata: ["config": "\(configurationPath)", "error": "\(error)"])
            return
        }
        if ignoredLowFootprint {
            logger.warning(
                """
                low_footprint changed in the configuration: not applied until the next start; \
                until then this instance keeps low_footprint = \(lowFootprint) and that mode's defaults
                """, metadata: ["config": "\(configurationPath)"])
        }
        let databaseChanged =
            fresh.database.url != configuration.database.url
            || fresh.database.passwordFile != configuration.database.passwordFile
        configuration = fresh
        pool.connector = freshConnector
        runner = JobRunner(configuration: configuration, mail: mail, logger: logger, observer: monitor)
        monitor.reload(configuration, databaseChanged: databaseChanged)
        idleMemoryReleased = false
        shutdownGraceMicroseconds.store(fresh.worker.shutdownGrace.microseconds, ordering: .relaxed)
        carryOut(
            scheduler.reload(
                jobs: configuration.jobs, maxConcurrentJobs: configuration.worker.maxConcurrentJobs, now: clock.now))
        if databaseChanged {
            // Connections to the old database would keep serving it: connect afresh.
            pool.retireAll()
        } else if let control = pool.control, !lowFootprint {
            do { try listen(on: control) } catch { pool.controlFailed(error) }
        }
        logger.info("configuration reloaded", metadata: ["config": "\(configurationPath)"])
        notifier.status(statusLine())
    }

    /// Reads the configuration for a reload, with `low_footprint` held at the running
    /// mode's value (the flag, when given, wins as at start-up). Also says whether the
    /// file asks for a different mode, which then waits for the next start.
    static func loadForReload(
        path: String, runningLowFootprint: Bool,
        lowFootprintFlag: Bool
    ) throws(ConfigurationError) -> (Configuration, ignoredLowFootprint: Bool) {
        let asWritten = try ConfigurationLoader.load(path: path, lowFootprint: lowFootprintFlag ? true : nil)
        guard asWritten.worker.lowFootprint != runningLowFootprint else { return (asWritten, false) }
        return (try ConfigurationLoader.load(path: path, lowFootprint: runningLowFootprint), true)
    }

    func statusLine() -> String {
        let enabled = configuration.jobs.filter(\.enabled).count
        return "\(enabled) jobs enabled, \(scheduler.runningCount) running\(lowFootprint ? ", low-footprint" : "")"
    }

    /// Fed from the loop itself: a stuck scheduler stops feeding and systemd restarts it.
    func feedWatchdog() {
        guard let interval = notifier.watchdogInterval, ContinuousClock.now - lastWatchdog >= interval else { return }
        notifier.watchdog()
        lastWatchdog = ContinuousClock.now
    }
}
