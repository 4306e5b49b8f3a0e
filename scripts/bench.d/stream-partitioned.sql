-- ST's partitioned layout, its partitions: the app makes them ahead of time, as
-- pg_partman's premake would (caretaker never creates partitions), each named by its
-- lower bound, no DEFAULT partition. The tables come first from
-- `caretaker-testkit partitioned-app-schema` (the reference app schema with posts
-- partitioned by range on created_at), and `caretaker migrate` adds the rest.
-- psql variables: first, count (partitions), length (seconds each), origin (epoch
-- seconds of partition 0's lower bound).
\set ON_ERROR_STOP on
SELECT format('CREATE TABLE %I PARTITION OF posts FOR VALUES FROM (%L) TO (%L)',
              'posts_p' || to_char(to_timestamp(:origin + i * :length) AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MI'),
              to_timestamp(:origin + i * :length), to_timestamp(:origin + (i + 1) * :length))
FROM generate_series(:first, :first + :count - 1) i
\gexec
