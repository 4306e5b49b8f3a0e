-- Demo data for scripts/demo: times are relative to the database clock.
INSERT INTO users (id, email, display_name, password_hash, created_at, deleted_at) VALUES
    (1, 'alice@example.org', 'Alice', crypt('old password', gen_salt('bf', 4)), now() - interval '90 days', NULL),
    (2, 'bob@example.org',   'Bob',   'x', now() - interval '80 days', NULL),
    (3, 'carol@example.org', 'Carol', 'x', now() - interval '70 days', NULL),
    (4, 'dave@example.org',  'Dave',  'x', now() - interval '60 days', now() - interval '1 day');
SELECT setval(pg_get_serial_sequence('users', 'id'), 10) \g /dev/null

-- Packs: (name, age, admin, members) — lifetime is 24 h plus up to 24 h more with popularity.
INSERT INTO packs (id, name, created_at, is_admin) VALUES
    (1, 'fresh pack (2h old)',                      now() - interval '2 hours',  false),
    (2, 'quiet pack (25h old, nobody joined)',      now() - interval '25 hours', false),
    (3, 'popular pack (30h old, 3 members+likes)',  now() - interval '30 hours', false),
    (4, 'old popular pack (49h old)',               now() - interval '49 hours', false),
    (5, 'admin announcements (400 days old)',       now() - interval '400 days', true);
SELECT setval(pg_get_serial_sequence('packs', 'id'), 10) \g /dev/null
INSERT INTO pack_members (pack_id, user_id) VALUES (3, 1), (3, 2), (3, 3), (4, 1), (4, 2);

-- Posts: likes stretch a post's life from 24 h (0 likes) to 48 h (100+ likes).
INSERT INTO posts (pack_id, title, likes, created_at) VALUES
    (1, 'new post',                       0,   now() - interval '1 hour'),
    (2, 'post in a quiet pack',           0,   now() - interval '20 hours'),
    (3, 'liked post in a popular pack',   60,  now() - interval '29 hours'),
    (4, 'post in an old pack',            200, now() - interval '40 hours'),
    (5, 'announcement, 23h old',          0,   now() - interval '23 hours'),
    (5, 'announcement, 25h old',          0,   now() - interval '25 hours'),
    (5, 'liked announcement, 30h old',    50,  now() - interval '30 hours'),
    (5, 'liked announcement, 40h old',    50,  now() - interval '40 hours'),
    (5, 'very liked announcement, 47h',   150, now() - interval '47 hours'),
    (5, 'very liked announcement, 49h',   150, now() - interval '49 hours');

-- Sessions: one active, two idle past the 10-minute timeout, one already revoked.
INSERT INTO sessions (user_id, last_seen_at, revoked_at, revoked_reason) VALUES
    (1, now() - interval '2 minutes', NULL, NULL),
    (2, now() - interval '11 minutes', NULL, NULL),
    (3, now() - interval '3 hours', NULL, NULL),
    (1, now() - interval '2 days', now() - interval '2 days', 'logout');

-- Communities: one whose leader left, one whose leader was deleted, one healthy.
INSERT INTO communities (id, name, leader_id, successor_id) VALUES
    (1, 'Hiking club (leader left)', 2, 3),
    (2, 'Chess club (leader deleted)', 4, NULL),
    (3, 'Book club (healthy)', 1, NULL);
SELECT setval(pg_get_serial_sequence('communities', 'id'), 10) \g /dev/null
INSERT INTO community_members (community_id, user_id, joined_at) VALUES
    (1, 1, now() - interval '30 days'), (1, 3, now() - interval '10 days'),
    (2, 4, now() - interval '40 days'), (2, 2, now() - interval '20 days'), (2, 1, now() - interval '20 days'),
    (3, 1, now() - interval '5 days');

-- "Forgot password?": one real account, one unknown address.
INSERT INTO password_reset_requests (email) VALUES ('Alice@Example.org'), ('nobody@example.org');
