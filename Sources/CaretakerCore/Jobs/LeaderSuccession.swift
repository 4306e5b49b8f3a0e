import Postgres

/// `leader-succession`: keeps every active community led.
struct LeaderSuccession: Job {
    let settings: LeaderSuccessionSettings

    func run(_ context: JobContext) throws -> JobStats {
        throw JobNotImplemented(job: context.job.name)
    }
}
