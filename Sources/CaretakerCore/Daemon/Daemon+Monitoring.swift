import CaretakerSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Daemon {
    /// Starts the monitoring work that is due, each on a short-lived thread whose end
    /// comes back as an event: a refresh (`monitoringPlan`), and the answer to a
    /// scraper waiting on `[metrics] listen`. Also retries a listener that could not bind.
    func dispatchMonitoring() {
        monitor.retryBindIfDue()
        if monitoringPlan.startRefresh(now: .now) {
            let (monitor, connector, events) = (self.monitor, self.connector, self.events)
            OSThread.start(name: "caretaker/monitor", stackSize: 256 * 1024) {
                monitor.refreshOnOwnConnection(connector: connector)
                events.post(.monitoringRefreshed)
            }
        }
        if !scraping, let client = monitor.acceptScrape() {
            scraping = true
            let (monitor, events) = (self.monitor, self.events)
            OSThread.start(name: "caretaker/metrics", stackSize: 256 * 1024) {
                monitor.answerScrape(client)
                events.post(.scrapeAnswered)
            }
        }
    }

    /// How long until monitoring has something to start: the next refresh, or the next
    /// attempt to bind the listener; nil when nothing is planned.
    func timeUntilMonitoring() -> Duration? {
        Self.earliest(monitoringPlan.timeUntilRefresh(now: .now), monitor.timeUntilBindAttempt)
    }

    /// At shutdown: waits (up to `monitoringShutdownWait`) for a refresh or a scrape's
    /// answer under way, so that the listener and the connection they use close after them.
    func waitForMonitoringWork() {
        let deadline = ContinuousClock.now + Self.monitoringShutdownWait
        while monitoringPlan.refreshing || scraping {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else {
                logger.warning("shutdown: monitoring work still under way; stopping without it")
                return
            }
            events.wait(timeout: Self.earliest(left, notifier.watchdogInterval)).forEach(handle)
            feedWatchdog()
        }
    }

    /// How long shutdown waits for a refresh (which may be sending an alert mail) or a scrape.
    static let monitoringShutdownWait: Duration = .seconds(5)
}
