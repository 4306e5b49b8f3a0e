-- The soak's partitioned layout (database soak_part), after `caretaker migrate` and
-- audit.sql: the shadow of every post that the audit of dropped partitions reads, and
-- soak.create_partitions(), with which the soak makes the partitions as the app would
-- (caretaker never creates one). Its posts are partitioned by range on created_at,
-- ten seconds a partition, with no DEFAULT partition, so that retire_partitions
-- detaches them CONCURRENTLY and a partition comes due every ten seconds.
SET client_min_messages = warning;

DROP TRIGGER IF EXISTS soak_shadow_post ON public.posts;
CREATE TRIGGER soak_shadow_post AFTER INSERT OR UPDATE OR DELETE ON public.posts
    FOR EACH ROW EXECUTE FUNCTION soak.shadow_post();

-- Partitions of `width` covering [first, last), aligned to the epoch, named
-- posts_p<epoch seconds of the lower bound>; returns how many it made.
CREATE OR REPLACE FUNCTION soak.create_partitions(first timestamptz, last timestamptz, width interval) RETURNS int
    LANGUAGE plpgsql AS $$
    DECLARE
        step float8 := extract(epoch FROM width);
        lower timestamptz := to_timestamp(floor(extract(epoch FROM first) / step) * step);
        made int := 0;
        name text;
    BEGIN
        WHILE lower < last LOOP
            name := 'posts_p' || extract(epoch FROM lower)::bigint;
            IF to_regclass('public.' || name) IS NULL THEN
                EXECUTE format('CREATE TABLE public.%I PARTITION OF public.posts FOR VALUES FROM (%L) TO (%L)',
                               name, lower, lower + width);
                INSERT INTO soak.partitions (name, lower, upper) VALUES (name, lower, lower + width);
                made := made + 1;
            END IF;
            lower := lower + width;
        END LOOP;
        RETURN made;
    END $$;
