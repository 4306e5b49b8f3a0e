import CaretakerConfig

/// Since when this process has had each job enabled in its configuration: from
/// its start, or from the reload that added or enabled the job.
///
/// `JobHealth` counts a never-succeeded job's grace from it while the history
/// knows nothing of the job yet (no claimed slot, no run), so a job added to
/// `jobs.toml` and reloaded is not "never succeeded" before its first slot comes.
public struct JobWatch: Sendable {
    private var since: [String: ContinuousClock.Instant] = [:]

    public init(_ configuration: Configuration, now: ContinuousClock.Instant = .now) {
        reload(configuration, now: now)
    }

    /// Keeps the start of a job still enabled, starts one added or enabled now,
    /// and forgets one removed or disabled (enabled again later, it starts anew).
    public mutating func reload(_ configuration: Configuration, now: ContinuousClock.Instant = .now) {
        since = Dictionary(
            configuration.jobs.filter(\.enabled).map { ($0.name, since[$0.name] ?? now) }, uniquingKeysWith: min)
    }

    /// How long this process has watched each enabled job, at `now`.
    public func watchedFor(at now: ContinuousClock.Instant = .now) -> [String: Duration] {
        since.mapValues { now - $0 }
    }
}
