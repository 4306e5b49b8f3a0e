import Foundation
import Logging
import Postgres
import Synchronization

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
/// clock, carried forward by `ClockEstimate` between readings. In
/// low-footprint mode there is a single connection, jobs run inline one at a
/// time, and the connection is closed while the next run is far away.
public final class Daemon: @unchecked Sendable {
    enum Event: Sendable {
        case signal(Int32)
        case finished(request: JobRunner.Request, outcome: Result<JobRunner.Outcome, PostgresError>, connection: Connection?)
    }

    let configurationPath: String
    let lowFootprintFlag: Bool
    var configuration: Configuration
    var runner: JobRunner
    let logger: Logger
    let notifier: SystemdNotifier
    let events = EventQueue<Event>()
    let stopRequested = Atomic<Bool>(false)
    /// Connections running a job right now, to cancel when the shutdown grace runs out.
    let busyConnections = Mutex<[ObjectIdentifier: Connection]>([:])

    var control: Connection?
    var idleConnections: [Connection] = []
    var clock = ClockEstimate(databaseTime: Date(timeIntervalSince1970: 0))
    var states: [String: JobState] = [:]
    var runningCount = 0
    var lastWatchdog = ContinuousClock.now
    private var signalSources: [any DispatchSourceSignal] = []

    public init(configurationPath: String, lowFootprint: Bool, configuration: Configuration, logger: Logger) throws {
        self.configurationPath = configurationPath
        self.lowFootprintFlag = lowFootprint
        self.configuration = configuration
        self.logger = logger
        self.notifier = SystemdNotifier()
        self.runner = JobRunner(configuration: configuration,
                                mail: try MailSetup.transport(for: configuration.jobs.filter(\.enabled), configuration: configuration),
                                logger: logger)
    }

    var lowFootprint: Bool { configuration.worker.lowFootprint }

    /// Runs until SIGTERM or SIGINT; returns the exit status (0 after a clean shutdown).
    public func run() -> ExitStatus {
        installSignalHandlers()
        logger.info("starting", metadata: [
            "version": "\(caretakerVersion)", "config": "\(configurationPath)",
            "low_footprint": "\(lowFootprint)", "max_concurrent_jobs": "\(configuration.worker.maxConcurrentJobs)"])
        guard connectControl(firstTime: true) else { return shutdown() }
        planInitialRuns()
        notifier.ready(status: statusLine())
        logger.info("ready", metadata: ["jobs": "\(configuration.jobs.filter(\.enabled).map(\.name).joined(separator: ","))"])
        while !stopRequested.load(ordering: .relaxed) {
            dispatchDueRuns()
            releaseIdleConnectionIfFar()
            let wake = events.wait(timeout: timeUntilNextWake(), socket: listenSocket)
            wake.events.forEach(handle)
            if wake.socketReadable { readNotifications() }
            feedWatchdog()
        }
        return shutdown()
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

    /// Runs on a dispatch thread, so it works while the scheduler thread is busy in a job.
    private func signalled(_ number: Int32) {
        if number != SIGHUP && !stopRequested.exchange(true, ordering: .relaxed) {
            armShutdownDeadline()
        }
        events.post(.signal(number))
    }

    /// After `shutdown_grace`, cancel running statements; a little later, exit regardless.
    private func armShutdownDeadline() {
        let grace = configuration.worker.shutdownGrace
        DispatchQueue.global().asyncAfter(deadline: .now() + grace.seconds) { [weak self] in
            guard let self else { return }
            let busy = self.busyConnections.withLock { Array($0.values) }
            if !busy.isEmpty {
                self.logger.warning("shutdown grace over: cancelling running statements", metadata: ["runs": "\(busy.count)"])
                busy.forEach { $0.cancel() }
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + grace.seconds + 3) { [weak self] in
            self?.logger.error("runs did not stop after cancellation; exiting (their runs are marked interrupted by the next instance)")
            exit(0)
        }
    }

    // MARK: Shutdown

    private func shutdown() -> ExitStatus {
        notifier.stopping()
        stopRequested.store(true, ordering: .relaxed)
        if runningCount > 0 {
            logger.info("waiting for running jobs to stop between batches", metadata: ["runs": "\(runningCount)"])
        }
        while runningCount > 0 {
            events.wait(timeout: .seconds(1)).events.forEach(handle)
        }
        idleConnections.removeAll()
        control = nil
        logger.info("stopped")
        return .ok
    }

    // MARK: Reload

    private func reload() {
        do {
            let fresh = try ConfigurationLoader.load(path: configurationPath, lowFootprint: lowFootprintFlag ? true : nil)
            let mail = try MailSetup.transport(for: fresh.jobs.filter(\.enabled), configuration: fresh)
            configuration = fresh
            runner = JobRunner(configuration: fresh, mail: mail, logger: logger)
            let now = clock.now
            for job in fresh.jobs {
                states[job.name, default: JobState()].nextSlot = job.enabled ? job.schedule.nextDate(after: now) : nil
            }
            logger.info("configuration reloaded", metadata: ["config": "\(configurationPath)"])
            notifier.status(statusLine())
        } catch {
            logger.error("configuration reload failed; keeping the previous configuration",
                         metadata: ["config": "\(configurationPath)", "error": "\(error)"])
        }
    }

    func statusLine() -> String {
        let enabled = configuration.jobs.filter(\.enabled).count
        return "\(enabled) jobs enabled, \(runningCount) running\(lowFootprint ? ", low-footprint" : "")"
    }

    private func feedWatchdog() {
        guard let interval = notifier.watchdogInterval, ContinuousClock.now - lastWatchdog >= interval else { return }
        // Fed from the loop itself: a stuck scheduler stops feeding and systemd restarts it.
        notifier.watchdog()
        lastWatchdog = ContinuousClock.now
    }
}
