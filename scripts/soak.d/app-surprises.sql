-- The app's surprises (issue 18): three ways an app protects a row that
-- caretaker would change, as real apps do, switched on and off by the
-- app-surprise fault through soak.protect_rows() and soak.release_rows().
--   posts:    a report references the post (foreign key, NO ACTION: the
--             post's deletion, and its pack's, fail with 23503);
--   packs:    a pack on hold cannot be deleted (a trigger raises P0001);
--   sessions: a frozen session cannot be revoked (a CHECK fails with 23514).
SET client_min_messages = warning;

CREATE TABLE IF NOT EXISTS public.post_reports (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    post_id  bigint NOT NULL REFERENCES public.posts (id),
    reason   text NOT NULL DEFAULT 'spam?'
);

CREATE TABLE IF NOT EXISTS public.pack_holds (pack_id bigint PRIMARY KEY);
CREATE OR REPLACE FUNCTION public.refuse_held_pack() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (SELECT 1 FROM public.pack_holds h WHERE h.pack_id = OLD.id) THEN
            RAISE EXCEPTION 'pack % is on hold', OLD.id;
        END IF;
        RETURN OLD;
    END $$;
DROP TRIGGER IF EXISTS pack_hold ON public.packs;
CREATE TRIGGER pack_hold BEFORE DELETE ON public.packs FOR EACH ROW EXECUTE FUNCTION public.refuse_held_pack();

ALTER TABLE public.sessions ADD COLUMN IF NOT EXISTS frozen boolean NOT NULL DEFAULT false;
ALTER TABLE public.sessions DROP CONSTRAINT IF EXISTS sessions_frozen_stay_active;
ALTER TABLE public.sessions ADD CONSTRAINT sessions_frozen_stay_active CHECK (NOT frozen OR revoked_at IS NULL);

-- Protects the post, the non-admin pack and the active session that come due
-- next (not yet due: they come due while protected); records them in
-- soak.protected (the reported post's pack too: its deletion would cascade to
-- the post). Returns what it protected.
CREATE OR REPLACE FUNCTION soak.protect_rows() RETURNS text
    LANGUAGE plpgsql AS $$
    DECLARE
        post_id bigint; post_pack bigint; pack_id bigint; session_id uuid; admin_pack bigint;
    BEGIN
        SELECT x.id, x.pack_id INTO post_id, post_pack FROM public.posts x
        WHERE x.created_at + soak.lifetime(x.likes, soak.param('post_full_popularity')::float8) > now()
        ORDER BY x.created_at + soak.lifetime(x.likes, soak.param('post_full_popularity')::float8) LIMIT 1;
        SELECT d.id INTO pack_id FROM soak.pack_deadlines d
        WHERE d.gone IS NULL AND d.due > now() AND d.id IS DISTINCT FROM post_pack ORDER BY d.due LIMIT 1;
        SELECT s.id INTO session_id FROM public.sessions s WHERE s.revoked_at IS NULL ORDER BY s.last_seen_at LIMIT 1;
        IF post_id IS NOT NULL THEN
            INSERT INTO public.post_reports (post_id) VALUES (post_id);
            INSERT INTO soak.protected (kind, id, how, since) VALUES
                ('post', post_id, 'referenced by post_reports', now()),
                ('pack', post_pack, 'its post ' || post_id || ' is referenced by post_reports', now());
        END IF;
        IF pack_id IS NOT NULL THEN
            INSERT INTO public.pack_holds VALUES (pack_id);
            INSERT INTO soak.protected (kind, id, how, since) VALUES ('pack', pack_id, 'on hold (trigger)', now());
        END IF;
        IF session_id IS NOT NULL THEN
            UPDATE public.sessions SET frozen = true WHERE id = session_id;
            INSERT INTO soak.protected (kind, id, how, since) VALUES ('session', session_id, 'frozen (CHECK)', now());
        END IF;
        -- Witnesses: a post, a pack and a session of their own that come due 7 s from
        -- now, while the rows above are protected, so that no-blocked-stall has one of
        -- each kind to judge however the app's own rows fall (its window for a kind is
        -- from 5 s after the protection to three periods before its end).
        SELECT p.id INTO admin_pack FROM public.packs p WHERE p.is_admin ORDER BY p.id LIMIT 1;
        IF admin_pack IS NULL THEN
            INSERT INTO public.packs (name, is_admin) VALUES ('soak witnesses', true) RETURNING id INTO admin_pack;
        END IF;
        INSERT INTO public.posts (pack_id, title, likes, created_at)
        VALUES (admin_pack, 'witness', 0,
                now() - soak.param('min_lifetime_us')::bigint * interval '1 microsecond' + interval '7 seconds');
        INSERT INTO public.packs (name, is_admin, created_at)
        VALUES ('witness', false,
                now() - soak.param('min_lifetime_us')::bigint * interval '1 microsecond' + interval '7 seconds');
        INSERT INTO public.sessions (user_id, last_seen_at)
        SELECT u.id, now() - soak.param('idle_timeout_s')::float8 * interval '1 second' + interval '7 seconds'
        FROM public.users u WHERE u.deleted_at IS NULL ORDER BY u.id LIMIT 1;
        RETURN format('post %s (and its pack %s) referenced, pack %s on hold, session %s frozen',
                      post_id, post_pack, pack_id, session_id);
    END $$;

CREATE OR REPLACE FUNCTION soak.release_rows() RETURNS void
    LANGUAGE sql AS $$
        DELETE FROM public.post_reports;
        DELETE FROM public.pack_holds;
        UPDATE public.sessions SET frozen = false WHERE frozen;
        UPDATE soak.protected SET until = now() WHERE until IS NULL;
    $$;
