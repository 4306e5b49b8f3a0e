extension Migration {
    /// The job that keeps the pack marks itself: its own deletes mark nothing (its
    /// sessions' `application_name` is `caretaker/NAME`). It is `ExpireContent.name`;
    /// `BuiltInJobTests` holds the two together.
    package static let packMarkingJob = "expire-content"

    /// What lets `expire-content` look at a pack only when it may be due, instead of
    /// at every pack on every run (E2p in BENCHMARKS.md).
    ///
    /// - `caretaker.pack_looks`: for each pack, the earliest time it can be due
    ///   (`look_at`) if its popularity does not fall, and the posts the look counted.
    ///   A look counts the popularity up to the full popularity and sets
    ///   `look_at` to when that popularity's lifetime ends, or to when one of the
    ///   posts it counted can expire, if sooner.
    /// - `caretaker.pack_marks`: packs whose popularity may have fallen since their
    ///   last look, appended by triggers on the app's tables. Only what can make a pack
    ///   due sooner writes a mark: a new pack, a pack made expirable or older, a post
    ///   losing likes, moving out or made older, a member leaving. Likes going up, the
    ///   app's hot path, are only a `WHEN` test. A `DELETE` of posts appends one mark
    ///   without a pack (`NULL`) per statement: the next run then checks that every
    ///   look's counted posts are still there. A row trigger would cost every deleted
    ///   row, `expire-content`'s too, the fetch of the row (E1: +30 %), where a
    ///   statement trigger costs nothing per row. `expire-content`'s own deletes
    ///   write none: the packs it deletes are gone, and the posts it expires were
    ///   counted with their expiry in `look_at`.
    /// - `caretaker.pack_look_state`: the settings the looks were made with, when
    ///   every pack was last looked at, and whether counted posts must be checked. A
    ///   `TRUNCATE` of the app's tables empties `settings`, as the migration starts
    ///   it, so the next run looks at every pack (the migration sets `full_look_at` to
    ///   its own time: the triggers mark from its commit on, before that first look);
    ///   it also bumps `generation`, so a look at every pack that was under way then
    ///   does not count as one.
    ///
    /// The trigger function is `SECURITY DEFINER`: the app's roles need no rights on
    /// caretaker's schema for their writes to leave a mark. It leaves none while no
    /// look at every pack has finished for two days (`expire-content` is disabled or
    /// stopped), so the marks do not pile up for nobody; the run that resumes then looks
    /// at every pack, twice (see `ExpireContentQueries.finishFullLook`).
    package static let packLooks = Migration(
        version: 10, name: "pack looks",
        sql: #"""
            CREATE TABLE IF NOT EXISTS caretaker.pack_looks (
                pack_id  bigint PRIMARY KEY,
                look_at  timestamptz NOT NULL,
                counted  bigint[] NOT NULL DEFAULT '{}'
            );
            CREATE INDEX IF NOT EXISTS pack_looks_look_at_idx ON caretaker.pack_looks (look_at, pack_id);
            CREATE TABLE IF NOT EXISTS caretaker.pack_marks (
                pack_id  bigint  -- NULL: posts were deleted
            );
            CREATE TABLE IF NOT EXISTS caretaker.pack_look_state (
                only_row      boolean PRIMARY KEY DEFAULT true CHECK (only_row),
                settings      text NOT NULL,
                full_look_at  timestamptz NOT NULL,
                generation    bigint NOT NULL DEFAULT 0,
                check_counted boolean NOT NULL DEFAULT false
            );
            INSERT INTO caretaker.pack_look_state (settings, full_look_at) VALUES ('', now())
                ON CONFLICT (only_row) DO UPDATE SET settings = '', generation = pack_look_state.generation + 1;

            CREATE OR REPLACE FUNCTION {{app}}.caretaker_mark_pack() RETURNS trigger
                LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
                BEGIN
                    IF TG_OP = 'TRUNCATE' THEN
                        UPDATE caretaker.pack_look_state SET settings = '', generation = generation + 1;
                        RETURN NULL;
                    END IF;
                    IF (SELECT full_look_at < now() - interval '2 days' FROM caretaker.pack_look_state) THEN
                        RETURN NULL;  -- no look at every pack for two days: expire-content is off
                    END IF;
                    IF TG_LEVEL = 'STATEMENT' THEN
                        INSERT INTO caretaker.pack_marks (pack_id) VALUES (NULL);
                    ELSIF TG_ARGV[0] = 'new.id' THEN
                        INSERT INTO caretaker.pack_marks (pack_id) VALUES (NEW.id);
                    ELSIF OLD.pack_id IS NOT NULL THEN
                        INSERT INTO caretaker.pack_marks (pack_id) VALUES (OLD.pack_id);
                    END IF;
                    RETURN NULL;
                END $$;
            REVOKE ALL ON FUNCTION {{app}}.caretaker_mark_pack() FROM PUBLIC;

            DROP TRIGGER IF EXISTS caretaker_mark_new_pack ON {{app}}.packs;
            CREATE TRIGGER caretaker_mark_new_pack
                AFTER INSERT ON {{app}}.packs
                FOR EACH ROW WHEN (NOT NEW.is_admin)
                EXECUTE FUNCTION {{app}}.caretaker_mark_pack('new.id');
            DROP TRIGGER IF EXISTS caretaker_mark_changed_pack ON {{app}}.packs;
            CREATE TRIGGER caretaker_mark_changed_pack
                AFTER UPDATE OF id, is_admin, created_at ON {{app}}.packs
                FOR EACH ROW WHEN (NOT NEW.is_admin AND (OLD.is_admin OR NEW.created_at < OLD.created_at OR NEW.id <> OLD.id))
                EXECUTE FUNCTION {{app}}.caretaker_mark_pack('new.id');

            DROP TRIGGER IF EXISTS caretaker_mark_post_changed ON {{app}}.posts;
            CREATE TRIGGER caretaker_mark_post_changed
                AFTER UPDATE OF pack_id, likes, created_at ON {{app}}.posts
                FOR EACH ROW WHEN ((NEW.likes < OLD.likes AND OLD.likes > 0) OR NEW.pack_id IS DISTINCT FROM OLD.pack_id
                      OR NEW.created_at < OLD.created_at)
                EXECUTE FUNCTION {{app}}.caretaker_mark_pack('old.pack_id');
            DROP TRIGGER IF EXISTS caretaker_mark_post_deleted ON {{app}}.posts;
            CREATE TRIGGER caretaker_mark_post_deleted
                AFTER DELETE ON {{app}}.posts
                FOR EACH STATEMENT WHEN (current_setting('application_name') <> 'caretaker/\#(packMarkingJob)')
                EXECUTE FUNCTION {{app}}.caretaker_mark_pack();
            DROP TRIGGER IF EXISTS caretaker_mark_posts_truncated ON {{app}}.posts;
            CREATE TRIGGER caretaker_mark_posts_truncated
                AFTER TRUNCATE ON {{app}}.posts
                FOR EACH STATEMENT EXECUTE FUNCTION {{app}}.caretaker_mark_pack();

            DROP TRIGGER IF EXISTS caretaker_mark_member_left ON {{app}}.pack_members;
            CREATE TRIGGER caretaker_mark_member_left
                AFTER DELETE ON {{app}}.pack_members
                FOR EACH ROW WHEN (current_setting('application_name') <> 'caretaker/\#(packMarkingJob)')
                EXECUTE FUNCTION {{app}}.caretaker_mark_pack('old.pack_id');
            DROP TRIGGER IF EXISTS caretaker_mark_member_moved ON {{app}}.pack_members;
            CREATE TRIGGER caretaker_mark_member_moved
                AFTER UPDATE OF pack_id ON {{app}}.pack_members
                FOR EACH ROW WHEN (NEW.pack_id IS DISTINCT FROM OLD.pack_id)
                EXECUTE FUNCTION {{app}}.caretaker_mark_pack('old.pack_id');
            DROP TRIGGER IF EXISTS caretaker_mark_members_truncated ON {{app}}.pack_members;
            CREATE TRIGGER caretaker_mark_members_truncated
                AFTER TRUNCATE ON {{app}}.pack_members
                FOR EACH STATEMENT EXECUTE FUNCTION {{app}}.caretaker_mark_pack();
            """#)
}
