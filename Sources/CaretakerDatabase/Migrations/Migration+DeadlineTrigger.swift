extension Migration {
    /// `job_runs.trigger` gains `deadline`: runs started because a job's deadline
    /// query said its work was due.
    static let deadlineTrigger = Migration(
        version: 6, name: "deadline trigger",
        sql: """
            ALTER TABLE caretaker.job_runs DROP CONSTRAINT IF EXISTS job_runs_trigger_check;
            ALTER TABLE caretaker.job_runs ADD CONSTRAINT job_runs_trigger_check
                CHECK (trigger IN ('schedule', 'catch-up', 'manual', 'notify', 'retry', 'deadline'));
            """)
}
