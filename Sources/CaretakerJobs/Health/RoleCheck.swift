import Postgres

/// Whether the worker connects with more rights than it needs (`caretaker check` warns).
///
/// A superuser or the owner of the app's tables can do anything to them; the daemon
/// should run as a role given only what `caretaker migrate --grant ROLE` grants.
public enum RoleCheck {
    /// A warning naming the role and what is wrong with it, or nil when it is restricted.
    /// With `retiresPartitions` (`retire_partitions` on), owning `posts` and its partitions
    /// is what the role needs, and not owning one of them is the warning.
    public static func warning(
        _ connection: Connection, appSchema: String, retiresPartitions: Bool = false
    ) throws -> String? {
        let posts = quoteIdentifier(appSchema) + ".posts"
        let row = try connection.query(
            """
            SELECT current_user AS role,
                   (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser,
                   (SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname IN ($1, 'caretaker') AND c.relkind IN ('r', 'p')
                      AND pg_has_role(current_user, c.relowner, 'USAGE')
                      AND NOT ($2 AND c.oid IN (SELECT relid FROM pg_partition_tree(to_regclass($3))))
                    ORDER BY n.nspname = 'caretaker', 1 LIMIT 1) AS owned
            """, appSchema, retiresPartitions, posts
        ).first
        let role = row?["role"] ?? "?"
        let advice = "run the worker as a role given only what `caretaker migrate --grant ROLE` grants"
        if row?.bool("superuser") == true {
            return "connected as \(role), a superuser: \(advice)"
        }
        if let owned = row?["owned"] {
            return "connected as \(role), which owns \(owned): \(advice)"
        }
        if retiresPartitions,
            let table = try connection.query(RuntimeGrants.postsNotOwned, role, posts).first?.string("name")
        {
            return RuntimeGrants.retirementAdvice(role: role, notOwned: table)
        }
        return nil
    }
}
