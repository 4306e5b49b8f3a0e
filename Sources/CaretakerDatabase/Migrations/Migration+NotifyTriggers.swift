extension Migration {
    /// The channel a new reset request is notified on (`send-temp-passwords` listens).
    package static let resetRequestChannel = "caretaker_send_temp_passwords"
    /// The channel a member leaving, a leader changing or a user deleted is notified on
    /// (`leader-succession` listens).
    package static let communityChangeChannel = "caretaker_leader_succession"

    /// Triggers that wake the daemon (LISTEN) the moment there is work:
    /// a new reset request, a member leaving, a leader changing or a user deleted.
    package static let notifyTriggers = Migration(
        version: 3, name: "notify triggers",
        sql: #"""
            CREATE OR REPLACE FUNCTION {{app}}.caretaker_notify_reset_request() RETURNS trigger
                LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM pg_notify('\#(resetRequestChannel)', NEW.id::text);
                    RETURN NULL;
                END $$;
            DROP TRIGGER IF EXISTS caretaker_notify_reset_request ON {{app}}.password_reset_requests;
            CREATE TRIGGER caretaker_notify_reset_request
                AFTER INSERT ON {{app}}.password_reset_requests
                FOR EACH ROW EXECUTE FUNCTION {{app}}.caretaker_notify_reset_request();

            CREATE OR REPLACE FUNCTION {{app}}.caretaker_notify_community() RETURNS trigger
                LANGUAGE plpgsql AS $$
                BEGIN
                    -- caretaker's own appointments need no wake-up call.
                    IF current_setting('application_name', true) LIKE 'caretaker/%' THEN
                        RETURN NULL;
                    END IF;
                    IF TG_TABLE_NAME = 'community_members' THEN
                        PERFORM pg_notify('\#(communityChangeChannel)', OLD.community_id::text);
                    ELSIF TG_TABLE_NAME = 'communities' THEN
                        PERFORM pg_notify('\#(communityChangeChannel)', NEW.id::text);
                    ELSE
                        PERFORM pg_notify('\#(communityChangeChannel)', 'user:' || NEW.id::text);
                    END IF;
                    RETURN NULL;
                END $$;
            DROP TRIGGER IF EXISTS caretaker_notify_member_left ON {{app}}.community_members;
            CREATE TRIGGER caretaker_notify_member_left
                AFTER DELETE ON {{app}}.community_members
                FOR EACH ROW EXECUTE FUNCTION {{app}}.caretaker_notify_community();
            DROP TRIGGER IF EXISTS caretaker_notify_leader_changed ON {{app}}.communities;
            CREATE TRIGGER caretaker_notify_leader_changed
                AFTER UPDATE OF leader_id ON {{app}}.communities
                FOR EACH ROW WHEN (NEW.leader_id IS DISTINCT FROM OLD.leader_id AND NEW.archived_at IS NULL)
                EXECUTE FUNCTION {{app}}.caretaker_notify_community();
            DROP TRIGGER IF EXISTS caretaker_notify_user_deleted ON {{app}}.users;
            CREATE TRIGGER caretaker_notify_user_deleted
                AFTER UPDATE OF deleted_at ON {{app}}.users
                FOR EACH ROW WHEN (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL)
                EXECUTE FUNCTION {{app}}.caretaker_notify_community();
            """#)
}
