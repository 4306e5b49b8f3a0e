-- The soak's own schema, next to caretaker's and the app's: parameters of the
-- run, an audit trail of every deleted post and pack, the messages the SMTP
-- server received, per-instance figures, and the injected faults. The checks
-- (checks.sql) read only this schema and the app's tables.
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS soak;

-- Settings the checks need (lifetimes in microseconds, periods in seconds,
-- t_stop = the database clock just before the instances were told to stop).
CREATE TABLE IF NOT EXISTS soak.params (
    key    text PRIMARY KEY,
    value  text NOT NULL
);

CREATE OR REPLACE FUNCTION soak.param(name text) RETURNS text
    LANGUAGE sql STABLE AS $$ SELECT value FROM soak.params WHERE key = name $$;

-- L(p) exactly as SPEC §3 and caretaker compute it (float8 maths, microseconds).
CREATE OR REPLACE FUNCTION soak.lifetime(popularity bigint, full_popularity float8) RETURNS interval
    LANGUAGE sql STABLE AS $$
        SELECT ((soak.param('min_lifetime_us')::bigint
                 + (soak.param('max_lifetime_us')::bigint - soak.param('min_lifetime_us')::bigint)
                   * least(1.0, greatest(popularity, 0)::float8 / full_popularity))
                * interval '1 microsecond')
    $$;

-- One row per deleted post: what it looked like when it went, and who took it
-- (txid; depth > 1 means the delete cascaded from its pack).
CREATE TABLE IF NOT EXISTS soak.deleted_posts (
    id          bigint NOT NULL,
    pack_id     bigint NOT NULL,
    created_at  timestamptz NOT NULL,
    likes       integer NOT NULL,
    deleted_at  timestamptz NOT NULL,          -- now() of the deleting transaction
    txid        bigint NOT NULL,
    depth       integer NOT NULL,
    app         text,
    logged_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- One row per deleted pack, with its popularity counted before it is gone
-- (members + likes of its posts: a BEFORE trigger runs before the cascade).
CREATE TABLE IF NOT EXISTS soak.deleted_packs (
    id          bigint NOT NULL,
    created_at  timestamptz NOT NULL,
    is_admin    boolean NOT NULL,
    members     bigint NOT NULL,
    likes       bigint NOT NULL,
    deleted_at  timestamptz NOT NULL,
    txid        bigint NOT NULL,
    app         text,
    logged_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE OR REPLACE FUNCTION soak.audit_post_delete() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO soak.deleted_posts (id, pack_id, created_at, likes, deleted_at, txid, depth, app)
        VALUES (OLD.id, OLD.pack_id, OLD.created_at, OLD.likes, now(), txid_current(), pg_trigger_depth(),
                current_setting('application_name', true));
        RETURN OLD;
    END $$;

CREATE OR REPLACE FUNCTION soak.audit_pack_delete() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
        member_count bigint;
        like_count bigint;
    BEGIN
        SELECT count(*) INTO member_count FROM public.pack_members m WHERE m.pack_id = OLD.id;
        SELECT coalesce(sum(x.likes), 0) INTO like_count FROM public.posts x WHERE x.pack_id = OLD.id;
        INSERT INTO soak.deleted_packs (id, created_at, is_admin, members, likes, deleted_at, txid, app)
        VALUES (OLD.id, OLD.created_at, OLD.is_admin, member_count, like_count, now(), txid_current(),
                current_setting('application_name', true));
        RETURN OLD;
    END $$;

DROP TRIGGER IF EXISTS soak_audit_post_delete ON public.posts;
CREATE TRIGGER soak_audit_post_delete BEFORE DELETE ON public.posts
    FOR EACH ROW EXECUTE FUNCTION soak.audit_post_delete();
DROP TRIGGER IF EXISTS soak_audit_pack_delete ON public.packs;
CREATE TRIGGER soak_audit_pack_delete BEFORE DELETE ON public.packs
    FOR EACH ROW EXECUTE FUNCTION soak.audit_pack_delete();

-- Every message the SMTP server accepted, one row per recipient (loaded at the end).
CREATE TABLE IF NOT EXISTS soak.mail (
    received_at   timestamptz NOT NULL,
    rcpt          text NOT NULL,
    message_id    text,
    subject       text,
    has_password  boolean NOT NULL
);

-- Each caretaker instance: mode, restarts (kill -9), RSS after warm-up and at
-- the end (KiB, from /proc), exit status after the final SIGTERM.
CREATE TABLE IF NOT EXISTS soak.instances (
    name          text PRIMARY KEY,
    mode          text NOT NULL,
    restarts      integer NOT NULL DEFAULT 0,
    rss_warm_kib  bigint,
    rss_end_kib   bigint,
    exit_status   integer,
    error_lines   integer
);

-- The processes each instance ran as (one more after every kill -9).
CREATE TABLE IF NOT EXISTS soak.instance_pids (
    name  text NOT NULL,
    pid   integer NOT NULL
);

-- Faults injected (one row each).
CREATE TABLE IF NOT EXISTS soak.faults (
    at      timestamptz NOT NULL,
    kind    text NOT NULL,
    detail  text
);

-- Rows written by the operator SQL job of the soak (one per run).
CREATE TABLE IF NOT EXISTS soak.heartbeat (
    id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at  timestamptz NOT NULL DEFAULT now(),
    app text DEFAULT current_setting('application_name', true)
);

-- When each post, pack and idle session came due and when it went (NULL: still
-- there), for the "gone when due" checks and the lateness figures. They need
-- soak.params; the app tables exist once `caretaker migrate` ran.
-- Posts: on their own only (those deleted with their pack are judged with it).
CREATE OR REPLACE VIEW soak.post_deadlines AS
    SELECT x.id, x.created_at + soak.lifetime(x.likes, soak.param('post_full_popularity')::float8) AS due,
           NULL::timestamptz AS gone
    FROM public.posts x
    UNION ALL
    SELECT d.id, d.created_at + soak.lifetime(d.likes, soak.param('post_full_popularity')::float8), d.deleted_at
    FROM soak.deleted_posts d
    WHERE NOT EXISTS (SELECT 1 FROM soak.deleted_packs p WHERE p.id = d.pack_id AND p.txid = d.txid);

-- Packs (admin packs never come due). Members only join and likes only grow in
-- the soak, but a pack's popularity drops when one of its posts expires on its
-- own, which can move its deadline into the past at that moment: a pack is due
-- from the later of its deadline at its final popularity and the last expiry of
-- one of its posts.
CREATE OR REPLACE VIEW soak.pack_deadlines AS
    SELECT p.id, greatest(
               p.created_at + soak.lifetime(
                   (SELECT count(*) FROM public.pack_members m WHERE m.pack_id = p.id)
                   + (SELECT coalesce(sum(x.likes), 0) FROM public.posts x WHERE x.pack_id = p.id),
                   soak.param('pack_full_popularity')::float8),
               (SELECT max(d.deleted_at) FROM soak.deleted_posts d WHERE d.pack_id = p.id)) AS due,
           NULL::timestamptz AS gone
    FROM public.packs p WHERE NOT p.is_admin
    UNION ALL
    SELECT p.id, greatest(
               p.created_at + soak.lifetime(p.members + p.likes, soak.param('pack_full_popularity')::float8),
               (SELECT max(d.deleted_at) FROM soak.deleted_posts d WHERE d.pack_id = p.id AND d.txid <> p.txid)),
           p.deleted_at
    FROM soak.deleted_packs p WHERE NOT p.is_admin;

-- Sessions still active, or revoked for inactivity (the app's logouts do not count).
CREATE OR REPLACE VIEW soak.session_deadlines AS
    SELECT s.id, s.last_seen_at + soak.param('idle_timeout_s')::float8 * interval '1 second' AS due, s.revoked_at AS gone
    FROM public.sessions s
    WHERE s.revoked_at IS NULL OR s.revoked_reason = 'inactivity';

-- ---------------------------------------------------------------- issue 18

-- The schedule each job ran under, one row per job and configuration epoch
-- (a reload under load closes the current rows and opens new ones). The
-- runaway check reads its bound from here.
CREATE TABLE IF NOT EXISTS soak.schedule (
    job             text NOT NULL,
    period_s        float8,                 -- @every period; NULL while the job is disabled
    max_retries     integer NOT NULL,
    notify_channel  text,                   -- the LISTEN channel that wakes it, if any
    deadline        boolean NOT NULL DEFAULT false,  -- woken by idle-session deadlines (logout-inactive)
    since           timestamptz NOT NULL,
    until           timestamptz             -- NULL: still in force
);

-- Every transaction that sent a NOTIFY caretaker listens to: the same events
-- as caretaker's notify triggers (migration 3), one row per channel and
-- transaction (notifications of one transaction arrive together).
CREATE TABLE IF NOT EXISTS soak.notifies (
    channel  text NOT NULL,
    txid     bigint NOT NULL,
    at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (channel, txid)
);

CREATE OR REPLACE FUNCTION soak.log_notify() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_ARGV[0] = 'caretaker_leader_succession'
           AND current_setting('application_name', true) LIKE 'caretaker/%' THEN
            RETURN NULL;   -- caretaker's own appointments notify nobody (migration 3)
        END IF;
        INSERT INTO soak.notifies (channel, txid) VALUES (TG_ARGV[0], txid_current()) ON CONFLICT DO NOTHING;
        RETURN NULL;
    END $$;

-- Rows the app protected for a while (issue 18's app surprises): a report
-- referencing a post (foreign key), a pack on hold (a trigger raises), a
-- session frozen (a CHECK rejects its revocation). `until` NULL: still protected.
CREATE TABLE IF NOT EXISTS soak.protected (
    kind   text NOT NULL CHECK (kind IN ('post', 'pack', 'session')),
    id     text NOT NULL,
    how    text NOT NULL,
    since  timestamptz NOT NULL,
    until  timestamptz
);

DROP TRIGGER IF EXISTS soak_notify_reset_request ON public.password_reset_requests;
CREATE TRIGGER soak_notify_reset_request AFTER INSERT ON public.password_reset_requests
    FOR EACH ROW EXECUTE FUNCTION soak.log_notify('caretaker_send_temp_passwords');
DROP TRIGGER IF EXISTS soak_notify_member_left ON public.community_members;
CREATE TRIGGER soak_notify_member_left AFTER DELETE ON public.community_members
    FOR EACH ROW EXECUTE FUNCTION soak.log_notify('caretaker_leader_succession');
DROP TRIGGER IF EXISTS soak_notify_leader_changed ON public.communities;
CREATE TRIGGER soak_notify_leader_changed AFTER UPDATE OF leader_id ON public.communities
    FOR EACH ROW WHEN (NEW.leader_id IS DISTINCT FROM OLD.leader_id AND NEW.archived_at IS NULL)
    EXECUTE FUNCTION soak.log_notify('caretaker_leader_succession');
DROP TRIGGER IF EXISTS soak_notify_user_deleted ON public.users;
CREATE TRIGGER soak_notify_user_deleted AFTER UPDATE OF deleted_at ON public.users
    FOR EACH ROW WHEN (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL)
    EXECUTE FUNCTION soak.log_notify('caretaker_leader_succession');

-- Upper bound on the slots of an @every schedule in [t0, t1): floor(length /
-- period) + 1 per configuration epoch that overlaps the interval, whatever
-- the slots' alignment.
CREATE OR REPLACE FUNCTION soak.slots_between(job_name text, t0 timestamptz, t1 timestamptz) RETURNS bigint
    LANGUAGE sql STABLE AS $$
        SELECT coalesce(sum(floor(extract(epoch FROM least(t1, coalesce(s.until, t1)) - greatest(t0, s.since))
                                  / s.period_s) + 1), 0)::bigint
        FROM soak.schedule s
        WHERE s.job = job_name AND s.period_s IS NOT NULL AND s.since < t1 AND coalesce(s.until, t1) > t0
    $$;

-- Sessions whose idle deadline passed while they were active: each may
-- justify one deadline wake-up per process.
CREATE OR REPLACE VIEW soak.session_came_due AS
    SELECT s.id, s.last_seen_at + soak.param('idle_timeout_s')::float8 * interval '1 second' AS due
    FROM public.sessions s
    WHERE s.last_seen_at + soak.param('idle_timeout_s')::float8 * interval '1 second' <= coalesce(s.revoked_at, 'infinity');

-- The operator job soak-flaky runs `SELECT soak.flaky_check()`, which raises
-- while the job-failing fault has set `failing`; each such episode is an incident.
CREATE TABLE IF NOT EXISTS soak.flaky (failing boolean NOT NULL DEFAULT false, since timestamptz);
INSERT INTO soak.flaky SELECT WHERE NOT EXISTS (SELECT 1 FROM soak.flaky);
CREATE OR REPLACE FUNCTION soak.flaky_check() RETURNS void
    LANGUAGE plpgsql AS $$
    BEGIN
        IF (SELECT failing FROM soak.flaky) THEN
            RAISE EXCEPTION 'soak-flaky is failing on purpose (the job-failing fault)';
        END IF;
    END $$;

CREATE TABLE IF NOT EXISTS soak.incidents (
    job    text NOT NULL,
    since  timestamptz NOT NULL,
    until  timestamptz
);

-- Alert mail (to [alerts] mail_to), one row per message (loaded at the end):
-- the subject and the first 300 characters of the body, on one line.
CREATE TABLE IF NOT EXISTS soak.alert_mail (
    received_at  timestamptz NOT NULL,
    rcpt         text NOT NULL,
    subject      text,
    excerpt      text
);

-- ---------------------------------------------------------------- the partitioned layout

-- The partitioned layout (a second database, soak_part: posts partitioned by range on
-- created_at, retire_partitions on; scripts/soak.d/partitioned.sql). caretaker drops
-- whole partitions there, which fires no DELETE trigger: what went with a partition is
-- recorded from a shadow of every post (soak.post_shadow, kept by row triggers that
-- partitioned.sql installs) when the partition is dropped (an event trigger), with the
-- time it left posts: the start of the first statement that detached it (an event
-- trigger logs every ALTER TABLE), or else its drop.

-- Every partition of posts the soak made (the app makes them; caretaker never does).
CREATE TABLE IF NOT EXISTS soak.partitions (
    name   text PRIMARY KEY,
    lower  timestamptz NOT NULL,
    upper  timestamptz NOT NULL
);

-- Every partition dropped: when it left posts (removed_at), when it was dropped, and
-- how many posts went with it.
CREATE TABLE IF NOT EXISTS soak.dropped_partitions (
    name        text NOT NULL,
    lower       timestamptz NOT NULL,
    upper       timestamptz NOT NULL,
    removed_at  timestamptz NOT NULL,
    dropped_at  timestamptz NOT NULL,
    txid        bigint NOT NULL,
    posts       bigint NOT NULL,
    app         text
);

-- The start of every ALTER TABLE (clock_timestamp(), in the statement's first transaction).
CREATE TABLE IF NOT EXISTS soak.ddl_log (
    at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    query  text,
    app    text DEFAULT current_setting('application_name', true)
);

-- Each post still in posts, as its last committed write left it.
CREATE TABLE IF NOT EXISTS soak.post_shadow (
    id          bigint PRIMARY KEY,
    pack_id     bigint NOT NULL,
    created_at  timestamptz NOT NULL,
    likes       integer NOT NULL
);

CREATE OR REPLACE FUNCTION soak.shadow_post() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            DELETE FROM soak.post_shadow WHERE id = OLD.id;
            RETURN OLD;
        END IF;
        INSERT INTO soak.post_shadow (id, pack_id, created_at, likes)
        VALUES (NEW.id, NEW.pack_id, NEW.created_at, NEW.likes)
        ON CONFLICT (id) DO UPDATE SET pack_id = EXCLUDED.pack_id, created_at = EXCLUDED.created_at,
                                       likes = EXCLUDED.likes;
        RETURN NEW;
    END $$;

CREATE OR REPLACE FUNCTION soak.log_ddl() RETURNS event_trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO soak.ddl_log (query) VALUES (current_query());
    END $$;

CREATE OR REPLACE FUNCTION soak.audit_partition_drop() RETURNS event_trigger
    LANGUAGE plpgsql AS $$
    DECLARE
        dropped record; p record; removed timestamptz; n bigint;
    BEGIN
        FOR dropped IN SELECT object_name FROM pg_event_trigger_dropped_objects() WHERE object_type = 'table' LOOP
            SELECT * INTO p FROM soak.partitions WHERE name = dropped.object_name;
            CONTINUE WHEN NOT FOUND;
            SELECT least(min(l.at), now()) INTO removed FROM soak.ddl_log l
            WHERE l.query ~* 'DETACH\s+PARTITION' AND position(p.name IN l.query) > 0;
            INSERT INTO soak.deleted_posts (id, pack_id, created_at, likes, deleted_at, txid, depth, app)
            SELECT s.id, s.pack_id, s.created_at, s.likes, removed, txid_current(), 0, 'partition ' || p.name
            FROM soak.post_shadow s WHERE s.created_at >= p.lower AND s.created_at < p.upper;
            GET DIAGNOSTICS n = ROW_COUNT;
            DELETE FROM soak.post_shadow s WHERE s.created_at >= p.lower AND s.created_at < p.upper;
            INSERT INTO soak.dropped_partitions (name, lower, upper, removed_at, dropped_at, txid, posts, app)
            VALUES (p.name, p.lower, p.upper, removed, now(), txid_current(), n, current_setting('application_name', true));
        END LOOP;
    END $$;

DROP EVENT TRIGGER IF EXISTS soak_log_alter_table;
CREATE EVENT TRIGGER soak_log_alter_table ON ddl_command_start WHEN TAG IN ('ALTER TABLE')
    EXECUTE FUNCTION soak.log_ddl();
DROP EVENT TRIGGER IF EXISTS soak_audit_partition_drop;
CREATE EVENT TRIGGER soak_audit_partition_drop ON sql_drop EXECUTE FUNCTION soak.audit_partition_drop();

-- When each partition came due (every post it can hold past max_lifetime) and when
-- it was dropped (NULL: still there).
CREATE OR REPLACE VIEW soak.partition_deadlines AS
    SELECT p.name AS id, p.upper + soak.param('max_lifetime_us')::bigint * interval '1 microsecond' AS due,
           d.dropped_at AS gone
    FROM soak.partitions p LEFT JOIN soak.dropped_partitions d USING (name);
