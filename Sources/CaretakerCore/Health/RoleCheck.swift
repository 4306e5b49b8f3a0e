import Postgres

/// Whether the worker connects with more rights than it needs (`caretaker check` warns).
///
/// A superuser or the owner of the app's tables can do anything to them; the daemon
/// should run as a role given only what `caretaker migrate --grant ROLE` grants.
public enum RoleCheck {
    /// A warning naming the role and what is wrong with it, or nil when it is restricted.
    public static func warning(_ connection: Connection, appSchema: String) throws -> String? {
        let row = try connection.query(
            """
            SELECT current_user AS role,
                   (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser,
                   (SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname IN ($1, 'caretaker') AND c.relkind IN ('r', 'p')
                      AND pg_has_role(current_user, c.relowner, 'USAGE')
                    ORDER BY n.nspname = 'caretaker', 1 LIMIT 1) AS owned
            """, appSchema
        ).first
        let role = row?["role"] ?? "?"
        let advice = "run the worker as a role given only what `caretaker migrate --grant ROLE` grants"
        if row?.bool("superuser") == true {
            return "connected as \(role), a superuser: \(advice)"
        }
        if let owned = row?["owned"] {
            return "connected as \(role), which owns \(owned): \(advice)"
        }
        return nil
    }
}
