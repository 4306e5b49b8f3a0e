import CaretakerConfig
import CaretakerDatabase
import CaretakerSchedule
import CaretakerSupport
import Logging
import Postgres

/// How a job's batches spare the app: the WAL budget (`max_wal_rate`, steered by
/// `max_commit_slowdown`), the busy share (`max_busy_share`), `batch_pause`, the
/// standbys' replay lag (`max_replica_lag`) and a running vacuum (`wait_for_vacuum`).
/// `JobContext` books every batch's WAL here and asks it how long to wait before the
/// next one.
final class WritePacer {
    private let job: JobConfiguration
    private let logger: Logger

    init(job: JobConfiguration, logger: Logger) {
        self.job = job
        self.logger = logger
        if let ceiling = job.maxWALRate {
            budget = job.maxCommitSlowdown.map { WriteBudget(ceiling: ceiling, slowdownPercent: $0) }
            walPacer = WALPacer(bytesPerSecond: budget?.bytesPerSecond ?? ceiling)
        }
    }

    /// The WAL insert position in bytes, read at both ends of every batch: what the
    /// batch wrote (with whatever the app wrote meanwhile) is the difference.
    static let walPosition = "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint AS wal_position"

    /// With a WAL budget, the pages a batch's backend has to write out itself (to make
    /// room in shared buffers) are pushed to disk every 256 kB, as the checkpointer
    /// does with its own (`checkpoint_flush_after`): left in the kernel's cache (the
    /// default, 0), a backlog's gigabyte of them is flushed all at once by the next
    /// checkpoint's fsync, and the app's commits queue behind it.
    static let backendFlushAfter = "256kB"

    /// WAL the run's batches wrote, in bytes (with what others wrote meanwhile).
    private(set) var walBytes: Int64 = 0
    /// WAL the latest batch wrote, in bytes.
    private(set) var lastBatchWAL: Int64 = 0
    private var walPacer: WALPacer?
    /// The rate the WAL budget follows, when it adapts (`max_commit_slowdown`).
    private var budget: WriteBudget?
    private var lastProbe: ContinuousClock.Instant?
    /// The WAL position at the end of the latest batch: a standby that replayed it has the run's work.
    private var walEnd: Int64 = 0
    private var throttled: Duration = .zero
    /// How much longer than `batch_pause` and the WAL budget the busy share made the run wait.
    private var rested: Duration = .zero
    /// Where the current stretch of work began: the pacer's creation (the run's
    /// start), then the end of each pause.
    private var workingSince = ContinuousClock.now
    /// When the run started (the pacer's creation).
    private let runStarted = ContinuousClock.now
    private var vacuumWait = VacuumWait()
    private var toldOfVacuum = false
    private var waitedForReplicas: Duration = .zero
    private var warnedHiddenReplicas = false
    private var toldOfLaggingReplica = false

    /// WAL the run still expects to write, in bytes, when it can tell (the page sweep:
    /// its WAL per row deleted so far × the due rows its sample puts ahead); `nil`: it cannot.
    var remainingWAL: Int64?

    /// Books a batch's WAL (positions read at its start and just before its commit) on
    /// the budget, from the instant the batch started: its own run time counts.
    func book(from start: QueryResult, to end: QueryResult, startedAt started: ContinuousClock.Instant) {
        guard let from = start.first?.int64("wal_position"), let to = end.first?.int64("wal_position") else { return }
        walEnd = to
        lastBatchWAL = max(0, to - from)
        walBytes += lastBatchWAL
        walPacer?.spend(lastBatchWAL, at: started)
    }

    /// Books `bytes` more on the WAL budget as if written by the batch that started at
    /// `started` (nothing for zero or less, or without a budget).
    func charge(_ bytes: Int64, from started: ContinuousClock.Instant) {
        guard bytes > 0, walPacer != nil else { return }
        walPacer?.spend(bytes, at: started)
        charged += bytes
    }

    /// What `charge` booked beyond the WAL written, in bytes.
    private var charged: Int64 = 0

    /// Waits as the job's budgets ask between two batches: the longest of
    /// `batch_pause`, the WAL budget (`max_wal_rate`, adapting to a commit probe at
    /// most every 100 ms) and the busy share's rest (`max_busy_share`), cut short when
    /// the run is to stop; then, while a streaming standby replays further behind than
    /// `max_replica_lag`, until it has replayed the latest batch.
    func pause(on connection: Connection, shouldStop: () -> Bool) {
        let now = ContinuousClock.now
        let owed = walPacer?.pause(at: now) ?? .zero
        let rest = job.maxBusyShare.map { BusyShare.rest(after: now - workingSince, share: $0) } ?? .zero
        if owed > job.batchPause { throttled += owed - job.batchPause }
        let paced = max(job.batchPause, owed)
        if rest > paced { rested += rest - paced }
        sleep(max(paced, rest), unless: shouldStop)
        if budget != nil, lastProbe.map({ .now - $0 >= WriteBudget.probeInterval }) ?? true {
            probeCommit(on: connection)
        }
        if let limit = job.maxReplicaLag { waitForReplicas(limit, on: connection, shouldStop: shouldStop) }
        if job.waitForVacuum { waitForVacuum(on: connection, shouldStop: shouldStop) }
        workingSince = .now
    }

    /// Sleeps `duration` in slices of at most `replicaPoll`, and no further once the run
    /// is to stop: a small share after a long stretch of work rests long (at 1%, 99
    /// times the stretch), and neither `max_runtime` nor a shutdown should wait for it.
    private func sleep(_ duration: Duration, unless shouldStop: () -> Bool) {
        var left = duration
        while left > .zero, !shouldStop() {
            let slice = min(left, Self.replicaPoll)
            OSThread.sleep(for: slice)
            left -= slice
        }
    }

    /// Times what a commit costs now, as an app's would: a transaction that takes an
    /// xid and commits durably, so its commit waits for the flush of all the WAL
    /// before it. It runs after the pause, not straight after a batch: there it would
    /// always time the flush of the latest range (bounded to 640 kB anyway); after
    /// the pause it sees lasting congestion, such as checkpoints or another
    /// process's I/O. It does not see the full page images the app writes after
    /// each checkpoint: `checkpointCap` is for those. The budget follows what it
    /// finds. A probe that fails (e.g. a read-only standby) turns the adaptation
    /// off for the run.
    private func probeCommit(on connection: Connection) {
        let started = ContinuousClock.now
        lastProbe = started
        do {
            try connection.pipeline([.init("BEGIN"), .init(Self.commitProbe), .init("COMMIT")])
        } catch {
            if connection.isHealthy { _ = try? connection.query("ROLLBACK") }
            logger.warning(
                "the commit probe failed, so the WAL budget stays where it is for this run",
                metadata: ["error": "\(error)"])
            budget = nil
            return
        }
        budget?.observe(commit: .now - started)
        budget?.checkpointCap = checkpointCap(on: connection)
        if let budget { walPacer?.bytesPerSecond = budget.bytesPerSecond }
    }

    /// WAL that requests a checkpoint (`max_wal_size ÷ (1 + checkpoint_completion_target)`)
    /// and the spacing `checkpoint_spacing` asks for on this server, read at the first
    /// probe; a distance of `0` when it could not be read (no cap then).
    private var checkpoints: (distance: Int64, spacing: Duration)?

    /// The rate `WriteBudget.checkpointCap` allows now, from the WAL written since the
    /// latest checkpoint's redo point (`pg_control_checkpoint()`, which any role may call
    /// on PostgreSQL 15). `nil` when it cannot be read, or with `checkpoint_spacing = ""`
    /// (then nothing is read).
    private func checkpointCap(on connection: Connection) -> Int64? {
        guard let setting = job.checkpointSpacing else { return nil }
        let row = try? connection.query(Self.checkpointPosition).first
        if checkpoints == nil {
            checkpoints = (
                row?.int64("distance") ?? 0, setting.duration(maxWALSize: row?.int64("max_wal_size") ?? 0)
            )
        }
        guard let (distance, spacing) = checkpoints, distance > 0, let written = row?.int64("written") else {
            return nil
        }
        return WriteBudget.checkpointCap(
            writtenSinceRedo: written, checkpointDistance: distance, remaining: remainingWAL, spacing: spacing)
    }

    /// The WAL written since the latest checkpoint's redo point (`pg_control_checkpoint()`,
    /// which any role may call on PostgreSQL 15), `max_wal_size` and the distance that
    /// requests a checkpoint (`max_wal_size ÷ (1 + checkpoint_completion_target)`), in bytes.
    static let checkpointPosition = """
        SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), c.redo_lsn)::bigint AS written,
               size AS max_wal_size,
               (size / (1 + current_setting('checkpoint_completion_target')::float8))::bigint AS distance
        FROM pg_control_checkpoint() AS c, pg_size_bytes(current_setting('max_wal_size')) AS size
        """

    /// The probe's one statement: durable commit for this transaction, and an xid so that it has a commit to flush.
    static let commitProbe = "SELECT set_config('synchronous_commit', 'on', true), txid_current()"

    /// How often a lagging standby is asked again, and how often a pause checks whether the run is to stop.
    static let replicaPoll: Duration = .milliseconds(100)

    /// Polls the WAL senders until no standby both reports a replay lag over
    /// `limit` and has yet to replay the latest batch (a standby that caught up
    /// keeps showing its last lag for a while). Needs `pg_read_all_stats` to see
    /// other roles' WAL senders: without it a sender shows only its pid (its `state`
    /// too is null), and the run warns once and does not wait. It reads
    /// `pg_stat_get_wal_senders()`, not the `pg_stat_replication` view built on it:
    /// the view first copies every backend's status, 0.53 ms a read at 200
    /// connections against 0.14 ms, after every range of a sweep (measured on the
    /// bench's machine).
    private func waitForReplicas(_ limit: Duration, on connection: Connection, shouldStop: () -> Bool) {
        while !shouldStop() {
            guard
                let lag = try? connection.query(
                    """
                    SELECT count(*) FILTER (WHERE state IS NULL) AS hidden,
                           count(*) FILTER (WHERE replay_lag > $1::bigint * interval '1 microsecond'
                                              AND pg_wal_lsn_diff(replay_lsn, '0/0') < $2::bigint) AS behind
                    FROM pg_stat_get_wal_senders()
                    """, limit.microseconds, walEnd
                ).first
            else { break }
            if lag.int("hidden") ?? 0 > 0, !warnedHiddenReplicas {
                warnedHiddenReplicas = true
                logger.warning(
                    """
                    a standby's replay position is hidden from this role, so max_replica_lag cannot be kept: \
                    grant it pg_read_all_stats (or pg_monitor)
                    """)
            }
            guard lag.int("behind") ?? 0 > 0 else { break }
            if !toldOfLaggingReplica {
                toldOfLaggingReplica = true
                logger.info(
                    "a standby replays further behind than max_replica_lag; batches wait for it",
                    metadata: ["max_replica_lag": "\(DurationText.format(limit))"])
            }
            OSThread.sleep(for: Self.replicaPoll)
            waitedForReplicas += Self.replicaPoll
        }
    }

    /// While a vacuum runs in this database, waits `VacuumWait.poll` at a time, as
    /// long as `VacuumWait` allows a whole one. Asks at every pause while a vacuum runs, and at
    /// most every `VacuumWait.checkInterval` otherwise. Any role may see that a vacuum
    /// runs in its database (`pg_stat_progress_vacuum` hides only which table without
    /// `pg_read_all_stats`), so it waits for a vacuum of any table there: on a small
    /// machine the app pays for two bulk jobs at once whichever table the other one
    /// works on. A failed look counts as no vacuum.
    private func waitForVacuum(on connection: Connection, shouldStop: () -> Bool) {
        guard vacuumWait.shouldCheck(at: .now) else { return }
        while !shouldStop() {
            let running = (try? connection.query(Self.vacuumsRunning).first?.int("vacuums")) ?? 0
            vacuumWait.sawVacuum = running > 0
            // Whole polls only: a sliver of allowance, renewed by the time the look
            // itself takes, would keep the run looking until the vacuum ends.
            guard running > 0, vacuumWait.allowance(after: .now - runStarted) >= VacuumWait.poll else { break }
            if !toldOfVacuum {
                toldOfVacuum = true
                logger.info("a vacuum runs in this database; batches wait for it (wait_for_vacuum)")
            }
            OSThread.sleep(for: VacuumWait.poll)
            vacuumWait.waited += VacuumWait.poll
        }
    }

    /// Vacuums running in the connection's database, autovacuum's and anyone's.
    static let vacuumsRunning =
        "SELECT count(*)::int AS vacuums FROM pg_stat_progress_vacuum WHERE datname = current_database()"

    /// The stats `addStats` may add to any job's run, beside the job's own declarations.
    static let stats: [StatDeclaration] = [
        .milliseconds("throttled_ms"), .milliseconds("rested_ms"), .bytes("wal_charged_bytes"), .count("budget_cuts"),
        .figure("wal_rate_lowest_kbps"), .figure("wal_rate_last_kbps"), .milliseconds("replica_wait_ms"),
        .milliseconds("vacuum_wait_ms"),
    ]

    /// `throttled_ms` (the WAL budget), `rested_ms` (the busy share),
    /// `replica_wait_ms` and `vacuum_wait_ms`, when the run waited for them;
    /// `wal_charged_bytes`, what it booked on the budget beyond its WAL; with an
    /// adaptive budget, `budget_cuts` and the lowest and last rate (`wal_rate_*_kbps`).
    func addStats(to stats: inout JobStats) {
        if throttled > .zero { stats.add("throttled_ms", Int(throttled.microseconds / 1000)) }
        if rested > .zero { stats.add("rested_ms", Int(rested.microseconds / 1000)) }
        if charged > 0 { stats.add("wal_charged_bytes", Int(charged)) }
        if let budget, lastProbe != nil {
            stats.add("budget_cuts", budget.cuts)
            stats.add("wal_rate_lowest_kbps", Int(budget.lowest / 1024))
            stats.add("wal_rate_last_kbps", Int(budget.bytesPerSecond / 1024))
        }
        if waitedForReplicas > .zero { stats.add("replica_wait_ms", Int(waitedForReplicas.microseconds / 1000)) }
        if vacuumWait.waited > .zero { stats.add("vacuum_wait_ms", Int(vacuumWait.waited.microseconds / 1000)) }
    }
}

extension JobContext {
    /// Tells the WAL budget how much WAL the run still expects to write (`nil`: it
    /// cannot tell), so that it caps the rate for checkpoints only when they will come.
    public func expectRemainingWAL(_ bytes: Int64?) {
        pacer.remainingWAL = bytes
    }

    /// Books `bytes` more on the WAL budget than the batches since `started` wrote, as
    /// if they had (a compressing sweep books its uncompressed page images this way).
    public func chargeWALBudget(_ bytes: Int64, from started: ContinuousClock.Instant) {
        pacer.charge(bytes, from: started)
    }

    /// True when `remaining` more bytes of WAL will request a checkpoint on this
    /// server (`WriteBudget.forcesCheckpoint`, from the WAL written since the latest
    /// checkpoint's redo point); false when that cannot be read.
    public func forcesCheckpoint(remainingWAL remaining: Int64) -> Bool {
        guard
            let row = try? connection.query(WritePacer.checkpointPosition).first,
            let written = row.int64("written"), let distance = row.int64("distance")
        else { return false }
        return WriteBudget.forcesCheckpoint(writtenSinceRedo: written, remaining: remaining, distance: distance)
    }

    /// WAL the run's batches wrote, in bytes (with what others wrote meanwhile).
    public var walBytes: Int64 { pacer.walBytes }
    /// WAL the latest batch wrote, in bytes.
    public var lastBatchWAL: Int64 { pacer.lastBatchWAL }

    /// Waits as the job's budgets ask between two batches (`WritePacer.pause`);
    /// not at all when the run is to stop (`recordStopIfDue()`).
    public func pauseBetweenBatches() {
        guard !recordStopIfDue() else { return }
        pacer.pause(on: connection) { recordStopIfDue() }
    }
}

/// The busy share (`max_busy_share`): after a stretch of work that took `busy`, the
/// job rests `busy × (100 − share) ÷ share`, so its batches keep the server busy at
/// most `share` percent of the time, whatever the machine, in the manner of
/// pt-archiver's `--sleep-coef` (a sleep in proportion to the last batch's time).
/// The WAL budget paces the WAL a backlog writes; this paces everything else it
/// costs: the backend's CPU and its reads, which on a two-core machine the app's own
/// clients wait behind. Without it, wherever no budget holds a sweep, it goes as fast
/// as its backend can, and any CPU it saves becomes speed, not room for the app.
enum BusyShare {
    static func rest(after busy: Duration, share: Int) -> Duration {
        guard busy > .zero, share < 100 else { return .zero }
        return busy * (100 - share) / max(1, share)
    }
}

/// `wait_for_vacuum`: while PostgreSQL vacuums a table in the job's database, the
/// batches wait. Measured in low-footprint mode: a
/// 5M backlog's sweep starts autovacuum on `posts` 50–64 s in, and from then to the
/// run's end the app's p99 was 1.7–2.3× its usual, against 1.3–1.5× before; waiting,
/// 1.1–1.4× in three runs of four. The waits take at most
/// half of the run's time (as long as everything else it did, its other pauses
/// included: a low-footprint sweep's own work is a twentieth of its time), so the
/// run goes at least half as fast as it would without them, and a vacuum that takes
/// hours (a large table on an SD card) delays the expiry but never stalls it.
struct VacuumWait {
    /// How long one wait lasts before the run asks again.
    static let poll: Duration = .milliseconds(250)
    /// How often, between batches, the run asks whether a vacuum runs.
    static let checkInterval: Duration = .seconds(1)

    /// What the run has waited for vacuums so far.
    var waited: Duration = .zero
    /// Whether a vacuum ran at the latest look.
    var sawVacuum = false
    private var lastCheck: ContinuousClock.Instant?

    /// True when the run should ask now: at every pause while a vacuum ran at the
    /// latest look (the run's work since then allows more waiting), otherwise at
    /// most once per `checkInterval`.
    mutating func shouldCheck(at now: ContinuousClock.Instant) -> Bool {
        if !sawVacuum, let lastCheck, now - lastCheck < Self.checkInterval { return false }
        lastCheck = now
        return true
    }

    /// How much longer the run may wait now, `elapsed` after its start: what it spent
    /// on everything else, less what it waited already.
    func allowance(after elapsed: Duration) -> Duration { max(.zero, elapsed - waited * 2) }
}

/// The WAL budget (`max_wal_rate`): a batch that wrote `bytes` books `bytes ÷ rate`
/// of the budget's time line, from when it started or when the previous booking
/// ends, whichever is later; the next batch waits until the booking ends, so the
/// batches' own run time counts and the WAL goes at the rate set. A run never
/// saves up budget while it is not writing, so it cannot burst.
struct WALPacer {
    /// The rate later bookings are made at (earlier ones keep theirs).
    var bytesPerSecond: Int64 {
        didSet { bytesPerSecond = max(1, bytesPerSecond) }
    }
    private var bookedUntil: ContinuousClock.Instant?

    init(bytesPerSecond: Int64) { self.bytesPerSecond = max(1, bytesPerSecond) }

    mutating func spend(_ bytes: Int64, at instant: ContinuousClock.Instant) {
        let start = max(bookedUntil ?? instant, instant)
        bookedUntil = start + .microseconds(Int64(Double(bytes) * 1_000_000 / Double(bytesPerSecond)))
    }

    /// How long to wait at `instant` before the next batch.
    func pause(at instant: ContinuousClock.Instant) -> Duration {
        guard let bookedUntil, bookedUntil > instant else { return .zero }
        return bookedUntil - instant
    }
}

/// The WAL budget's rate, adapting in the manner of TCP's congestion control (AIMD)
/// to what a commit costs: a commit probe every `probeInterval`; when one takes more
/// than `slowdownPercent` longer than the quietest seen this run (plus `jitter`),
/// the app's commits are being held up, and the rate halves; otherwise it grows by
/// `1/16` of `ceiling`, so it climbs back from the floor in about 1.6 s. It starts
/// at half of `ceiling` (`max_wal_rate`) and stays between `ceiling ÷ 16` and
/// `ceiling`. The quietest commit is the run's own reference, so the same rule
/// holds on an SSD and on an SD card, whatever the app's transactions look like.
/// While a backlog forces checkpoints, `checkpointCap` also holds the rate down.
struct WriteBudget {
    static let probeInterval: Duration = .milliseconds(100)
    /// A commit this much slower than the quietest never counts as held up (an fsync's jitter on a fast disk).
    static let jitter: Duration = .milliseconds(1)
    static let increaseShare = 16
    static let floorShare: Int64 = 16

    let ceiling: Int64
    let slowdownPercent: Int
    /// The AIMD rate, before the checkpoint cap.
    private(set) var aimdRate: Int64
    /// The lowest rate the run went down to.
    private(set) var lowest: Int64
    /// How many times the rate was cut.
    private(set) var cuts = 0
    private(set) var quietest: Duration?

    init(ceiling: Int64, slowdownPercent: Int) {
        self.ceiling = max(Self.floorShare, ceiling)
        self.slowdownPercent = slowdownPercent
        aimdRate = self.ceiling / 2
        lowest = aimdRate
    }

    var floor: Int64 { ceiling / Self.floorShare }

    /// True when a commit that took `latency` was held up, against the quietest so far.
    func heldUp(_ latency: Duration) -> Bool {
        guard let quietest else { return false }
        return latency > quietest * (100 + slowdownPercent) / 100 + Self.jitter
    }

    /// A cap on the rate while a backlog forces checkpoints (`checkpointCap(…)`); `nil`: none.
    var checkpointCap: Int64? {
        didSet { lowest = min(lowest, bytesPerSecond) }
    }

    /// The rate the WAL pacer books at: the AIMD rate, under the checkpoint cap.
    var bytesPerSecond: Int64 { max(1, min(aimdRate, checkpointCap ?? aimdRate)) }

    /// Once the WAL written since the latest checkpoint's redo point reaches half of
    /// what requests a checkpoint, this backlog will force checkpoints. Each one makes
    /// the app's next change of every page it touches a full page image, and writes out
    /// the dirty buffers, so what hurts the app is how often they come: the cap keeps
    /// them at least `spacing` apart (`checkpoint_spacing`, by default 10 s at
    /// `max_wal_size = 256MB`, 13.5 MB/s, and 2 s at 1GB, 270 MB/s:
    /// `CheckpointSpacing.scaled`). Below half the distance, no cap: a backlog that
    /// fits stays fast.
    /// When the run knows the WAL it has `remaining`, the cap waits until that no
    /// longer fits before the distance: a backlog that will not force a checkpoint
    /// is not slowed for one.
    static func checkpointCap(
        writtenSinceRedo written: Int64, checkpointDistance distance: Int64, remaining: Int64? = nil,
        spacing: Duration = CheckpointSpacing.atSmallestServers
    ) -> Int64? {
        guard distance > 0, written >= distance / 2 else { return nil }
        if let remaining, !forcesCheckpoint(writtenSinceRedo: written, remaining: remaining, distance: distance) {
            return nil
        }
        return max(1, Int64(Double(distance) * 1_000_000 / Double(max(1, spacing.microseconds))))
    }

    /// True when a run that still has `remaining` bytes of WAL to write will request a
    /// checkpoint: with what was written since the latest checkpoint's redo point, it
    /// reaches the distance that requests one (`max_wal_size ÷ (1 +
    /// checkpoint_completion_target)`). False without a distance.
    static func forcesCheckpoint(writtenSinceRedo written: Int64, remaining: Int64, distance: Int64) -> Bool {
        distance > 0 && written + remaining >= distance
    }

    mutating func observe(commit latency: Duration) {
        if heldUp(latency) {
            aimdRate = max(floor, aimdRate / 2)
            cuts += 1
        } else {
            aimdRate = min(ceiling, aimdRate + ceiling / Int64(Self.increaseShare))
        }
        lowest = min(lowest, bytesPerSecond)
        quietest = min(quietest ?? latency, latency)
    }
}
