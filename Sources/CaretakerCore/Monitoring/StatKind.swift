/// What a counter of `job_runs.stats` measures, read from its name, so that the metrics
/// sum only what adds up: plain counts (`posts_deleted`, `batches`) into
/// `caretaker_job_stat_total`, bytes (`wal_bytes`) into `caretaker_job_stat_bytes_total`,
/// time spent (`throttled_ms`) into `caretaker_job_stat_seconds_total`. A figure of one
/// run (a percentile, a maximum, a rate: `batch_p99_ms`, `batch_max_ms`,
/// `wal_rate_lowest_kbps`) means nothing summed over runs: it stays in `job_runs.stats`
/// (`caretaker history`) and is not exported.
enum StatKind: Equatable {
    case count
    case bytes
    /// Time spent, in milliseconds; exported in seconds, named without `_ms`.
    case milliseconds
    case figure

    init(_ name: String) {
        if ["_p50_ms", "_p90_ms", "_p99_ms", "_max_ms", "_min_ms", "_kbps"].contains(where: name.hasSuffix) {
            self = .figure
        } else if name.hasSuffix("_bytes") {
            self = .bytes
        } else if name.hasSuffix("_ms") {
            self = .milliseconds
        } else {
            self = .count
        }
    }
}
