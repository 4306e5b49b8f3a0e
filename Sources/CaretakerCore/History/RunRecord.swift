/// One row of `caretaker.job_runs`, as `history` shows it.
public struct RunRecord: Sendable {
    public let id: Int64
    public let job: String
    public let trigger: String
    public let status: String
    public let startedAt: String
    public let finishedAt: String?
    public let durationMilliseconds: Int?
    public let dryRun: Bool
    /// The stats object as stored (JSON text).
    public let stats: String
    public let error: String?
    public let host: String
    public let pid: Int

    /// Filters of `caretaker history`.
    public struct Filter: Sendable {
        public var job: String?
        public var status: String?
        public var limit: Int = 20
        public init(job: String? = nil, status: String? = nil, limit: Int = 20) {
            self.job = job
            self.status = status
            self.limit = limit
        }
    }
}
