extension Migration {
    /// Alert state per job, shared by every instance: `[alerts]` sends a message
    /// only when it changes this row, so one incident makes one mail.
    static let jobAlerts = Migration(
        version: 7, name: "job alerts",
        sql: #"""
            CREATE TABLE caretaker.job_alerts (
                job          text PRIMARY KEY,
                state        text NOT NULL CHECK (state IN ('healthy', 'unhealthy')),
                -- When the job entered this state (database clock).
                since        timestamptz NOT NULL DEFAULT clock_timestamp(),
                -- Why it is unhealthy, as the alert said (from job_runs: free of secrets).
                cause        text,
                -- A send failed and handed the change back: nobody claims it again before this.
                retry_after  timestamptz
            );
            """#)
}
