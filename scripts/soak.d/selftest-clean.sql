-- --self-test: a tiny database on which every check must PASS. Each planted
-- violation (selftest-plants.sh) then starts from a copy of it.
INSERT INTO soak.params (key, value) VALUES
    ('min_lifetime_us', '30000000'), ('max_lifetime_us', '90000000'),
    ('post_full_popularity', '20'), ('pack_full_popularity', '30'),
    ('expire_period_s', '3'), ('logout_period_s', '2'), ('send_period_s', '2'),
    ('idle_timeout_s', '20'), ('latency_margin_s', '1'),
    ('t_stop', now()::text), ('calm_since', (now() - interval '1 hour')::text);

INSERT INTO public.users (id, email, password_hash) VALUES
    (1, 'a@example.org', 'x'), (2, 'B@Example.org', 'x'), (3, 'c@example.org', 'x');

-- A pack and a post that are not due yet.
INSERT INTO public.packs (id, name, created_at) VALUES (1, 'young pack', now());
INSERT INTO public.posts (id, pack_id, likes, created_at) VALUES (1, 1, 0, now());

-- Deleted exactly at their deadlines: a post (likes 4: L = 30 + 60 * 4/20 = 42 s),
-- a pack (3 members, no likes: L = 30 + 60 * 3/30 = 36 s) and, with the pack in the
-- same transaction, a young post of it (judged with its pack, not on its own).
INSERT INTO soak.deleted_posts (id, pack_id, created_at, likes, deleted_at, txid, depth) VALUES
    (10, 5, now() - interval '100 seconds', 4, now() - interval '58 seconds', 1001, 1),
    (11, 6, now() - interval '69 seconds', 0, now() - interval '64 seconds', 1002, 2);
INSERT INTO soak.deleted_packs (id, created_at, is_admin, members, likes, deleted_at, txid) VALUES
    (6, now() - interval '100 seconds', false, 3, 0, now() - interval '64 seconds', 1002);

-- Sessions: one revoked exactly at its idle deadline, one active.
INSERT INTO public.sessions (user_id, last_seen_at, revoked_at, revoked_reason) VALUES
    (1, now() - interval '60 seconds', now() - interval '40 seconds', 'inactivity');
INSERT INTO public.sessions (user_id, last_seen_at) VALUES (2, now());

-- Requests: sent once; sent after a retry (two attempts, one message arrived);
-- ignored; pending behind a backoff that ends after t_stop.
INSERT INTO public.password_reset_requests (email, status, attempts, next_attempt_at, sent_at) VALUES
    ('a@example.org', 'sent', 1, now() - interval '1 minute', now()),
    ('b@example.org', 'sent', 2, now() - interval '1 minute', now()),
    ('nobody@example.org', 'ignored', 0, now(), NULL),
    ('c@example.org', 'pending', 1, now() + interval '1 minute', NULL);
INSERT INTO soak.mail (received_at, rcpt, message_id, subject, has_password) VALUES
    (now(), 'a@example.org', '<1@x>', 'Your temporary password', true),
    (now(), 'B@Example.org', '<2@x>', 'Your temporary password', true);

INSERT INTO caretaker.job_runs (job, trigger, status, slot, started_at, finished_at, host, pid) VALUES
    ('expire-content', 'schedule', 'succeeded', '2030-01-01 00:00:03+00', now(), now(), 'h', 1),
    ('expire-content', 'schedule', 'succeeded', '2030-01-01 00:00:06+00', now(), now(), 'h', 2),
    ('expire-content', 'retry', 'interrupted', NULL, now(), now(), 'h', 1);

INSERT INTO public.communities (id, name, leader_id) VALUES (1, 'led', 1);
INSERT INTO public.community_members (community_id, user_id) VALUES (1, 1), (1, 2);
INSERT INTO public.communities (id, name, archived_at) VALUES (2, 'archived, nobody left', now());

INSERT INTO soak.instances (name, mode, restarts, rss_warm_kib, rss_end_kib, exit_status) VALUES
    ('a', 'normal', 0, 10000, 10900, 0),
    ('b', 'normal', 2, 10000, 20000, 0);

-- A pack whose deadline at today's popularity passed 10 s ago, but only became
-- due 1 s ago, when its last post expired on its own (popularity went down).
INSERT INTO public.packs (id, name, created_at) VALUES (7, 'lost its post', now() - interval '40 seconds');
INSERT INTO soak.deleted_posts (id, pack_id, created_at, likes, deleted_at, txid, depth) VALUES
    (12, 7, now() - interval '34 seconds', 1, now() - interval '1 second', 1003, 1);

-- Rows above took explicit ids: move the identity sequences past them.
SELECT setval(pg_get_serial_sequence(format('public.%I', t), 'id'), 100)
FROM unnest(ARRAY['users', 'packs', 'posts', 'communities']) AS t;

-- Issue 18. The schedule the runaway bound reads.
INSERT INTO soak.schedule (job, period_s, max_retries, notify_channel, deadline, since) VALUES
    ('expire-content', 3, 3, NULL, false, now() - interval '1 hour'),
    ('logout-inactive', 2, 3, NULL, true, now() - interval '1 hour'),
    ('send-temp-passwords', 2, 3, 'caretaker_send_temp_passwords', false, now() - interval '1 hour'),
    ('soak-flaky', 15, 2, NULL, false, now() - interval '1 hour');
-- Within their causes: a deadline wake-up for the session that came due 40 s
-- ago, a run for a NOTIFY, a failed soak-flaky run and its retry.
INSERT INTO caretaker.job_runs (job, trigger, status, slot, attempt, started_at, finished_at, host, pid) VALUES
    ('logout-inactive', 'schedule', 'succeeded', NULL, 1, now() - interval '39 seconds', now(), 'h', 5),
    ('send-temp-passwords', 'notify', 'succeeded', NULL, 1, now() - interval '30 seconds', now(), 'h', 5),
    ('soak-flaky', 'schedule', 'failed', '2030-01-01 00:00:15+00', 1, now() - interval '29 seconds', now(), 'h', 5),
    ('soak-flaky', 'retry', 'failed', NULL, 2, now() - interval '19 seconds', now(), 'h', 5),
    ('soak-flaky', 'schedule', 'succeeded', '2030-01-01 00:00:30+00', 1, now() - interval '14 seconds', now(), 'h', 5);
INSERT INTO soak.notifies (channel, txid, at) VALUES ('caretaker_send_temp_passwords', 1, now() - interval '30 seconds');

-- A post protected (referenced) from 70 s to 40 s ago; post 10 came due
-- meanwhile (58 s ago) and went at its deadline.
INSERT INTO soak.protected (kind, id, how, since, until) VALUES
    ('post', '99', 'referenced by post_reports', now() - interval '70 seconds', now() - interval '40 seconds');
-- A pack on hold from 75 s to 45 s ago; pack 6 came due meanwhile (64 s ago)
-- and went at its deadline.
INSERT INTO soak.protected (kind, id, how, since, until) VALUES
    ('pack', '98', 'on hold (trigger)', now() - interval '75 seconds', now() - interval '45 seconds');
-- A session protected (frozen) from 50 s to 20 s ago; the other session came
-- due 40 s ago and was revoked then.
INSERT INTO soak.protected (kind, id, how, since, until) VALUES
    ('session', '00000000-0000-0000-0000-000000000099', 'frozen (CHECK)', now() - interval '50 seconds', now() - interval '20 seconds');

-- Alerts on: one soak-flaky incident (30 s to 20 s ago), one alert, one recovery.
INSERT INTO soak.params (key, value) VALUES ('alerts_to', 'ops@example.org');
INSERT INTO soak.incidents (job, since, until) VALUES ('soak-flaky', now() - interval '30 seconds', now() - interval '20 seconds');
INSERT INTO soak.alert_mail (received_at, rcpt, subject, excerpt) VALUES
    (now() - interval '29 seconds', 'ops@example.org', 'caretaker: soak-flaky is failing', 'soak-flaky failed: ...'),
    (now() - interval '14 seconds', 'ops@example.org', 'caretaker: soak-flaky recovered', 'soak-flaky succeeded again');

-- The partitioned layout: a partition of posts dropped exactly when every post it
-- could hold was past max_lifetime (its upper bound 190 s ago, dropped 100 s ago, 90 s
-- after), detached in an earlier run (its DETACH began exactly then); and the
-- partition of the last 10 s, not due yet.
INSERT INTO soak.partitions (name, lower, upper) VALUES
    ('posts_p1', now() - interval '200 seconds', now() - interval '190 seconds'),
    ('posts_p2', now() - interval '10 seconds', now());
INSERT INTO soak.dropped_partitions (name, lower, upper, removed_at, dropped_at, txid, posts) VALUES
    ('posts_p1', now() - interval '200 seconds', now() - interval '190 seconds',
     now() - interval '100 seconds', now() - interval '97 seconds', 1004, 0);
