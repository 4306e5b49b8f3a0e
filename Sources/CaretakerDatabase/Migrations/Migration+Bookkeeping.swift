extension Migration {
    /// caretaker's own tables: run history, slot claims, per-job state.
    static let bookkeeping = Migration(
        version: 1, name: "bookkeeping",
        sql: #"""
            CREATE TABLE IF NOT EXISTS caretaker.job_runs (
                id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                job          text NOT NULL,
                trigger      text NOT NULL CHECK (trigger IN ('schedule', 'catch-up', 'manual', 'notify', 'retry')),
                status       text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted', 'skipped')),
                slot         timestamptz,
                attempt      integer NOT NULL DEFAULT 1,
                started_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
                finished_at  timestamptz,
                dry_run      boolean NOT NULL DEFAULT false,
                stats        jsonb NOT NULL DEFAULT '{}'::jsonb,
                error        text,
                host         text NOT NULL,
                pid          integer NOT NULL,
                backend_pid  integer
            );
            CREATE INDEX IF NOT EXISTS job_runs_job_started_idx ON caretaker.job_runs (job, started_at DESC);
            CREATE INDEX IF NOT EXISTS job_runs_started_idx ON caretaker.job_runs (started_at);
            CREATE INDEX IF NOT EXISTS job_runs_running_idx ON caretaker.job_runs (job) WHERE status = 'running';

            -- The guard that makes each scheduled slot run once across every instance.
            CREATE TABLE IF NOT EXISTS caretaker.job_slots (
                job         text NOT NULL,
                slot        timestamptz NOT NULL,
                run_id      bigint,
                claimed_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
                PRIMARY KEY (job, slot)
            );

            -- Small per-job state that must survive restarts.
            CREATE TABLE IF NOT EXISTS caretaker.job_state (
                job         text PRIMARY KEY,
                state       jsonb NOT NULL DEFAULT '{}'::jsonb,
                updated_at  timestamptz NOT NULL DEFAULT clock_timestamp()
            );

            -- The session-level advisory lock a running job holds; stable across hosts.
            CREATE OR REPLACE FUNCTION caretaker.job_lock_key(job text) RETURNS bigint
                LANGUAGE sql IMMUTABLE PARALLEL SAFE
                AS $$ SELECT ('x' || substr(md5('caretaker/' || job), 1, 16))::bit(64)::bigint $$;

            -- True while some session holds the job's advisory lock (its run is alive).
            CREATE OR REPLACE FUNCTION caretaker.job_lock_held(job text) RETURNS boolean
                LANGUAGE sql STABLE
                AS $$
                    SELECT EXISTS (
                        SELECT 1 FROM pg_locks
                        WHERE locktype = 'advisory' AND granted AND objsubid = 1
                          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                          AND ((classid::bigint << 32) | objid::bigint) = caretaker.job_lock_key(job)
                    )
                $$;
            """#)
}
