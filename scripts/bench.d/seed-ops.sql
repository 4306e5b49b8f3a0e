-- The base of the daemon rows (M1, W1, L1, P1, S1): a migrated database with users.
-- psql variables: users.
\set ON_ERROR_STOP on
SET session_replication_role = replica;
INSERT INTO users (email, display_name, password_hash)
SELECT 'user' || i || '@example.org', 'User ' || i, '$2b$04$benchbenchbenchbenchbeuQJz2Jb5ssm2tLkPAZGGwhBL.1S3Kq2'
FROM generate_series(1, :users) i;
INSERT INTO packs (name, creator_id, is_admin, created_at)
SELECT 'admin pack ' || i, i, true, now() - interval '300 days' FROM generate_series(1, 10) i;
SELECT setval(pg_get_serial_sequence('public.users', 'id'), (SELECT max(id) FROM users));
SELECT setval(pg_get_serial_sequence('public.packs', 'id'), (SELECT max(id) FROM packs));
