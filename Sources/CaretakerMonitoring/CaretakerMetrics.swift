import CaretakerDatabase
import CaretakerJobs
import Prometheus
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The series `caretaker run` exposes, in swift-prometheus's registry (which
/// also writes the text format).
///
/// Counters of runs, durations and stats count the runs of this process (the
/// exporter convention: per instance, from zero at start; sum them across
/// instances). Timestamps and health come from the shared history, so every
/// instance shows the same values (take `max` across instances). Skipped slots
/// are counted from the shared history as they are recorded after this
/// process started, by whichever instance recorded them.
public final class CaretakerMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    /// Upper bounds of the duration histogram, in seconds: from a quick sweep to `max_runtime`'s default and past it.
    static let durationBuckets: [Double] = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900]

    /// Every series name, with its help text.
    enum Series {
        private static func name(
            _ subsystem: String?, _ metric: String, _ unit: String, _ help: String
        ) -> MetricNameDescriptor {
            MetricNameDescriptor(
                namespace: "caretaker", subsystem: subsystem, metricName: metric, unitName: unit, helpText: help)
        }
        static var buildInfo: MetricNameDescriptor {
            name(nil, "build", "info", "Always 1; the version label says which caretaker runs.")
        }
        static var databaseUp: MetricNameDescriptor {
            name(nil, "database", "up", "1 when the last reading of the database succeeded, else 0.")
        }
        static var runsTotal: MetricNameDescriptor {
            name("job", "runs", "total", "Runs of the job finished by this process, by status.")
        }
        static var duration: MetricNameDescriptor {
            name("job", "duration", "seconds", "How long the job's runs in this process took.")
        }
        static var statTotal: MetricNameDescriptor {
            name(
                "job", "stat", "total",
                "Sum of a job's run counts (job_runs.stats: rows, batches, deleted, sent...) over the runs of this process."
            )
        }
        static var statBytes: MetricNameDescriptor {
            name(
                "job", "stat_bytes", "total",
                "Sum of a job's byte counters (job_runs.stats, e.g. wal_bytes) over the runs of this process.")
        }
        static var statSeconds: MetricNameDescriptor {
            name(
                "job", "stat_seconds", "total",
                "Time a job's runs of this process spent waiting or resting, by cause (job_runs.stats NAME_ms).")
        }
        static var skippedSlots: MetricNameDescriptor {
            name(
                "job", "skipped_slots", "total",
                "Scheduled slots recorded skipped (not run) since this process started, by reason (shared history).")
        }
        static var healthy: MetricNameDescriptor {
            name("job", "healthy", "", "1 when the job is healthy by the rule of `caretaker check`, else 0.")
        }
        static var lastSuccess: MetricNameDescriptor {
            name(
                "job", "last_success_timestamp", "seconds",
                "When the job last finished successfully (shared history, database clock).")
        }
        static var lastRun: MetricNameDescriptor {
            name(
                "job", "last_run_timestamp", "seconds",
                "When a run of the job last finished, whatever its status (shared history, database clock).")
        }
    }

    private struct JobGauges {
        var healthy: Gauge
        var lastSuccess: Gauge?
        var lastRun: Gauge?
    }
    private let gauges = Mutex<[String: JobGauges]>([:])
    private let databaseUp: Gauge

    public init(version: String) {
        registry.makeGauge(descriptor: Series.buildInfo, labels: [("version", version)]).set(to: 1)
        databaseUp = registry.makeGauge(descriptor: Series.databaseUp)
    }

    /// Creates the per-job series at zero, so a first failure is an increase Prometheus sees.
    public func declare(jobs: [String]) {
        for job in jobs {
            for status in [RunStatus.succeeded, .failed, .interrupted] { _ = runs(job, status) }
            _ = duration(job)
        }
    }

    /// A finished run of this process. Each counter of `stats` goes to the series of
    /// its kind in `declared` (the job's declarations); one not declared is not exported.
    public func recordRun(
        job: String, status: RunStatus, stats: JobStats, declared: [StatDeclaration], duration seconds: Double
    ) {
        runs(job, status).increment()
        duration(job).record(seconds)
        for counter in stats.counters where counter.value > 0 {
            switch declared.kind(of: counter.name) {
            case .count:
                registry.makeCounter(descriptor: Series.statTotal, labels: [("job", job), ("stat", counter.name)])
                    .increment(by: Int64(counter.value))
            case .bytes:
                registry.makeCounter(descriptor: Series.statBytes, labels: [("job", job), ("stat", counter.name)])
                    .increment(by: Int64(counter.value))
            case .milliseconds:
                registry.makeCounter(
                    descriptor: Series.statSeconds, labels: [("job", job), ("stat", Self.secondsLabel(counter.name))]
                ).increment(by: Double(counter.value) / 1000)
            case .figure, nil:
                break
            }
        }
    }

    /// Skipped slots newly found in the history.
    public func recordSkipped(_ skipped: [HistoryReadings.SkippedSlots]) {
        for entry in skipped where entry.slots > 0 {
            registry.makeCounter(
                descriptor: Series.skippedSlots,
                labels: [("job", entry.job), ("reason", Self.skipReasonLabel(entry.reason))]
            )
            .increment(by: Int64(entry.slots))
        }
    }

    /// The shared history's view; jobs no longer enabled lose their gauges.
    public func update(_ readings: HistoryReadings) {
        databaseUp.set(to: 1)
        gauges.withLock { gauges in
            let current = Set(readings.jobs.map(\.name))
            for (job, series) in gauges where !current.contains(job) {
                registry.unregisterGauge(series.healthy)
                series.lastSuccess.map(registry.unregisterGauge)
                series.lastRun.map(registry.unregisterGauge)
                gauges[job] = nil
            }
            for job in readings.jobs {
                var series =
                    gauges[job.name]
                    ?? JobGauges(
                        healthy: registry.makeGauge(
                            descriptor: Series.healthy, labels: [("job", job.name)]))
                series.healthy.set(to: job.health.healthy ? 1 : 0)
                if let lastSuccess = job.lastSuccess {
                    series.lastSuccess =
                        series.lastSuccess
                        ?? registry.makeGauge(
                            descriptor: Series.lastSuccess, labels: [("job", job.name)])
                    series.lastSuccess?.set(to: lastSuccess)
                }
                if let lastRun = job.lastRun {
                    series.lastRun =
                        series.lastRun
                        ?? registry.makeGauge(
                            descriptor: Series.lastRun, labels: [("job", job.name)])
                    series.lastRun?.set(to: lastRun)
                }
                gauges[job.name] = series
            }
        }
    }

    public func databaseUnavailable() {
        databaseUp.set(to: 0)
    }

    /// The text exposition format (version 0.0.4).
    public func exposition() -> [UInt8] {
        registry.emitToBuffer()
    }

    private func runs(_ job: String, _ status: RunStatus) -> Counter {
        registry.makeCounter(descriptor: Series.runsTotal, labels: [("job", job), ("status", status.rawValue)])
    }

    private func duration(_ job: String) -> ValueHistogram {
        registry.makeValueHistogram(descriptor: Series.duration, labels: [("job", job)], buckets: Self.durationBuckets)
    }

    /// The `stat` label of a time counter: its name without `_ms` (`throttled_ms` → `throttled`).
    static func secondsLabel(_ name: String) -> String {
        name.hasSuffix("_ms") ? String(name.dropLast(3)) : name
    }

    /// A short label for the reason text stored in `job_runs.error` of a skipped row.
    static func skipReasonLabel(_ text: String) -> String {
        if text.contains("no worker ran") { return "missed_while_no_worker_ran" }
        if text.contains("previous run") { return "previous_run_still_going" }
        if text.contains("free place") { return "no_free_place" }
        return "other"
    }
}
