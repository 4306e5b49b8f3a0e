-- One second of app activity during M1's busy phase (psql variable: tick).
-- Every job finds fresh work: a reset request for a new address, posts and
-- sessions already past their deadline, a community whose leader leaves.
\set ON_ERROR_STOP on
INSERT INTO password_reset_requests (email) VALUES ('user' || (100 + :tick) || '@example.org');
INSERT INTO posts (pack_id, author_id, title, body, likes, created_at)
SELECT 1 + i % 10, 1 + i, 'old post', 'already past its deadline', 0, now() - interval '49 hours' FROM generate_series(1, 50) i;
INSERT INTO sessions (user_id, created_at, last_seen_at)
SELECT 1 + (:tick * 20 + i) % 2000, now() - interval '1 hour', now() - interval '11 minutes' FROM generate_series(1, 20) i;
DELETE FROM community_members WHERE (community_id, user_id) IN (
    SELECT c.id, c.leader_id FROM communities c WHERE c.leader_id IS NOT NULL AND c.archived_at IS NULL ORDER BY c.id LIMIT 1);
