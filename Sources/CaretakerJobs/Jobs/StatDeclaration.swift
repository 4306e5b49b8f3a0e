import CaretakerDatabase

/// What a counter of `job_runs.stats` measures, as the job that reports it declares,
/// so that the metrics sum only what adds up: plain counts (`posts_deleted`,
/// `batches`) into `caretaker_job_stat_total`, bytes (`wal_bytes`) into
/// `caretaker_job_stat_bytes_total`, time spent (`throttled_ms`) into
/// `caretaker_job_stat_seconds_total`. A figure of one run (a percentile, a maximum, a
/// rate: `batch_p99_ms`, `batch_max_ms`, `wal_rate_lowest_kbps`) means nothing summed
/// over runs: it stays in `job_runs.stats` (`caretaker history`) and is not exported.
public enum StatKind: Sendable, Equatable {
    case count
    case bytes
    /// Time spent, in milliseconds, named `…_ms`; exported in seconds, named without `_ms`.
    case milliseconds
    case figure
}

/// A counter a job reports in `job_runs.stats`, declared in the job's definition
/// (`JobDefinition.stats`): its name, what it measures, and whether the dashboard's
/// overview charts it. A counter a run reports without a declaration stays in
/// `job_runs.stats` and the log, is not exported, and the runner warns about it.
public struct StatDeclaration: Sendable, Equatable {
    public let name: String
    public let kind: StatKind
    /// The colour the dashboard's overview charts the counter in; nil: not charted.
    public let chart: ChartedCounter.Tone?

    init(_ name: String, _ kind: StatKind, chart: ChartedCounter.Tone? = nil) {
        self.name = name
        self.kind = kind
        self.chart = chart
    }

    /// A count summed over runs (rows, batches, mails); `charted` puts it on the dashboard's overview.
    static func count(_ name: String, charted tone: ChartedCounter.Tone? = nil) -> Self {
        Self(name, .count, chart: tone)
    }
    /// Bytes summed over runs (`wal_bytes`).
    static func bytes(_ name: String) -> Self { Self(name, .bytes) }
    /// Time spent, in milliseconds (`throttled_ms`), summed over runs in seconds.
    static func milliseconds(_ name: String) -> Self { Self(name, .milliseconds) }
    /// A figure of one run (a percentile, a maximum, a rate) that does not add up over runs.
    static func figure(_ name: String) -> Self { Self(name, .figure) }
}

/// The counters the dashboard charts for a job (`StatDeclaration.chart`).
public enum ChartedCounter {
    /// The colour a charted counter gets.
    public enum Tone: Sendable {
        /// The job's main work (blue).
        case work
        /// Work of a second kind beside the main one (purple).
        case secondary
        /// Failures (red).
        case failure
    }
}

extension [StatDeclaration] {
    /// What the counter `name` measures; nil when none of these declares it.
    public func kind(of name: String) -> StatKind? {
        first { $0.name == name }?.kind
    }

    /// The counters of `stats` that none of these declares, in the order reported.
    public func undeclared(in stats: JobStats) -> [String] {
        stats.counters.map(\.name).filter { kind(of: $0) == nil }
    }
}
