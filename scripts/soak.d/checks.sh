# shellcheck shell=bash
# The soak's invariants. Each check_* function runs one query against the soak
# database ($soak_db, a libpq conninfo) and prints one line
#
#     PASS|FAIL|NOT EXERCISED|ERROR  NAME  BAD of JUDGED WHAT  (note)
#
# JUDGED is how many items (rows, runs, messages, cells) the check looked at.
# It returns
#   0  PASS: items judged, none broke the invariant
#   1  FAIL: at least one broke it (up to ten offending rows follow)
#   2  ERROR: the check's own query failed or returned no counts: nothing was judged
#   3  NOT EXERCISED: nothing to judge (the run gave the invariant no occasion)
# Parameters of the run (lifetimes, periods, t_stop) come from soak.params; see
# audit.sql. `scripts/soak --self-test` plants a violation of each term of each
# check and expects FAIL (an ERROR is not a detection).

soak_psql() { psql -X -q -v ON_ERROR_STOP=1 -P pager=off "$soak_db" "$@"; }

# soak_check NAME WHAT SUMMARY_SQL EXAMPLES_SQL
# SUMMARY_SQL returns one row: bad, judged, note. EXAMPLES_SQL lists offenders.
# $soak_check_label, when set, follows NAME (the partitioned layout's checks).
soak_check() {
    local name=$1${soak_check_label:+ $soak_check_label} what=$2 summary=$3 examples=$4 row bad checked note
    if ! row=$(soak_psql -At -F $'\t' -c "$summary" 2>&1); then
        printf '  ERROR %-27s the check itself failed: %s\n' "$name" "$row"
        return 2
    fi
    IFS=$'\t' read -r bad checked note <<<"$row"
    if ! [[ "$bad" =~ ^[0-9]+$ && "$checked" =~ ^[0-9]+$ ]]; then
        printf '  ERROR %-27s the check returned no counts (bad %s, judged %s): %s\n' "$name" "${bad:-none}" \
            "${checked:-none}" "$row"
        return 2
    fi
    if [ "$bad" = 0 ] && [ "$checked" = 0 ]; then
        printf '  NOT EXERCISED  %-27s 0 of 0 %s: nothing to judge%s\n' "$name" "$what" "${note:+  ($note)}"
        return 3
    fi
    if [ "$bad" = 0 ]; then
        printf '  PASS  %-27s %s of %s %s%s\n' "$name" "$bad" "$checked" "$what" "${note:+  ($note)}"
        return 0
    fi
    printf '  FAIL  %-27s %s of %s %s%s\n' "$name" "$bad" "$checked" "$what" "${note:+  ($note)}"
    soak_psql -c "$examples LIMIT 10" 2>&1 | sed 's/^/          /'
    return 1
}

# Posts whose own deadline had not come when they were deleted. A post that
# went in the same transaction as its pack (the cascade) is judged with its pack.
check_posts_not_early() {
    soak_check posts-not-early "deleted posts were deleted before their deadline" "
        WITH own AS (
            SELECT d.*, d.created_at + soak.lifetime(d.likes, soak.param('post_full_popularity')::float8) AS deadline
            FROM soak.deleted_posts d
            WHERE NOT EXISTS (SELECT 1 FROM soak.deleted_packs p WHERE p.id = d.pack_id AND p.txid = d.txid))
        SELECT count(*) FILTER (WHERE deleted_at < deadline), count(*),
               format('%s more went with their pack', (SELECT count(*) FROM soak.deleted_posts) - count(*))
        FROM own" "
        SELECT d.id, d.created_at, d.likes, d.created_at + soak.lifetime(d.likes, soak.param('post_full_popularity')::float8) AS deadline,
               d.deleted_at, d.txid, d.app
        FROM soak.deleted_posts d
        WHERE NOT EXISTS (SELECT 1 FROM soak.deleted_packs p WHERE p.id = d.pack_id AND p.txid = d.txid)
          AND d.deleted_at < d.created_at + soak.lifetime(d.likes, soak.param('post_full_popularity')::float8)
        ORDER BY d.deleted_at"
}

# Packs deleted before created_at + L(members + likes at deletion), or admin packs deleted at all.
check_packs_not_early() {
    soak_check packs-not-early "deleted packs were admin packs or deleted before their deadline" "
        SELECT count(*) FILTER (WHERE is_admin OR deleted_at < created_at
                                   + soak.lifetime(members + likes, soak.param('pack_full_popularity')::float8)),
               count(*), format('%s admin', count(*) FILTER (WHERE is_admin))
        FROM soak.deleted_packs" "
        SELECT id, is_admin, created_at, members, likes,
               created_at + soak.lifetime(members + likes, soak.param('pack_full_popularity')::float8) AS deadline, deleted_at, txid, app
        FROM soak.deleted_packs
        WHERE is_admin OR deleted_at < created_at + soak.lifetime(members + likes, soak.param('pack_full_popularity')::float8)
        ORDER BY deleted_at"
}

# check_gone_when_due NAME VIEW PERIOD_PARAM WHAT: nothing of VIEW (soak.*_deadlines)
# may be left at t_stop more than one period (plus the scheduling margin) after it
# came due, and whatever came due after the load and the faults stopped
# (calm_since) must have gone within that allowance of coming due.
check_gone_when_due() {
    local name=$1 view=$2 period=$3 what=$4
    local allowance="((soak.param('$period')::float8 + soak.param('latency_margin_s')::float8) * interval '1 second')"
    local bad="(gone IS NULL AND due + $allowance < soak.param('t_stop')::timestamptz)
               OR (gone IS NOT NULL AND due >= soak.param('calm_since')::timestamptz AND gone > due + $allowance)"
    soak_check "$name" "$what overdue by more than one period (left at the stop, or gone late while calm)" "
        SELECT count(*) FILTER (WHERE $bad),
               count(*) FILTER (WHERE gone IS NULL OR due >= soak.param('calm_since')::timestamptz),
               format('%s left at the stop, %s came due while calm and went at most %s s late; allowance %s s',
                      count(*) FILTER (WHERE gone IS NULL),
                      count(*) FILTER (WHERE gone IS NOT NULL AND due >= soak.param('calm_since')::timestamptz),
                      coalesce(round(max(extract(epoch FROM gone - due))
                                     FILTER (WHERE due >= soak.param('calm_since')::timestamptz)::numeric, 3), 0),
                      soak.param('$period')::float8 + soak.param('latency_margin_s')::float8)
        FROM $view" "
        SELECT id, due, gone, soak.param('t_stop') AS t_stop, soak.param('calm_since') AS calm_since
        FROM $view WHERE $bad ORDER BY due"
}

check_posts_gone() { check_gone_when_due posts-gone-when-due soak.post_deadlines expire_period_s posts; }
check_packs_gone() { check_gone_when_due packs-gone-when-due soak.pack_deadlines expire_period_s "non-admin packs"; }
check_sessions_revoked() { check_gone_when_due sessions-revoked-when-idle soak.session_deadlines logout_period_s "idle sessions"; }

# Sessions revoked for inactivity before last_seen_at + idle_timeout.
check_sessions_not_early() {
    soak_check sessions-not-early "sessions revoked for inactivity were revoked before their idle deadline" "
        SELECT count(*) FILTER (WHERE revoked_at < last_seen_at + soak.param('idle_timeout_s')::float8 * interval '1 second'),
               count(*), NULL
        FROM public.sessions WHERE revoked_reason = 'inactivity'" "
        SELECT id, user_id, last_seen_at, revoked_at FROM public.sessions
        WHERE revoked_reason = 'inactivity'
          AND revoked_at < last_seen_at + soak.param('idle_timeout_s')::float8 * interval '1 second'"
}

# Every request ends sent, ignored or failed; a pending one is only acceptable
# while its next attempt is still ahead (a backoff after an SMTP outage).
check_requests_settled() {
    local overdue="status = 'pending' AND next_attempt_at
        + (soak.param('send_period_s')::float8 + soak.param('latency_margin_s')::float8) * interval '1 second'
        < soak.param('t_stop')::timestamptz"
    soak_check requests-settled "reset requests were pending although due" "
        SELECT count(*) FILTER (WHERE $overdue), count(*),
               format('sent %s, ignored %s, failed %s, pending with a later next attempt %s',
                      count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status = 'ignored'),
                      count(*) FILTER (WHERE status = 'failed'),
                      count(*) FILTER (WHERE status = 'pending' AND NOT ($overdue)))
        FROM public.password_reset_requests" "
        SELECT id, email, status, attempts, next_attempt_at, last_error, soak.param('t_stop') AS t_stop
        FROM public.password_reset_requests WHERE $overdue ORDER BY id"
}

# Messages, requests and attempts per address (lower-cased: the request may
# spell the address differently from the account, the mail goes to the account's).
soak_mail_by_address="
    WITH req AS (SELECT lower(email) AS address, sum(attempts) AS attempts,
                        count(*) FILTER (WHERE status = 'sent') AS sent, count(*) AS requests
                 FROM public.password_reset_requests GROUP BY 1),
         msg AS (SELECT lower(rcpt) AS address, count(*) AS messages FROM soak.mail GROUP BY 1)
    SELECT address, coalesce(requests, 0) AS requests, coalesce(sent, 0) AS sent,
           coalesce(attempts, 0) AS attempts, coalesce(messages, 0) AS messages
    FROM req FULL JOIN msg USING (address)"

# Each attempt mails at most once: messages to an address <= attempts of its requests.
check_mail_once_per_attempt() {
    soak_check mail-once-per-attempt "addresses got more messages than delivery attempts" "
        WITH a AS ($soak_mail_by_address)
        SELECT count(*) FILTER (WHERE messages > attempts), count(*),
               format('%s messages for %s attempts', coalesce(sum(messages), 0), coalesce(sum(attempts), 0))
        FROM a" "
        WITH a AS ($soak_mail_by_address) SELECT * FROM a WHERE messages > attempts ORDER BY address"
}

# Every sent request has its message: messages to an address >= its sent
# requests. With no retry (attempts = sent) that makes it exactly one each.
check_mail_sent_delivered() {
    soak_check mail-sent-delivered "addresses had fewer messages than sent requests" "
        WITH a AS ($soak_mail_by_address)
        SELECT count(*) FILTER (WHERE messages < sent), count(*) FILTER (WHERE sent > 0 OR messages > 0),
               format('%s sent requests; %s of %s addresses without retries got exactly one message per sent request',
                      coalesce(sum(sent), 0),
                      count(*) FILTER (WHERE attempts = sent AND sent > 0 AND messages = sent),
                      count(*) FILTER (WHERE attempts = sent AND sent > 0))
        FROM a" "
        WITH a AS ($soak_mail_by_address) SELECT * FROM a WHERE messages < sent ORDER BY address"
}

# Every message is the temporary-password mail (subject and the password line).
check_mail_well_formed() {
    soak_check mail-well-formed "messages lacked the subject or the password line" "
        SELECT count(*) FILTER (WHERE subject IS DISTINCT FROM 'Your temporary password' OR NOT has_password),
               count(*), NULL FROM soak.mail" "
        SELECT * FROM soak.mail WHERE subject IS DISTINCT FROM 'Your temporary password' OR NOT has_password"
}

check_slots_once() {
    soak_check slots-once "(job, slot) pairs ran more than once" "
        SELECT (SELECT count(*) FROM (SELECT job, slot FROM caretaker.job_runs WHERE slot IS NOT NULL
                                      GROUP BY 1, 2 HAVING count(*) > 1) d),
               (SELECT count(DISTINCT (job, slot)) FROM caretaker.job_runs WHERE slot IS NOT NULL), NULL" "
        SELECT job, slot, count(*), array_agg(id ORDER BY id) AS run_ids, array_agg(status ORDER BY id) AS statuses
        FROM caretaker.job_runs WHERE slot IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1 ORDER BY 2"
}

# After every instance stopped, no run may still claim to be running; runs of
# killed instances must have been marked interrupted by a later one.
check_no_running() {
    soak_check no-run-left-running "runs were still 'running' after all instances stopped" "
        SELECT count(*) FILTER (WHERE status = 'running'), count(*),
               format('%s interrupted, %s of them found dead by another process',
                      count(*) FILTER (WHERE status = 'interrupted'),
                      count(*) FILTER (WHERE status = 'interrupted' AND error LIKE 'the process running it died%'))
        FROM caretaker.job_runs" "
        SELECT id, job, trigger, slot, started_at, host, pid, backend_pid FROM caretaker.job_runs
        WHERE status = 'running' ORDER BY id"
}

check_leaders() {
    local bad="c.leader_id IS NULL
        OR NOT EXISTS (SELECT 1 FROM public.community_members m WHERE m.community_id = c.id AND m.user_id = c.leader_id)
        OR EXISTS (SELECT 1 FROM public.users u WHERE u.id = c.leader_id AND u.deleted_at IS NOT NULL)"
    soak_check leaders-valid "active communities had no current, non-deleted member as leader" "
        SELECT count(*) FILTER (WHERE c.archived_at IS NULL AND ($bad)), count(*) FILTER (WHERE c.archived_at IS NULL),
               format('%s archived', count(*) FILTER (WHERE c.archived_at IS NOT NULL))
        FROM public.communities c" "
        SELECT c.id, c.leader_id, c.successor_id,
               EXISTS (SELECT 1 FROM public.community_members m WHERE m.community_id = c.id AND m.user_id = c.leader_id) AS leader_is_member,
               (SELECT u.deleted_at FROM public.users u WHERE u.id = c.leader_id) AS leader_deleted_at
        FROM public.communities c WHERE c.archived_at IS NULL AND ($bad) ORDER BY c.id"
}

# RSS at the end within 10% of RSS after warm-up, for instances never restarted.
check_memory() {
    local bad="rss_warm_kib IS NULL OR rss_end_kib IS NULL OR abs(rss_end_kib - rss_warm_kib) > rss_warm_kib * 0.10"
    soak_check memory-steady "instances never restarted changed RSS by more than 10% after warm-up" "
        SELECT count(*) FILTER (WHERE restarts = 0 AND ($bad)), count(*) FILTER (WHERE restarts = 0),
               coalesce(string_agg(format('%s %s->%s KiB%s', name, rss_warm_kib, rss_end_kib,
                                          CASE WHEN restarts > 0 THEN format(' after %s restarts, not compared', restarts) ELSE '' END),
                                   '; ' ORDER BY name), '')
        FROM soak.instances" "
        SELECT name, mode, rss_warm_kib, rss_end_kib,
               round(100.0 * (rss_end_kib - rss_warm_kib) / nullif(rss_warm_kib, 0), 1) AS change_pct
        FROM soak.instances WHERE restarts = 0 AND ($bad)"
}

# Every instance left after SIGTERM with exit status 0 in time.
check_clean_shutdown() {
    soak_check clean-shutdown "instances did not exit 0 after SIGTERM within shutdown_grace" "
        SELECT count(*) FILTER (WHERE exit_status IS DISTINCT FROM 0), count(*), NULL FROM soak.instances" "
        SELECT name, mode, exit_status FROM soak.instances WHERE exit_status IS DISTINCT FROM 0"
}

# No runaway. Each process's runs of each job are counted in 10-second
# windows (aligned to the epoch, by started_at), by what started them, and
# each kind must stay within what could have caused it:
#
#   by slot (schedule, catch-up, skipped)  <= slots of the job's schedule in the
#       window: floor(10 / period) + 1 per configuration epoch in force
#       (soak.schedule; a reload opens a new epoch)
#   retry     of attempt a <= the process's runs of the job of attempt a - 1 that
#       could be retried: failed or interrupted, or woken by a deadline (issue 11:
#       a deadline wake-up that leaves work undone obeys the retry rules), with
#       attempt <= max_retries, started in the window or the 20 s before
#   notify    <= transactions that notified the job's channel in the window or
#       the one before (soak.notifies; notifications during a run give one run after it)
#   deadline  <= sessions whose idle deadline passed while they were active, in
#       the window or the one before (logout-inactive's deadline wake-ups; before
#       issue 11 recorded as 'schedule' with no slot, since as 'deadline')
#
# plus 3 in all for a process start or a reconnection (a catch-up run, a
# "missed" row, the run a new LISTEN connection asks for). A cell fails when
# its runs beyond those allowances exceed 3. The allowances are loose on
# purpose (the load is random); a loop that reruns a job for no new cause, or
# that reruns a failing job without the retry rules, exceeds them within seconds.
soak_runaway_cells="
    WITH runs AS (
        SELECT host, pid, job, status, attempt, started_at,
               CASE WHEN slot IS NOT NULL THEN 'slot' WHEN trigger = 'schedule' THEN 'deadline' ELSE trigger END AS kind,
               to_timestamp(floor(extract(epoch FROM started_at) / 10) * 10) AS t0
        FROM caretaker.job_runs),
    jobs AS (SELECT DISTINCT ON (job) job, max_retries, notify_channel, deadline
             FROM soak.schedule ORDER BY job, since DESC),
    notify_buckets AS (SELECT channel, to_timestamp(floor(extract(epoch FROM at) / 10) * 10) AS t0, count(*) AS n
                       FROM soak.notifies GROUP BY 1, 2),
    deadline_buckets AS (SELECT to_timestamp(floor(extract(epoch FROM due) / 10) * 10) AS t0, count(*) AS n
                         FROM soak.session_came_due GROUP BY 1),
    cells AS (
        SELECT host, pid, job, t0, count(*) AS runs,
               count(*) FILTER (WHERE kind = 'slot') AS by_slot, count(*) FILTER (WHERE kind = 'retry') AS by_retry,
               count(*) FILTER (WHERE kind = 'notify') AS by_notify, count(*) FILTER (WHERE kind = 'deadline') AS by_deadline,
               count(*) FILTER (WHERE kind NOT IN ('slot', 'retry', 'notify', 'deadline')) AS by_other
        FROM runs GROUP BY 1, 2, 3, 4),
    allowed AS (
        SELECT c.*, soak.slots_between(c.job, c.t0, c.t0 + interval '10 seconds') AS slots,
               (SELECT count(*) FROM runs f
                WHERE f.host = c.host AND f.pid = c.pid AND f.job = c.job
                  AND (f.status IN ('failed', 'interrupted') OR f.kind = 'deadline') AND f.attempt <= coalesce(j.max_retries, 0)
                  AND f.started_at >= c.t0 - interval '20 seconds' AND f.started_at < c.t0 + interval '10 seconds') AS retryable,
               -- retries of attempt a beyond the retryable runs of attempt a - 1
               (SELECT coalesce(sum(greatest(r.n - (
                    SELECT count(*) FROM runs f
                    WHERE f.host = c.host AND f.pid = c.pid AND f.job = c.job AND f.attempt = r.attempt - 1
                      AND (f.status IN ('failed', 'interrupted') OR f.kind = 'deadline') AND f.attempt <= coalesce(j.max_retries, 0)
                      AND f.started_at >= c.t0 - interval '20 seconds' AND f.started_at < c.t0 + interval '10 seconds'), 0)), 0)
                FROM (SELECT attempt, count(*) AS n FROM runs x
                      WHERE x.host = c.host AND x.pid = c.pid AND x.job = c.job AND x.t0 = c.t0 AND x.kind = 'retry'
                      GROUP BY 1) r) AS retry_excess,
               coalesce((SELECT sum(n) FROM notify_buckets b WHERE b.channel = j.notify_channel
                         AND b.t0 IN (c.t0, c.t0 - interval '10 seconds')), 0) AS notifies,
               CASE WHEN j.deadline THEN coalesce((SELECT sum(n) FROM deadline_buckets b
                                                   WHERE b.t0 IN (c.t0, c.t0 - interval '10 seconds')), 0) ELSE 0 END AS deadlines
        FROM cells c LEFT JOIN jobs j USING (job))
    SELECT *, greatest(by_slot - slots, 0) + retry_excess + greatest(by_notify - notifies, 0)
              + greatest(by_deadline - deadlines, 0) + by_other AS excess
    FROM allowed"

check_no_runaway() {
    soak_check no-runaway "(process, job, 10 s window) cells had more than 3 runs beyond their schedule, retries, NOTIFYs and deadlines" "
        WITH c AS ($soak_runaway_cells)
        SELECT count(*) FILTER (WHERE excess > 3), count(*),
               (SELECT format('busiest cell: %s runs of %s (%s by slot of %s slots, %s retries of %s retryable, %s by NOTIFY of %s, %s by deadline of %s; excess %s); largest excess %s',
                              a.runs, a.job, a.by_slot, a.slots, a.by_retry, a.retryable, a.by_notify, a.notifies,
                              a.by_deadline, a.deadlines, a.excess, (SELECT max(excess) FROM c))
                FROM (SELECT * FROM c ORDER BY runs DESC LIMIT 1) a)
        FROM c" "
        WITH c AS ($soak_runaway_cells)
        SELECT job, pid, t0 AS window_start, runs, excess, by_slot, slots, by_retry, retryable, by_notify, notifies,
               by_deadline, deadlines, by_other
        FROM c WHERE excess > 3 ORDER BY excess DESC"
}

# No blocked stall. While the app protects a few rows (soak.protected: a post
# referenced by a report, its pack, a pack on hold, a frozen session), the
# other rows of the same kind that come due must still go: each that came due
# from 5 s after the protection began (the instances settle after the fault
# before it) until 3 periods + the margin before it ended must have gone within
# 3 periods + the margin of its deadline. A job whose batch fails on one
# protected row and takes the rest with it keeps them all until the protection
# ends, which is 20 s later.
soak_stall_judged="
    WITH episodes AS (SELECT kind, since, max(until) AS until FROM soak.protected GROUP BY 1, 2),
    due_rows AS (
        SELECT 'post' AS kind, id::text AS id, due, gone, soak.param('expire_period_s')::float8 AS period FROM soak.post_deadlines
        UNION ALL SELECT 'pack', id::text, due, gone, soak.param('expire_period_s')::float8 FROM soak.pack_deadlines
        UNION ALL SELECT 'session', id::text, due, gone, soak.param('logout_period_s')::float8 FROM soak.session_deadlines),
    judged AS (
        SELECT r.kind, r.id, r.due, r.gone, e.since, e.until,
               (3 * r.period + soak.param('latency_margin_s')::float8) * interval '1 second' AS allowance
        FROM due_rows r JOIN episodes e ON e.kind = r.kind
        WHERE NOT EXISTS (SELECT 1 FROM soak.protected p WHERE p.kind = r.kind AND p.id = r.id))
    SELECT *, coalesce(gone, soak.param('t_stop')::timestamptz) > due + allowance AS late FROM judged
    WHERE due >= since + interval '5 seconds'
      AND due <= least(coalesce(until, soak.param('t_stop')::timestamptz), soak.param('t_stop')::timestamptz) - allowance"

check_no_blocked_stall() {
    soak_check no-blocked-stall "rows that came due while a row of their kind was protected went more than 3 periods late" "
        WITH j AS ($soak_stall_judged)
        SELECT count(*) FILTER (WHERE late), count(*),
               format('%s protections (%s); judged: %s; latest went %s s after its deadline; blocked rows counted by the jobs: %s',
                      (SELECT count(*) FROM soak.protected),
                      (SELECT coalesce(string_agg(DISTINCT how, ', '), 'none') FROM soak.protected),
                      coalesce((SELECT string_agg(format('%s %s', n, kind), ', ') FROM (SELECT kind, count(*) AS n FROM j GROUP BY 1) k), 'none'),
                      coalesce(round(max(extract(epoch FROM coalesce(gone, soak.param('t_stop')::timestamptz) - due))::numeric, 3), 0),
                      (SELECT coalesce(string_agg(format('%s %s', key, n), ', '), 'none')
                       FROM (SELECT key, sum(value::bigint) AS n FROM caretaker.job_runs, jsonb_each_text(stats)
                             WHERE key LIKE '%blocked%' AND value ~ '^[0-9]+\$' GROUP BY 1 HAVING sum(value::bigint) > 0) b))
        FROM j" "
        WITH j AS ($soak_stall_judged)
        SELECT kind, id, due, gone, since AS protected_since, until AS protected_until, allowance FROM j WHERE late ORDER BY due"
}

# Alerts once. Active only when the binary accepts [alerts] mail_to (issue
# 14; scripts/soak probes it with `caretaker check` and sets soak.params
# alerts_to), else reported NOT EXERCISED. Alert mail (soak.alert_mail) is sorted per
# job (the job name in the subject or body) into alerts and recoveries (the
# subject says "recover", "resolved" or "healthy again"). Each job's messages
# must alternate alert, recovery, alert, ... (one alert per incident however
# many runs fail, across all instances; no recovery without an alert); and
# for soak-flaky, whose incidents the job-failing fault makes (soak.incidents),
# exactly one alert per incident that had a failed run and one recovery per
# incident after which the job succeeded again.
soak_alert_sequence="
    WITH jobs AS (SELECT DISTINCT job FROM soak.schedule),
    msgs AS (
        SELECT m.received_at, m.subject,
               (SELECT j.job FROM jobs j WHERE strpos(coalesce(m.subject, '') || ' ' || coalesce(m.excerpt, ''), j.job) > 0
                ORDER BY length(j.job) DESC LIMIT 1) AS job,
               coalesce(m.subject ~* '(recover|resolved|healthy again)', false) AS recovery
        FROM soak.alert_mail m)
    SELECT *, lag(recovery) OVER (PARTITION BY job ORDER BY received_at) AS previous_recovery FROM msgs"
soak_flaky_incidents="
    SELECT i.*,
           EXISTS (SELECT 1 FROM caretaker.job_runs r WHERE r.job = i.job AND r.status = 'failed'
                   AND r.started_at >= i.since AND r.started_at < coalesce(i.until, 'infinity')) AS failed,
           EXISTS (SELECT 1 FROM caretaker.job_runs r WHERE r.job = i.job AND r.status = 'succeeded'
                   AND r.started_at >= i.until) AS recovered
    FROM soak.incidents i WHERE i.job = 'soak-flaky'"

check_alerts_once() {
    if [ -z "$(soak_psql -At -c "SELECT soak.param('alerts_to')")" ]; then
        printf '  NOT EXERCISED  %-27s this caretaker does not accept [alerts] mail_to: nothing to judge\n' alerts-once
        return 3
    fi
    soak_check alerts-once "alert messages broke one-alert-one-recovery per incident" "
        WITH s AS ($soak_alert_sequence), i AS ($soak_flaky_incidents),
        flaky AS (SELECT count(*) FILTER (WHERE NOT recovery) AS alerts, count(*) FILTER (WHERE recovery) AS recoveries
                  FROM s WHERE job = 'soak-flaky')
        SELECT (SELECT count(*) FROM s WHERE job IS NULL OR recovery IS NOT DISTINCT FROM coalesce(previous_recovery, true))
               + abs((SELECT alerts FROM flaky) - (SELECT count(*) FROM i WHERE failed))
               + abs((SELECT recoveries FROM flaky) - (SELECT count(*) FROM i WHERE failed AND recovered)),
               (SELECT count(*) FROM s),
               format('soak-flaky: %s incidents with failed runs, %s alerts, %s recoveries; all jobs: %s alerts, %s recoveries',
                      (SELECT count(*) FROM i WHERE failed), (SELECT alerts FROM flaky), (SELECT recoveries FROM flaky),
                      (SELECT count(*) FILTER (WHERE NOT recovery) FROM s), (SELECT count(*) FILTER (WHERE recovery) FROM s))" "
        WITH s AS ($soak_alert_sequence), i AS ($soak_flaky_incidents)
        SELECT 'message' AS what, job, received_at AS at, CASE WHEN recovery THEN 'recovery' ELSE 'alert' END AS kind, subject
        FROM s WHERE job IS NULL OR recovery IS NOT DISTINCT FROM coalesce(previous_recovery, true)
        UNION ALL SELECT 'incident', job, since, CASE WHEN recovered THEN 'recovered' ELSE 'not recovered' END,
               (SELECT count(*) FROM s WHERE s.job = i.job AND s.received_at >= i.since)::text || ' messages since'
        FROM i WHERE failed"
}

# The partitioned layout. No partition may leave posts (the start of the first
# DETACH of it, or its DROP) before every post it can hold is past max_lifetime
# (upper bound + max_lifetime); its posts are judged by posts-not-early with the
# time it left. A partition past max_lifetime must be gone within one period.
check_partitions_not_early() {
    local early="removed_at < upper + soak.param('max_lifetime_us')::bigint * interval '1 microsecond'"
    soak_check partitions-not-early "dropped partitions left posts before all they could hold was past max_lifetime" "
        SELECT count(*) FILTER (WHERE $early), count(*),
               format('%s posts went with them; %s of them detached before the run that dropped them',
                      coalesce(sum(posts), 0), count(*) FILTER (WHERE removed_at < dropped_at - interval '1 second'))
        FROM soak.dropped_partitions" "
        SELECT name, lower, upper, upper + soak.param('max_lifetime_us')::bigint * interval '1 microsecond' AS due,
               removed_at, dropped_at, posts, app
        FROM soak.dropped_partitions WHERE $early ORDER BY removed_at"
}

check_partitions_gone() { check_gone_when_due partitions-gone-when-due soak.partition_deadlines expire_period_s partitions; }

# Every check in order.
soak_check_names=(posts_not_early packs_not_early posts_gone packs_gone sessions_not_early sessions_revoked
                  requests_settled mail_once_per_attempt mail_sent_delivered mail_well_formed
                  slots_once no_running no_runaway no_blocked_stall alerts_once leaders memory clean_shutdown)

# The core invariants: no early deletion, no lost or doubled mail, no doubled
# slot, no runaway, no blocked stall, alerts once. A soak in which one of them
# judged nothing proved nothing about it and fails, unless the run left out the
# fault kind that gives it something to judge (soak_check_needs).
soak_core_checks=(posts_not_early packs_not_early mail_once_per_attempt mail_sent_delivered slots_once no_runaway
                  no_blocked_stall alerts_once)
declare -A soak_check_needs=([no_blocked_stall]=app-surprise [alerts_once]=job-failing)

# On the partitioned layout (its own database and instance): the checks of what
# expire-content and the run history promise, and the partitions' own.
soak_partitioned_check_names=(posts_not_early packs_not_early posts_gone packs_gone partitions_not_early partitions_gone
                              slots_once no_running)
soak_partitioned_core_checks=(posts_not_early packs_not_early partitions_not_early slots_once)

# Every check, once (the self-test runs them all on its clean database).
soak_all_check_names=("${soak_check_names[@]}" partitions_not_early partitions_gone)

# soak_run_checks [INJECTED_FAULT_KINDS...]: runs every check, prints a line
# each, and returns how many failed: FAIL, ERROR, and NOT EXERCISED of a core
# invariant whose fault kind (if it needs one) was among the injected kinds.
soak_run_checks() {
    local failed=0 name code needs injected=" $* "
    for name in "${soak_check_names[@]}"; do
        code=0
        "check_$name" || code=$?
        case $code in
            0) ;;
            3)
                [[ " ${soak_core_checks[*]} " == *" $name "* ]] || continue
                needs=${soak_check_needs[$name]:-}
                if [ -n "$needs" ] && [[ "$injected" != *" $needs "* ]]; then
                    echo "                 (core invariant; this run injected no $needs fault, so it is not counted as failed)"
                    continue
                fi
                echo "                 (core invariant: a soak that judged none of it fails)"
                failed=$((failed + 1))
                ;;
            *) failed=$((failed + 1)) ;;
        esac
    done
    return "$failed"
}

# soak_run_partitioned_checks [INJECTED_FAULT_KINDS...]: the same on the partitioned
# layout's database ($soak_db set to it), each name followed by [partitioned].
soak_run_partitioned_checks() {
    local soak_check_names=("${soak_partitioned_check_names[@]}") soak_core_checks=("${soak_partitioned_core_checks[@]}")
    local soak_check_label="[partitioned]"
    soak_run_checks "$@"
}
