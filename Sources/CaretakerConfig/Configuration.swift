import CaretakerSchedule

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Everything `jobs.toml` says, with defaults filled in and validated.
public struct Configuration: Sendable {
    /// The file it was read from (for messages); `(defaults)` when none.
    public var file: String
    public var database: DatabaseOptions
    public var worker: WorkerOptions
    public var mail: MailOptions
    public var metrics = MetricsOptions()
    public var alerts = AlertOptions()
    public var dashboard = DashboardOptions()
    /// Built-in jobs first (always present, maybe disabled), then operator SQL jobs in file order.
    public var jobs: [JobConfiguration]

    public func job(named name: String) -> JobConfiguration? {
        jobs.first { $0.name == name }
    }

    public var jobNames: [String] { jobs.map(\.name) }
}

/// `[metrics]`: Prometheus exposition from `caretaker run`.
public struct MetricsOptions: Sendable, Equatable {
    /// `host:port` serving `GET /metrics` (an IP literal; `[::1]:9187` for IPv6); empty: no listener.
    public var listen: String = ""
    /// A file rewritten atomically after every run (node_exporter's textfile collector); empty: none.
    public var textfile: String = ""
}

/// `[alerts]`: mail when a job becomes unhealthy, and when it recovers.
public struct AlertOptions: Sendable, Equatable {
    /// The recipient; empty: no alerts.
    public var mailTo: String = ""
}

/// `[database]`: what to connect to.
public struct DatabaseOptions: Sendable {
    /// A libpq URI or `key=value` string; empty: libpq defaults and `PG*` variables.
    public var url: String = ""
    /// Read at start-up; never logged.
    public var passwordFile: String = ""
    /// Schema of the app tables. Defaults to `public`.
    public var appSchema: String = "public"
    /// Defaults to `10s`.
    public var connectTimeout: Duration = .seconds(10)
}

/// `[worker]`: how the daemon behaves.
public struct WorkerOptions: Sendable {
    public enum LogFormat: String, Sendable, CaseIterable { case logfmt, json }

    public var timeZone: ZoneInfo = .utc
    /// The name as configured (Foundation reports UTC as "GMT").
    public var timeZoneName: String = "UTC"
    public var lowFootprint: Bool = false
    /// Defaults to `2`; `1` in low-footprint mode.
    public var maxConcurrentJobs: Int = 2
    public var shutdownGrace: Duration = .seconds(20)
    /// Low-footprint mode closes its connection when the next run is further away than this.
    public var idleDisconnect: Duration = .seconds(60)
    /// Pause between batches; `100ms` by default in low-footprint mode.
    public var batchPause: Duration = .zero
    public var logFormat: LogFormat = .logfmt
}

/// `[mail]`: how temporary passwords are delivered.
public struct MailOptions: Sendable {
    public enum Transport: String, Sendable, CaseIterable { case smtp, file }

    public var transport: Transport = .smtp
    public var url: String = "smtp://127.0.0.1:25"
    public var starttls: Bool = false
    public var username: String = ""
    public var passwordFile: String = ""
    /// PEM file of the CA(s) that signed the relay's certificate; empty: the system's CAs.
    public var caFile: String = ""
    public var from: String = "Community <no-reply@example.org>"
    /// For `transport = "file"`.
    public var directory: String = ""
    /// Lets `smtp://` log in without STARTTLS (a relay on loopback); off by default.
    public var allowPlaintextAuth: Bool = false

    /// True when an `smtp://` URL without STARTTLS would carry a login: a
    /// `username`, or a `user@` in the URL.
    var sendsPasswordInClear: Bool {
        guard url.lowercased().hasPrefix("smtp://"), !starttls else { return false }
        let authority = url.dropFirst("smtp://".count).prefix { $0 != "/" && $0 != "?" }
        return !username.isEmpty || authority.contains("@")
    }
}

/// One `[jobs.NAME]` table: the keys every job has plus its own settings.
public struct JobConfiguration: Sendable {
    public var name: String
    public var enabled: Bool
    public var schedule: Schedule
    /// The IANA name of the schedule's time zone, as configured.
    public var timeZoneName: String
    public var statementTimeout: Duration
    public var lockTimeout: Duration
    public var maxRuntime: Duration
    /// Rows per transaction. Defaults to `1000`, `200` in low-footprint mode.
    public var batchSize: Int
    public var batchPause: Duration
    public var catchUp: Bool
    public var maxRetries: Int
    /// When `check` calls the job stale; `nil` means three of its periods.
    public var staleAfter: Duration?
    /// A healthchecks.io-style ping URL (`/start`, bare, `/fail`); empty: no pings.
    public var pingURL: String = ""
    /// WAL bytes per second the job's batches may write (`max_wal_rate`); `nil`: no budget.
    public var maxWALRate: Int64?
    /// With a WAL budget: cut it while a commit takes more than this many percent longer
    /// than the run's quietest (`max_commit_slowdown`); `nil`: the budget stays at `maxWALRate`.
    public var maxCommitSlowdown: Int?
    /// Pause while a streaming standby replays this far behind (`max_replica_lag`); `nil`: off.
    public var maxReplicaLag: Duration?
    /// The most of the wall clock, in percent, the job's batches may keep busy
    /// (`max_busy_share`, `BusyShare`); `nil`: no such limit.
    public var maxBusyShare: Int? = nil
    /// While PostgreSQL vacuums a table in the job's database, the job's batches wait,
    /// for at most half of the run's time (`wait_for_vacuum`, `VacuumWait`). On by
    /// default in low-footprint mode for a job that works through backlogs.
    public var waitForVacuum: Bool = false
    /// With an adaptive WAL budget: while a backlog forces checkpoints, keep them at least
    /// this far apart (`checkpoint_spacing`, `WriteBudget.checkpointCap`); `nil`: no cap.
    public var checkpointSpacing: CheckpointSpacing? = .scaled
    /// `false`: the job's batches commit with `synchronous_commit = off` (the default for a
    /// job whose work is idempotent, `BuiltInJob.isIdempotentBulkWork`: a batch lost in a crash is redone next run).
    public var synchronousCommit: Bool
    public var settings: JobSettings

    /// PostgreSQL's timeout settings are `int` milliseconds: at most `INT_MAX` (about 24.8 days).
    public static let longestTimeout: Duration = .milliseconds(Int64(Int32.max))

    /// `stale_after`, or three periods of the schedule after `date`.
    public func staleness(after date: Date) -> Duration {
        staleAfter ?? schedule.period(after: date) * 3
    }
}

/// How far apart a backlog's forced checkpoints are kept (`checkpoint_spacing`).
public enum CheckpointSpacing: Sendable, Equatable {
    /// `"auto"`, the default: from the server's `max_wal_size` (`scaled(maxWALSize:)`).
    case scaled
    /// A duration the operator chose.
    case every(Duration)

    /// The spacing at `max_wal_size = 256MB` (and below), a small machine's setting.
    public static let atSmallestServers: Duration = .seconds(10)
    /// The spacing at `max_wal_size = 1GB` (PostgreSQL's default) and above.
    public static let shortest: Duration = .seconds(2)

    /// 10 s at `max_wal_size = 256MB` and below, 2 s at 1GB and above, and in between
    /// shorter by the same factor for each step up in size (geometrically: 4.5 s at 512MB).
    ///
    /// Measured (docs/design/how-we-got-here.md): at 256MB with a standby, 3–4 s
    /// took the app's p99 past 2× where 10 s kept it at 1.5–1.7×; at 1GB a 5M backlog
    /// went at 0.37–0.45× the DELETE's rows/s with 3 s, at 0.48–0.53× with 2 s, the
    /// app's p99 at 1.4–2.2× with either. A server set up with a larger `max_wal_size`
    /// takes more WAL between checkpoints, and a large backlog must still go in
    /// reasonable time there.
    public static func scaled(maxWALSize bytes: Int64) -> Duration {
        let smallServer = 256.0 * 1024 * 1024
        let largeServer = 1024.0 * 1024 * 1024
        let size = min(max(Double(bytes), smallServer), largeServer)
        // log(size ÷ 256MB) ÷ log(1GB ÷ 256MB): 0 at 256MB, 1 at 1GB.
        let step = log(size / smallServer) / log(largeServer / smallServer)
        let seconds = atSmallestServers.seconds * pow(shortest.seconds / atSmallestServers.seconds, step)
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// The spacing on a server whose `max_wal_size` is `bytes`.
    public func duration(maxWALSize bytes: Int64) -> Duration {
        switch self {
        case .scaled: Self.scaled(maxWALSize: bytes)
        case .every(let duration): duration
        }
    }
}

/// An operator SQL job's own keys (`sql`, `repeat_until_zero`).
public struct SQLJobSettings: Sendable {
    public var sql: String
    public var repeatUntilZero: Bool = false
}
