import CaretakerCore
import CaretakerTestSupport
import Postgres
import Testing

@Suite struct MigrationTests {
    @Test("migrate applies every version once; a second run changes nothing")
    func migrateTwice() throws {
        let db = try TestDatabase(migrated: false)
        let migrator = Migrator(appSchema: "public")
        #expect(try migrator.migrate(on: db.connection).map(\.version) == Migration.all.map(\.version))
        #expect(try migrator.migrate(on: db.connection).isEmpty)
        #expect(try db.count("SELECT count(*) FROM caretaker.schema_migrations") == Migration.all.count)
        #expect(try SchemaCheck.problems(db.connection, appSchema: "public").isEmpty)
    }

    @Test("dry run lists pending migrations and creates nothing")
    func dryRun() throws {
        let db = try TestDatabase(migrated: false)
        let pending = try Migrator(appSchema: "public").migrate(on: db.connection, dryRun: true)
        #expect(pending.count == Migration.all.count)
        #expect(try db.count("SELECT count(*) FROM pg_namespace WHERE nspname = 'caretaker'") == 0)
    }

    @Test("the app schema may be any schema, quoted")
    func customSchema() throws {
        let db = try TestDatabase(migrated: false)
        try Migrator(appSchema: "my app").migrate(on: db.connection)
        #expect(try db.count("SELECT count(*) FROM \"my app\".posts") == 0)
        #expect(try SchemaCheck.problems(db.connection, appSchema: "my app").isEmpty)
    }

    @Test("two migrators at once: one applies, the other waits and finds nothing to do")
    func concurrentMigrations() async throws {
        let db = try TestDatabase(migrated: false)
        let server = TemporaryPostgres.shared
        let name = db.name
        async let first = Task.detached { try Migrator(appSchema: "public").migrate(on: server.connect(database: name)).count }.value
        async let second = Task.detached { try Migrator(appSchema: "public").migrate(on: server.connect(database: name)).count }.value
        let counts = try await [first, second].sorted()
        #expect(counts == [0, Migration.all.count])
    }

    @Test("check names a dropped column and a wrong type")
    func checkNamesColumns() throws {
        let db = try TestDatabase()
        try db.connection.query("ALTER TABLE posts DROP COLUMN likes")
        try db.connection.query("ALTER TABLE sessions ALTER COLUMN revoked_reason TYPE integer USING NULL")
        let problems = try SchemaCheck.problems(db.connection, appSchema: "public")
        #expect(problems.contains { $0.contains("public.posts.likes is missing") }, "\(problems)")
        #expect(problems.contains { $0.contains("public.sessions.revoked_reason has type integer") }, "\(problems)")
    }
}
