-- M1's starting point on top of seed-ops.sql: something for every job to do.
-- Packs and posts of every age, sessions going idle over the next minutes, reset
-- requests (real and unknown addresses), communities that need a leader.
\set ON_ERROR_STOP on
INSERT INTO packs (name, creator_id, is_admin, created_at)
SELECT 'pack ' || i, 1 + i % 2000, false, now() - (i % 72) * interval '1 hour' FROM generate_series(1, 720) i;
INSERT INTO pack_members (pack_id, user_id, joined_at)
SELECT p.id, 1 + (p.id * 13 + k) % 2000, p.created_at FROM packs p, generate_series(1, 5) k WHERE NOT p.is_admin;
INSERT INTO posts (pack_id, author_id, title, body, likes, created_at)
SELECT p.id, 1 + (i * 7) % 2000, 'post ' || i, 'body ' || md5(i::text), i % 4,
       greatest(p.created_at, now() - (i % 50) * interval '1 hour')
FROM packs p, generate_series(1, 30) i;
INSERT INTO sessions (user_id, created_at, last_seen_at)
SELECT 1 + i % 2000, now() - interval '2 hours', now() - interval '10 minutes' + (i::float8 / 2000) * interval '120 seconds'
FROM generate_series(1, 2000) i;
INSERT INTO password_reset_requests (email) SELECT 'user' || i || '@example.org' FROM generate_series(1, 20) i;
INSERT INTO password_reset_requests (email) SELECT 'nobody' || i || '@example.org' FROM generate_series(1, 10) i;
INSERT INTO communities (name, leader_id)
SELECT 'community ' || i, CASE WHEN i % 2 = 0 THEN NULL ELSE 1 + (i * 10 + 3) % 2000 END FROM generate_series(1, 100) i;
INSERT INTO community_members (community_id, user_id, joined_at)
SELECT c.id, 1 + (c.id * 10 + k) % 2000, now() - k * interval '1 day' FROM communities c, generate_series(0, 9) k;
