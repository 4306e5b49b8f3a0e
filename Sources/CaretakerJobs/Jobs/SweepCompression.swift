/// `compress_wal`: whether a page sweep compresses its full page images from here
/// on. Only a backlog that will request a checkpoint gains from it: it writes a
/// third less WAL, so fewer checkpoints come, and fewer of the stalls at their end.
/// A backlog that fits pays lz4's CPU for nothing: at 2M posts, no checkpoint
/// forced, the app's p99 was 1.98× compressed against 1.49× without, at a slower
/// pace. So the sweep asks before its first
/// range, with the WAL the sample lets it expect (`DueSample.expectedWAL`), and
/// again at most every `askInterval` while the answer is no (the app's WAL brings
/// the checkpoint closer too), from the WAL it measures once it can
/// (`DueSample.remainingWAL`); once it compresses, it goes on to the end. Asking
/// first only once a twentieth of the backlog was gone, it left that twentieth
/// uncompressed, and a checkpoint forced that much sooner.
struct SweepCompression {
    static let askInterval: Duration = .seconds(1)

    /// True once the question is answered for good: compressing, or not wanted.
    private(set) var settled: Bool
    private var lastAsked: ContinuousClock.Instant?

    init(wanted: Bool) { settled = !wanted }

    /// True when the sweep should ask now whether its backlog will request a checkpoint.
    mutating func shouldAsk(at now: ContinuousClock.Instant) -> Bool {
        guard !settled else { return false }
        if let lastAsked, now - lastAsked < Self.askInterval { return false }
        lastAsked = now
        return true
    }

    /// The backlog will request a checkpoint: compress from here (when the role may).
    mutating func settle() { settled = true }
}
