import Foundation

/// What the scheduler knows about one job between runs.
struct JobState {
    /// The next scheduled slot (database clock).
    var nextSlot: Date?
    /// A run of this job is in progress in this process.
    var running = false
    /// A failed run's next attempt: when, and which attempt it is.
    var retry: (at: Date, attempt: Int)?
    /// `logout-inactive`: the next session deadline, when it comes before `nextSlot`.
    var deadlineCheck: Date?
    /// A NOTIFY arrived (or LISTEN reconnected): run soon.
    var notified = false
    /// A run waiting for a free place under `max_concurrent_jobs`.
    var queued: JobRunner.Request?
}

/// The LISTEN channel that wakes each job, as the notify-trigger migration names them.
enum NotifyChannel {
    static func channel(for job: String) -> String? {
        switch job {
        case BuiltInJob.sendTempPasswords.rawValue: "caretaker_send_temp_passwords"
        case BuiltInJob.leaderSuccession.rawValue: "caretaker_leader_succession"
        default: nil
        }
    }

    static func job(for channel: String) -> String? {
        BuiltInJob.allCases.map(\.rawValue).first { self.channel(for: $0) == channel }
    }
}
