-- A made-up week of run history for `scripts/demo --dashboard` (host 'demo-history'),
-- relative to the database clock, so the dashboard has something to draw: every job
-- on its schedule, a failure streak of expire-content, a long run with skipped slots
-- after it, and a 50-minute stretch nine hours ago when no caretaker ran (missed slots,
-- with the run that was going at the time interrupted).
SELECT setseed(0.17) \g /dev/null
UPDATE caretaker.schema_migrations SET applied_at = now() - interval '8 days';

CREATE TEMPORARY TABLE demo_slots AS
WITH every_job AS (
    SELECT 'expire-content' AS job, interval '5 minutes' AS step UNION ALL
    SELECT 'leader-succession', interval '5 minutes' UNION ALL
    SELECT 'logout-inactive', interval '1 minute' UNION ALL
    SELECT 'send-temp-passwords', interval '1 minute'
)
SELECT job, slot
FROM every_job,
     generate_series(to_timestamp(floor(extract(epoch FROM now() - interval '7 days') / extract(epoch FROM step))
                                  * extract(epoch FROM step)) + step,
                     now() - interval '2 minutes', step) AS slot
UNION ALL
SELECT 'prune', slot FROM generate_series(date_trunc('day', now() - interval '6 days'), now(), interval '1 day') AS slot;

-- The stretch with no caretaker running: no runs, no claimed slots.
DELETE FROM demo_slots WHERE slot > now() - interval '9 hours 50 minutes' AND slot < now() - interval '9 hours';

INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, finished_at, stats, error, host, pid, backend_pid)
SELECT job, 'schedule', status, slot, slot + interval '15 milliseconds',
       slot + interval '15 milliseconds' + duration, stats, error, 'demo-history', 4242, NULL
FROM (
    SELECT job, slot,
           extract(hour FROM slot) AS hour,
           -- More content expires in the afternoon and evening, when it was posted the day before.
           greatest(0, (40 + 35 * sin((extract(hour FROM slot) - 9) / 24 * 2 * pi()) + random() * 20)::int) AS wave,
           random() AS dice
    FROM demo_slots
) AS s,
LATERAL (
    SELECT CASE
        WHEN job = 'expire-content' AND slot BETWEEN now() - interval '15 hours' AND now() - interval '14 hours 35 minutes' THEN 'failed'
        WHEN job = 'expire-content' AND slot BETWEEN now() - interval '6 hours 4 minutes' AND now() - interval '5 hours 56 minutes' THEN 'skipped'
        WHEN job = 'expire-content' AND slot BETWEEN now() - interval '9 hours 55 minutes' AND now() - interval '9 hours 50 minutes' THEN 'interrupted'
        WHEN job = 'send-temp-passwords' AND dice < 0.002 THEN 'failed'
        ELSE 'succeeded' END AS status
) AS st,
LATERAL (
    SELECT CASE
        WHEN st.status = 'skipped' THEN '{}'::jsonb
        WHEN job = 'expire-content' AND st.status = 'failed' THEN '{"packs_deleted": 0, "posts_deleted": 0, "batches": 0}'::jsonb
        WHEN job = 'expire-content' THEN jsonb_build_object('packs_deleted', wave / 20, 'posts_deleted', wave,
                                                            'batches', 1 + wave / 50, 'batch_p99_ms', 4 + (dice * 30)::int)
        WHEN job = 'logout-inactive' THEN jsonb_build_object('sessions_revoked', (wave / 10 * dice)::int)
        WHEN job = 'send-temp-passwords' THEN jsonb_build_object('sent', CASE WHEN dice > 0.93 THEN 1 ELSE 0 END,
                                                                 'ignored', 0, 'failed', CASE WHEN st.status = 'failed' THEN 1 ELSE 0 END)
        WHEN job = 'leader-succession' THEN jsonb_build_object('leaders_appointed', CASE WHEN dice > 0.97 THEN 1 ELSE 0 END,
                                                               'communities_archived', 0)
        ELSE jsonb_build_object('runs_deleted', 0, 'sessions_deleted', (dice * 300)::int) END AS stats,
    CASE
        WHEN st.status = 'skipped' THEN interval '0'
        WHEN job = 'expire-content' AND slot BETWEEN now() - interval '6 hours 10 minutes' AND now() - interval '6 hours 4 minutes' THEN interval '13 minutes'
        WHEN st.status = 'interrupted' THEN interval '4 minutes'
        WHEN job = 'expire-content' THEN (80 + wave * 9) * interval '1 millisecond'
        WHEN job = 'prune' THEN interval '3 seconds'
        ELSE (5 + dice * 30) * interval '1 millisecond' END AS duration,
    CASE st.status
        WHEN 'failed' THEN CASE job WHEN 'expire-content' THEN 'canceling statement due to statement timeout (SQLSTATE 57014) in batch 1: is something holding locks on posts?'
                                    ELSE 'SMTP delivery failed: Couldn''t connect to server (smtp://127.0.0.1:25)' END
        WHEN 'skipped' THEN 'the previous run was still going'
        WHEN 'interrupted' THEN 'the process running it died (its advisory lock is gone)'
        END AS error
) AS v;

INSERT INTO caretaker.job_slots (job, slot, run_id)
SELECT job, slot, id FROM caretaker.job_runs WHERE host = 'demo-history' AND slot IS NOT NULL
ON CONFLICT DO NOTHING;
