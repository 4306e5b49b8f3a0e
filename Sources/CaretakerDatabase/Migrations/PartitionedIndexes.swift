import Postgres

/// The migrations' index work on a partitioned table (an app's `posts` partitioned by
/// day on `created_at`), where PostgreSQL refuses `CREATE INDEX CONCURRENTLY`,
/// `DROP INDEX CONCURRENTLY` and `ALTER INDEX … SET` on the table's own index.
///
/// An index is built the way that keeps the app writing: the partitioned index alone
/// first (`CREATE INDEX … ON ONLY`, invalid and empty, a moment's lock on the parent),
/// then each partition's with `CREATE INDEX CONCURRENTLY`, attached to it with
/// `ALTER INDEX … ATTACH PARTITION`; PostgreSQL marks the partitioned index valid
/// once every partition's is attached. From then on a partition the app or pg_partman
/// creates gets its index from the partitioned one, built and attached by PostgreSQL.
/// A partition created during the build gets it too, even while the index is still
/// invalid, which is why the partitions are listed again until none lacks one.
enum PartitionedIndexes {
    /// `relkind` of a partitioned table (`p`) or index (`I`).
    static func isPartitioned(_ qualified: String, on connection: Connection) throws(PostgresError) -> Bool {
        try connection.query(
            "SELECT relkind IN ('p', 'I') AS partitioned FROM pg_class WHERE oid = to_regclass($1)", qualified
        ).first?.bool("partitioned") == true
    }

    /// `ON {{app}}.TABLE REST` → (`TABLE`, `REST`): the table an index definition is on,
    /// and its columns and options.
    static func split(_ definition: String) -> (table: String, rest: String)? {
        let prefix = "ON {{app}}."
        guard definition.hasPrefix(prefix) else { return nil }
        let afterPrefix = definition.dropFirst(prefix.count)
        guard let space = afterPrefix.firstIndex(of: " ") else { return nil }
        return (String(afterPrefix[..<space]), String(afterPrefix[afterPrefix.index(after: space)...]))
    }

    /// The name of a partition's index for the partitioned index `index` of `table`:
    /// the partition's name with the index's own part (`posts_created_idx` →
    /// `posts_p20261205_created_idx`), shortened with a hash of the whole when it
    /// would pass PostgreSQL's 63 bytes.
    static func partitionIndexName(partition: String, index: String, table: String) -> String {
        let own = index.hasPrefix(table + "_") ? String(index.dropFirst(table.count + 1)) : index
        let name = partition + "_" + own
        guard name.utf8.count > 63 else { return name }
        var hash: UInt32 = 2_166_136_261  // FNV-1a
        for byte in name.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        let tag = String(hash, radix: 16)
        let room = 63 - tag.count - own.utf8.count - 2
        var prefix = ""
        for character in partition where prefix.utf8.count + character.utf8.count <= max(room, 1) {
            prefix.append(character)
        }
        return String((prefix + "_" + tag + "_" + own).utf8.prefix(63))!
    }
}

extension Migrator {
    /// `index` on the partitioned table `table`: the partitioned index `ON ONLY` the
    /// table when it is missing (with `index.storageOnPartitionedTable`), then each
    /// partition's, built `CONCURRENTLY` and attached. A partition's index that a
    /// failed build left invalid is dropped and built again; one that is valid but not
    /// attached (an interrupted migrate) is attached.
    func buildPartitioned(_ index: ConcurrentIndex, table: String, rest: String, on connection: Connection) throws {
        let schema = quoteIdentifier(appSchema)
        let parent = schema + "." + quoteIdentifier(index.name)
        let storage = index.storageOnPartitionedTable.map { " WITH (\($0))" } ?? ""
        if try connection.query("SELECT to_regclass($1) IS NULL AS missing", parent).first?.bool("missing") == true {
            var attempts = 0
            try inTransactionWaitingBriefly(on: connection, attempts: &attempts) {
                try connection.execute(
                    script: "CREATE INDEX IF NOT EXISTS \(quoteIdentifier(index.name)) ON ONLY \(schema)."
                        + "\(quoteIdentifier(table)) \(rest)\(storage)")
            }
        }
        try attachPartitions(
            of: parent, index: index.name, table: table, qualifiedTable: schema + "." + quoteIdentifier(table),
            rest: rest + storage, on: connection)
    }

    /// Builds and attaches the index of every partition of `qualifiedTable` that lacks
    /// one under the partitioned index `parent`, until none does; a partition that is
    /// partitioned in turn gets a partitioned index of its own, and so on down.
    private func attachPartitions(
        of parent: String, index: String, table: String, qualifiedTable: String, rest: String,
        on connection: Connection
    ) throws {
        while true {
            let missing = try connection.query(
                """
                SELECT c.relname, n.nspname, c.relkind = 'p' AS partitioned
                FROM pg_inherits h
                JOIN pg_class c ON c.oid = h.inhrelid
                JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE h.inhparent = to_regclass($1)
                  AND NOT EXISTS (
                      SELECT FROM pg_inherits hi JOIN pg_index i ON i.indexrelid = hi.inhrelid
                      WHERE hi.inhparent = to_regclass($2) AND i.indrelid = c.oid)
                ORDER BY c.relname
                """, qualifiedTable, parent
            ).rows
            if missing.isEmpty { return }
            for row in missing {
                let partition = row.string("relname")!
                let partitionTable = quoteIdentifier(row.string("nspname")!) + "." + quoteIdentifier(partition)
                let name = PartitionedIndexes.partitionIndexName(partition: partition, index: index, table: table)
                let qualified = quoteIdentifier(row.string("nspname")!) + "." + quoteIdentifier(name)
                let valid = try connection.query(
                    "SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass($1)", qualified
                ).first?.bool("valid")
                if row.bool("partitioned") == true {
                    if valid == nil {
                        var attempts = 0
                        try inTransactionWaitingBriefly(on: connection, attempts: &attempts) {
                            try connection.execute(
                                script:
                                    "CREATE INDEX IF NOT EXISTS \(quoteIdentifier(name)) ON ONLY \(partitionTable) \(rest)"
                            )
                        }
                    }
                    try attachPartitions(
                        of: qualified, index: name, table: partition, qualifiedTable: partitionTable, rest: rest,
                        on: connection)
                } else {
                    // A build that failed half-way left it invalid: `IF NOT EXISTS` would keep it for ever.
                    if valid == false { try connection.execute(script: "DROP INDEX CONCURRENTLY \(qualified)") }
                    if valid != true {
                        try connection.execute(
                            script:
                                "CREATE INDEX CONCURRENTLY IF NOT EXISTS \(quoteIdentifier(name)) ON \(partitionTable) \(rest)"
                        )
                    }
                }
                var attempts = 0
                try inTransactionWaitingBriefly(on: connection, attempts: &attempts) {
                    try connection.execute(script: "ALTER INDEX \(parent) ATTACH PARTITION \(qualified)")
                }
            }
        }
    }

    /// `DROP INDEX` of a partitioned index, in a transaction that waits for its lock
    /// only briefly (PostgreSQL cannot drop one `CONCURRENTLY`): the lock is held for
    /// a moment, but taken behind the app's open transactions on the table, where each
    /// of the app's statements would queue behind it.
    func dropPartitioned(_ qualified: String, on connection: Connection) throws {
        var attempts = 0
        try inTransactionWaitingBriefly(on: connection, attempts: &attempts) {
            try connection.execute(script: "DROP INDEX IF EXISTS \(qualified)")
        }
    }

    /// `REINDEX … CONCURRENTLY` of the partitions' indexes under the partitioned index
    /// `name` that lack one of its storage parameters, each after `ALTER INDEX … SET`
    /// of them (a partitioned index's parameters cannot change; its partitions' can,
    /// and an index takes them only when rebuilt).
    func rebuildPartitioned(_ name: String, on connection: Connection) throws {
        let leaves = try connection.query(
            """
            SELECT n.nspname, c.relname,
                   array_to_string(ARRAY(SELECT unnest(p.reloptions) EXCEPT SELECT unnest(c.reloptions)), ', ') AS lacking
            FROM pg_partition_tree(to_regclass($1)) t
            JOIN pg_class c ON c.oid = t.relid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_class p ON p.oid = to_regclass($1)
            WHERE t.isleaf AND p.reloptions IS NOT NULL
              AND NOT (p.reloptions <@ coalesce(c.reloptions, '{}'))
            ORDER BY c.relname
            """, quoteIdentifier(appSchema) + "." + quoteIdentifier(name)
        ).rows
        for leaf in leaves {
            let relname = leaf.string("relname")!
            var attempts = 0
            try inTransactionWaitingBriefly(on: connection, attempts: &attempts) {
                try connection.execute(
                    script: "ALTER INDEX \(quoteIdentifier(leaf.string("nspname")!)).\(quoteIdentifier(relname)) "
                        + "SET (\(leaf.string("lacking")!))")
            }
            // Partitions live in the app schema, where `rebuild` also drops what an interrupted rebuild left.
            try rebuild(relname, on: connection)
        }
    }
}
