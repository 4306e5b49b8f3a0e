# shellcheck shell=bash
# The soak's invariants. Each check_* function runs one query against the soak
# database ($soak_db, a libpq conninfo), prints one line
#
#     PASS|FAIL  NAME  BAD of CHECKED WHAT  (note)
#
# and on FAIL up to ten offending rows, and returns 1 on FAIL. Parameters of
# the run (lifetimes, periods, t_stop) come from soak.params; see audit.sql.
# `scripts/soak --self-test` plants a violation of each one and expects FAIL.

soak_psql() { psql -X -q -v ON_ERROR_STOP=1 -P pager=off "$soak_db" "$@"; }

# soak_check NAME WHAT SUMMARY_SQL EXAMPLES_SQL
# SUMMARY_SQL returns one row: bad, checked, note. EXAMPLES_SQL lists offenders.
soak_check() {
    local name=$1 what=$2 summary=$3 examples=$4 row bad checked note
    if ! row=$(soak_psql -At -F $'\t' -c "$summary" 2>&1); then
        printf '  FAIL  %-27s the check itself failed: %s\n' "$name" "$row"
        return 1
    fi
    IFS=$'\t' read -r bad checked note <<<"$row"
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

# Every check in order; prints a line each; returns the number that failed.
soak_check_names=(posts_not_early packs_not_early posts_gone packs_gone sessions_not_early sessions_revoked
                  requests_settled mail_once_per_attempt mail_sent_delivered mail_well_formed
                  slots_once no_running leaders memory clean_shutdown)

soak_run_checks() {
    local failed=0 name
    for name in "${soak_check_names[@]}"; do
        "check_$name" || failed=$((failed + 1))
    done
    return "$failed"
}
