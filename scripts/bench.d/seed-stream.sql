-- Seeds ST's stream in steady state into a freshly migrated database, as of epoch :at:
-- what an app writing :rate posts a second, with caretaker keeping up, has left in its
-- table. Every post of the last :max_s + :keep_s seconds is written (:keep_s: as far back
-- as a partition still attached may reach, a "day"), then those past their lifetime are
-- deleted and the table vacuumed: their space stays in the table (reusable in the single
-- table; in a partition until it is dropped), as a stream's deletions leave it. Those
-- whose lifetime ends in the :quiet seconds after :at go too (the app's baseline, with
-- nothing due). likes spread evenly over 0..150 (lifetimes :min_s..:max_s seconds, as
-- seed-posts.sql), created_at evenly spaced at :rate a second, inserted oldest first as
-- an app writes them. From :at + :quiet on, posts come due at :rate a second, as many as
-- an app writing from :at on writes (its posts come due from :at + :min_s on and take
-- over from the seeded ones).
-- psql variables: rate, min_s, max_s, keep_s, at, quiet, users, packs.
\set ON_ERROR_STOP on
SET session_replication_role = replica;   -- no FK checks or NOTIFY triggers while loading
SET maintenance_work_mem = '256MB';

INSERT INTO users (email, display_name, password_hash)
SELECT 'user' || i || '@example.org', 'User ' || i, '$2b$04$benchbenchbenchbenchbeuQJz2Jb5ssm2tLkPAZGGwhBL.1S3Kq2'
FROM generate_series(1, :users) i;

INSERT INTO packs (name, creator_id, is_admin, created_at)
SELECT 'admin pack ' || i, 1 + i % :users, true, now() - interval '300 days'
FROM generate_series(1, :packs) i;

INSERT INTO posts (pack_id, author_id, title, body, likes, created_at)
SELECT 1 + i % :packs, 1 + (i * 7919) % :users, 'post ' || i,
       'A post about something nearby, number ' || i || '. ' || md5(i::text) || ' ' || md5((i * 31)::text),
       floor(random() * 151)::int, to_timestamp(:at - :max_s - :keep_s + i::float8 / :rate)
FROM generate_series(1, (:rate * (:max_s + :keep_s))::bigint) i;

DELETE FROM posts
WHERE created_at + (:min_s + (:max_s - :min_s) * least(1.0, greatest(likes, 0) / 100.0)) * interval '1 second'
      <= to_timestamp(:at + :quiet);

SELECT setval(pg_get_serial_sequence('public.posts', 'id'), (SELECT max(id) FROM posts));
SELECT setval(pg_get_serial_sequence('public.users', 'id'), (SELECT max(id) FROM users));
SELECT setval(pg_get_serial_sequence('public.packs', 'id'), (SELECT max(id) FROM packs));
