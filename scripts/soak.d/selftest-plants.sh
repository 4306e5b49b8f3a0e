# shellcheck shell=bash
# --self-test: one planted violation per line (at least one for every term of
# every check's condition), "CHECK<TAB>WHAT<TAB>SQL". Each is
# applied to a fresh copy of the clean database (selftest-clean.sql), and CHECK
# must then report FAIL.
soak_plants=$(cat <<'PLANTS'
posts_not_early	a post deleted 1 µs before its deadline	UPDATE soak.deleted_posts SET deleted_at = deleted_at - interval '1 microsecond' WHERE id = 10
posts_not_early	a young post deleted without its pack	UPDATE soak.deleted_posts SET txid = 9999 WHERE id = 11
packs_not_early	a pack deleted with one more like than its deadline allowed	UPDATE soak.deleted_packs SET likes = likes + 1 WHERE id = 6
packs_not_early	an admin pack deleted	UPDATE soak.deleted_packs SET is_admin = true WHERE id = 6
posts_gone	a post 200 s old with no likes still there	INSERT INTO public.posts (pack_id, likes, created_at) VALUES (1, 0, now() - interval '200 seconds')
posts_gone	a post deleted 5 s after its deadline while calm	UPDATE soak.deleted_posts SET deleted_at = deleted_at + interval '5 seconds' WHERE id = 10
packs_gone	a pack deleted 5 s after its deadline while calm	UPDATE soak.deleted_packs SET deleted_at = deleted_at + interval '5 seconds' WHERE id = 6
packs_gone	a pack 200 s old with no members still there	INSERT INTO public.packs (name, created_at) VALUES ('old', now() - interval '200 seconds')
packs_gone	a pack due since its last post expired 10 s before the stop	UPDATE soak.deleted_posts SET deleted_at = deleted_at - interval '9 seconds' WHERE id = 12
sessions_not_early	a session revoked 1 µs before its idle deadline	UPDATE public.sessions SET revoked_at = revoked_at - interval '1 microsecond' WHERE revoked_reason = 'inactivity'
sessions_revoked	a session idle for 60 s at the stop still active	INSERT INTO public.sessions (user_id, last_seen_at) VALUES (3, soak.param('t_stop')::timestamptz - interval '60 seconds')
sessions_revoked	a session revoked 5 s after its idle deadline while calm	UPDATE public.sessions SET revoked_at = revoked_at + interval '5 seconds' WHERE revoked_reason = 'inactivity'
requests_settled	a request left pending although due a minute ago	INSERT INTO public.password_reset_requests (email, next_attempt_at) VALUES ('a@example.org', now() - interval '1 minute')
mail_once_per_attempt	a duplicate mail for a request sent in one attempt	INSERT INTO soak.mail SELECT * FROM soak.mail WHERE rcpt = 'a@example.org'
mail_once_per_attempt	a mail to an address nobody asked for	INSERT INTO soak.mail VALUES (now(), 'c2@example.org', '<3@x>', 'Your temporary password', true)
mail_sent_delivered	a request marked sent whose mail never arrived	DELETE FROM soak.mail WHERE rcpt = 'a@example.org'
mail_well_formed	a message without the password line	UPDATE soak.mail SET has_password = false WHERE rcpt = 'B@Example.org'
mail_well_formed	a message with another subject	UPDATE soak.mail SET subject = 'Welcome back' WHERE rcpt = 'a@example.org'
slots_once	a slot that ran twice	INSERT INTO caretaker.job_runs (job, trigger, status, slot, host, pid) VALUES ('expire-content', 'catch-up', 'succeeded', '2030-01-01 00:00:03+00', 'h', 3)
no_running	a run left running	INSERT INTO caretaker.job_runs (job, trigger, status, host, pid) VALUES ('prune', 'schedule', 'running', 'h', 4)
leaders	a leader who left the community	DELETE FROM public.community_members WHERE community_id = 1 AND user_id = 1
leaders	a leader whose account is deleted	UPDATE public.users SET deleted_at = now() WHERE id = 1
leaders	an active community without a leader	INSERT INTO public.communities (name) VALUES ('leaderless')
memory	an instance that grew 20% after warm-up	UPDATE soak.instances SET rss_end_kib = 12000 WHERE name = 'a'
memory	an instance never restarted whose RSS at the end was not taken	UPDATE soak.instances SET rss_end_kib = NULL WHERE name = 'a'
memory	an instance never restarted whose warm RSS was not taken	UPDATE soak.instances SET rss_warm_kib = NULL WHERE name = 'a'
memory	an instance that shrank 21% after warm-up	UPDATE soak.instances SET rss_end_kib = 7900 WHERE name = 'a'
clean_shutdown	an instance that did not exit after SIGTERM	UPDATE soak.instances SET exit_status = NULL WHERE name = 'b'
no_runaway	the logout-inactive spin: 30 runs in a second with no session coming due	INSERT INTO caretaker.job_runs (job, trigger, status, started_at, host, pid) SELECT 'logout-inactive', 'schedule', 'succeeded', now() - interval '5 seconds' + i * interval '30 milliseconds', 'h', 7 FROM generate_series(1, 30) i
no_runaway	the same spin recorded as issue 11 records deadline wake-ups ('deadline')	INSERT INTO caretaker.job_runs (job, trigger, status, started_at, host, pid) SELECT 'logout-inactive', 'deadline', 'succeeded', now() - interval '5 seconds' + i * interval '30 milliseconds', 'h', 7 FROM generate_series(1, 30) i
no_runaway	a failing job rerun as attempt 2 twenty times	INSERT INTO caretaker.job_runs (job, trigger, status, attempt, started_at, host, pid) SELECT 'soak-flaky', 'retry', 'failed', 2, now() - interval '5 seconds' + i * interval '100 milliseconds', 'h', 5 FROM generate_series(1, 20) i
no_runaway	12 NOTIFY runs with no NOTIFY sent	INSERT INTO caretaker.job_runs (job, trigger, status, started_at, host, pid) SELECT 'send-temp-passwords', 'notify', 'succeeded', now() - interval '5 seconds' + i * interval '100 milliseconds', 'h', 8 FROM generate_series(1, 12) i
no_runaway	12 runs of 12 different expire-content slots in one 10 s window (4 slots at most)	INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, host, pid) SELECT 'expire-content', 'schedule', 'succeeded', timestamptz '2030-02-01 00:00:00+00' + i * interval '3 seconds', date_trunc('minute', now()) - interval '1 minute' + i * interval '100 milliseconds', 'h', 9 FROM generate_series(1, 12) i
no_runaway	5 runs of a kind nothing in the soak starts (manual)	INSERT INTO caretaker.job_runs (job, trigger, status, started_at, host, pid) SELECT 'prune', 'manual', 'succeeded', date_trunc('minute', now()) - interval '1 minute' + i * interval '100 milliseconds', 'h', 10 FROM generate_series(1, 5) i
no_blocked_stall	a post that came due while another was protected went 20 s late	UPDATE soak.deleted_posts SET deleted_at = deleted_at + interval '20 seconds' WHERE id = 10
no_blocked_stall	a session that came due while another was frozen left active	UPDATE public.sessions SET revoked_at = NULL, revoked_reason = NULL WHERE revoked_reason = 'inactivity'
no_blocked_stall	a pack that came due while another was on hold went 20 s late	UPDATE soak.deleted_packs SET deleted_at = deleted_at + interval '20 seconds' WHERE id = 6
alerts_once	a second alert for one incident	INSERT INTO soak.alert_mail VALUES (now() - interval '25 seconds', 'ops@example.org', 'caretaker: soak-flaky is failing', 'again')
alerts_once	no recovery mail although the job succeeded again	DELETE FROM soak.alert_mail WHERE subject LIKE '%recovered'
alerts_once	an alert that names no job	INSERT INTO soak.alert_mail VALUES (now() - interval '10 seconds', 'ops@example.org', 'caretaker: something is failing', 'no job named')
alerts_once	a recovery of a job that was never alerted on	INSERT INTO soak.alert_mail VALUES (now() - interval '10 seconds', 'ops@example.org', 'caretaker: expire-content recovered', 'expire-content succeeded again')
alerts_once	a second soak-flaky incident with a failed run and no alert	INSERT INTO soak.incidents (job, since, until) VALUES ('soak-flaky', now() - interval '12 seconds', now() - interval '8 seconds'); INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, finished_at, host, pid) VALUES ('soak-flaky', 'schedule', 'failed', '2030-01-01 00:00:45+00', now() - interval '11 seconds', now(), 'h', 5)
alerts_once	an incident with failed runs and no alert	DELETE FROM soak.alert_mail WHERE subject LIKE '%failing'
partitions_not_early	a partition detached 1 µs before every post it could hold was past max_lifetime	UPDATE soak.dropped_partitions SET removed_at = removed_at - interval '1 microsecond' WHERE name = 'posts_p1'
partitions_gone	a partition past max_lifetime 20 s before the stop still there	INSERT INTO soak.partitions (name, lower, upper) VALUES ('posts_p3', soak.param('t_stop')::timestamptz - interval '120 seconds', soak.param('t_stop')::timestamptz - interval '110 seconds')
partitions_gone	a partition dropped 5 s after it came due while calm	UPDATE soak.dropped_partitions SET dropped_at = dropped_at + interval '5 seconds' WHERE name = 'posts_p1'
posts_not_early	a partition dropped (a real DROP TABLE, through the audit's event trigger) with a post in it 0.5 s before its deadline	INSERT INTO soak.partitions (name, lower, upper) VALUES ('posts_px', now() - interval '31 seconds', now() - interval '29 seconds'); INSERT INTO soak.post_shadow (id, pack_id, created_at, likes) VALUES (50, 1, now() - interval '29500 milliseconds', 0); CREATE TABLE public.posts_px (); DROP TABLE public.posts_px
partitions_not_early	a partition dropped on time (a real DROP TABLE) whose DETACH, logged 10 s before, came 5 s early	INSERT INTO soak.partitions (name, lower, upper) VALUES ('posts_py', now() - interval '105 seconds', now() - interval '95 seconds'); INSERT INTO soak.ddl_log (at, query) VALUES (now() - interval '10 seconds', 'ALTER TABLE public.posts DETACH PARTITION public.posts_py CONCURRENTLY'); CREATE TABLE public.posts_py (); DROP TABLE public.posts_py
PLANTS
)
