-- Seeds the E1/E2 data set into a freshly migrated database.
-- psql variables: posts (rows), users, packs.
--
-- Every post sits in a pack with is_admin = true, so only posts expire (packs never do).
-- likes are spread evenly over 0..150, so lifetimes spread over 24..48 h (mean 39.97 h);
-- created_at is spread evenly over the last 200 h, so 1 - 39.97/200 = ~80 % of the rows
-- are past their deadline, ~12 % are younger than 24 h, and ~8 % are 24-48 h old and
-- waiting for their popularity-extended deadline (the E2 trap).
-- Rows are inserted oldest first, as an app writes them: heap order follows created_at.
\set ON_ERROR_STOP on
SET session_replication_role = replica;   -- no FK checks or NOTIFY triggers while loading
SET maintenance_work_mem = '256MB';

INSERT INTO users (email, display_name, password_hash)
SELECT 'user' || i || '@example.org', 'User ' || i, '$2b$04$benchbenchbenchbenchbeuQJz2Jb5ssm2tLkPAZGGwhBL.1S3Kq2'
FROM generate_series(1, :users) i;

INSERT INTO packs (name, creator_id, is_admin, created_at)
SELECT 'admin pack ' || i, 1 + i % :users, true, now() - interval '300 days'
FROM generate_series(1, :packs) i;

-- Load without the secondary indexes (whatever the migrations define), then rebuild them:
-- several times faster than maintaining them row by row.
CREATE TEMP TABLE bench_post_indexes AS
SELECT indexname, indexdef FROM pg_indexes
WHERE schemaname = 'public' AND tablename = 'posts'
  AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = 'public.posts'::regclass);
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT indexname FROM bench_post_indexes LOOP
        EXECUTE format('DROP INDEX public.%I', r.indexname);
    END LOOP;
END $$;

INSERT INTO posts (pack_id, author_id, title, body, likes, created_at)
SELECT 1 + i % :packs,
       1 + (i::bigint * 7919) % :users,
       'post ' || i,
       'A post about something nearby, number ' || i || '. ' || md5(i::text) || ' ' || md5((i * 31)::text),
       floor(random() * 151)::int,
       now() - interval '200 hours' + (i::float8 / :posts) * interval '200 hours' + random() * interval '1 second'
FROM generate_series(1, :posts) i;

DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT indexdef FROM bench_post_indexes LOOP
        EXECUTE r.indexdef;
    END LOOP;
END $$;
SELECT setval(pg_get_serial_sequence('public.posts', 'id'), (SELECT max(id) FROM posts));
SELECT setval(pg_get_serial_sequence('public.users', 'id'), (SELECT max(id) FROM users));
SELECT setval(pg_get_serial_sequence('public.packs', 'id'), (SELECT max(id) FROM packs));
