#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Postgres
import Synchronization
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `caretaker run`: the long-running scheduler (SPEC §4).
///
/// One scheduler thread owns all state. It sleeps in `poll(2)` until the
/// earliest due time, a signal, a finished run or a NOTIFY, then starts due
/// runs on threads of their own (libpq blocks; nothing here touches Swift's
/// cooperative pool). Every decision about time is taken on the database
/// clock, carried forward by `ClockEstimate` between readings, and a slot is
/// only claimed once the database agrees it is due. Nothing on the scheduler
/// thread waits for the database for longer than one statement: while it is
/// unreachable, reconnection attempts are planned like any other wake-up, so
/// signals are handled and the watchdog is fed throughout. In low-footprint
/// mode there is a single connection, lent to the one running job, and closed
/// while the next run is far away.
public final class Daemon: @unchecked Sendable {
    enum Event: Sendable {
        case signal(Int32)
        case finished(request: JobRunner.Request, result: RunResult, connection: Connection?)
    }

    /// How a run on a job thread ended, as the scheduler thread learns it.
    enum RunResult: Sendable {
        case outcome(JobRunner.Outcome)
        /// The slot was not due yet on the database clock; nothing was recorded.
        case slotNotDue
        /// The database failed under the run (connection lost, bookkeeping missing).
        case databaseError(PostgresError)
    }

    let configurationPath: String
    let lowFootprintFlag: Bool
    /// Fixed at start-up: the mode decides how connections are held, so a reload cannot switch it.
    let lowFootprint: Bool
    var configuration: Configuration
    var runner: JobRunner
    let logger: Logger
    let notifier: SystemdNotifier
    let events = EventQueue<Event>()
    let stopRequested = Atomic<Bool>(false)
    /// `worker.shutdown_grace` in microseconds, readable from the signal thread while a reload changes it.
    let shutdownGraceMicroseconds: Atomic<Int64>
    /// Connections running a job right now, to cancel when the shutdown grace runs out.
    let busyConnections = Mutex<[ObjectIdentifier: Connection]>([:])

    /// The scheduler's connection: clock readings, claims of skipped slots, LISTEN.
    var control: Connection?
    /// Low-footprint mode: the single connection is running a job (it is not in `control` meanwhile).
    var controlLent = false
    /// Low-footprint mode: idle memory was handed back since the last run or reload.
    var idleMemoryReleased = false
    /// A connection has worked before: a later one must catch up on NOTIFYs it missed.
    var connectedBefore = false
    /// While the database is unreachable: when to try again, and how long the next wait is.
    var reconnect: ReconnectBackoff?
    var idleConnections: [Connection] = []
    /// Connections that were running a job when the database settings changed
    /// (SIGHUP): they serve the old database, so they are closed when their run ends.
    var retiredConnections: Set<ObjectIdentifier> = []
    var clock = ClockEstimate(databaseTime: Date(timeIntervalSince1970: 0))
    var states: [String: JobState] = [:]
    /// Slots to record `skipped` (their job was running, or their run found no free
    /// place): recorded as soon as a connection is free and the slot is due on the
    /// database clock (low-footprint mode lends its only connection to runs).
    var pendingSkips: [PendingSkip] = []
    typealias PendingSkip = (job: JobConfiguration, slot: Date, reason: JobRunner.SkipReason)
    var runningCount = 0
    var lastWatchdog = ContinuousClock.now
    private var signalSources: [any DispatchSourceSignal] = []

    public init(configurationPath: String, lowFootprint: Bool, configuration: Configuration, logger: Logger) throws {
        self.configurationPath = configurationPath
        self.lowFootprintFlag = lowFootprint
        self.lowFootprint = configuration.worker.lowFootprint
        self.configuration = configuration
        self.logger = logger
        self.notifier = SystemdNotifier()
        self.shutdownGraceMicroseconds = Atomic(configuration.worker.shutdownGrace.microseconds)
        self.runner = JobRunner(configuration: configuration,
                                mail: try MailSetup.transport(for: configuration.jobs.filter(\.enabled), configuration: configuration),
                                logger: logger)
    }

    /// Runs until SIGTERM or SIGINT; returns the exit status (0 after a clean shutdown).
    public func run() -> ExitStatus {
        installSignalHandlers()
        logger.info("starting", metadata: [
            "version": "\(caretakerVersion)", "config": "\(configurationPath)",
            "low_footprint": "\(lowFootprint)", "max_concurrent_jobs": "\(configuration.worker.maxConcurrentJobs)"])
        guard waitForDatabase() else { return shutdown() }
        if refusesSharedSessions() { return .configuration }
        planInitialRuns()
        notifier.ready(status: statusLine())
        logger.info("ready", metadata: ["jobs": "\(enabledJobs.map(\.name).joined(separator: ","))"])
        while !stopRequested.load(ordering: .relaxed) {
            // Normal mode keeps its LISTEN connection open, reconnecting as the backoff allows.
            if !lowFootprint { _ = ensureControl() }
            dispatchDueRuns()
            releaseIdleConnectionIfFar()
            let timeout = timeUntilNextWake()
            // Last before sleeping: whatever code runs after it maps its pages back.
            releaseIdleMemoryIfFar()
            waitForEvents(timeout: timeout)
        }
        return shutdown()
    }

    /// Start-up: connects (retrying with backoff, logging each attempt) until the
    /// database answers and caretaker's schema is there. False on shutdown.
    private func waitForDatabase() -> Bool {
        while !stopRequested.load(ordering: .relaxed) {
            if ensureControl() != nil { return true }
            waitForEvents(timeout: Self.earliest(timeUntilReconnectAttempt(), timeUntilWatchdogPing()))
        }
        return false
    }

    /// Sleeps until the timeout, an event or a NOTIFY; handles what arrived and feeds the watchdog.
    private func waitForEvents(timeout: Duration?) {
        let wake = events.wait(timeout: timeout, socket: listenSocket)
        wake.events.forEach(handle)
        // Also after a plain timeout: a NOTIFY read along with a query's result waits in libpq's buffer.
        readNotifications()
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
        case .finished(let request, let result, let connection):
            finished(request, result: result, connection: connection)
        }
    }

    private func installSignalHandlers() {
        for number in [SIGTERM, SIGINT, SIGHUP] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.signalled(number) }
            source.resume()
            signalSources.append(source)
        }
    }

    /// Runs on a dispatch thread, so the shutdown deadline is armed even while the scheduler thread is busy.
    private func signalled(_ number: Int32) {
        if number != SIGHUP && !stopRequested.exchange(true, ordering: .relaxed) {
            armShutdownDeadline()
        }
        events.post(.signal(number))
    }

    /// The process exits by `shutdown_grace` in any case. Running statements are
    /// cancelled a little before (a tenth of the grace, at most 2 s), so their runs
    /// can still be marked `interrupted` in time; a run that cannot be is found by
    /// the next instance, because its advisory lock goes with the connection.
    private func armShutdownDeadline() {
        let grace = Duration.microseconds(shutdownGraceMicroseconds.load(ordering: .relaxed))
        let cancelAt = grace - min(grace / 10, .seconds(2))
        DispatchQueue.global().asyncAfter(deadline: .now() + cancelAt.seconds) { [weak self] in
            guard let self else { return }
            let busy = self.busyConnections.withLock { Array($0.values) }
            if !busy.isEmpty {
                self.logger.warning("shutdown grace running out: cancelling running statements", metadata: ["runs": "\(busy.count)"])
                busy.forEach { $0.cancel() }
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + grace.seconds) { [weak self] in
            self?.logger.error("runs did not stop within shutdown_grace; exiting (the next instance marks them interrupted)")
            exit(0)
        }
    }

    // MARK: Shutdown

    /// Starts nothing new and waits for running jobs, which stop between batches
    /// and mark their runs `interrupted` (the deadline armed by the signal bounds the wait).
    private func shutdown() -> ExitStatus {
        notifier.stopping()
        stopRequested.store(true, ordering: .relaxed)
        if runningCount > 0 {
            logger.info("waiting for running jobs to stop between batches", metadata: ["runs": "\(runningCount)"])
        }
        while runningCount > 0 {
            events.wait(timeout: notifier.watchdogInterval).events.forEach(handle)
            feedWatchdog()
        }
        // Slots that came due while low-footprint mode's only connection was busy.
        if !pendingSkips.isEmpty, let control { recordPendingSkips(on: control) }
        idleConnections.removeAll()
        control = nil
        logger.info("stopped")
        return .ok
    }

    // MARK: Reload

    /// SIGHUP: reads `jobs.toml` again; an invalid file leaves everything as it was.
    private func reload() {
        let fresh: Configuration
        let mail: (any MailTransport)?
        do {
            fresh = try ConfigurationLoader.load(path: configurationPath, lowFootprint: lowFootprintFlag ? true : nil)
            mail = try MailSetup.transport(for: fresh.jobs.filter(\.enabled), configuration: fresh)
        } catch {
            logger.error("configuration reload failed; keeping the previous configuration",
                         metadata: ["config": "\(configurationPath)", "error": "\(error)"])
            return
        }
        if fresh.worker.lowFootprint != lowFootprint {
            logger.warning("low_footprint changes take effect at the next start", metadata: ["config": "\(configurationPath)"])
        }
        let databaseChanged = fresh.database.url != configuration.database.url
            || fresh.database.passwordFile != configuration.database.passwordFile
        let previous = configuration
        configuration = fresh
        configuration.worker.lowFootprint = lowFootprint
        runner = JobRunner(configuration: configuration, mail: mail, logger: logger)
        idleMemoryReleased = false
        shutdownGraceMicroseconds.store(fresh.worker.shutdownGrace.microseconds, ordering: .relaxed)
        replanAfterReload(previous: previous)
        if databaseChanged {
            // Connections to the old database would keep serving it: connect afresh.
            dropConnections()
            retiredConnections.formUnion(busyConnections.withLock { Set($0.keys) })
        } else if let control, !lowFootprint {
            do { try listen(on: control) } catch { controlLost(error) }
        }
        logger.info("configuration reloaded", metadata: ["config": "\(configurationPath)"])
        notifier.status(statusLine())
    }

    func statusLine() -> String {
        let enabled = configuration.jobs.filter(\.enabled).count
        return "\(enabled) jobs enabled, \(runningCount) running\(lowFootprint ? ", low-footprint" : "")"
    }

    /// Fed from the loop itself: a stuck scheduler stops feeding and systemd restarts it.
    func feedWatchdog() {
        guard let interval = notifier.watchdogInterval, ContinuousClock.now - lastWatchdog >= interval else { return }
        notifier.watchdog()
        lastWatchdog = ContinuousClock.now
    }
}
