import KirokuQueue
import KirokuTestSupport
import Testing

@Suite("Migrations")
struct MigrationTests {
    @Test("apply in order, record checksums, and are idempotent")
    func idempotent() throws {
        let connection = try PostgresConnection(try TestDatabase.create(migrated: false))
        let runner = MigrationRunner(logger: TestDatabase.quietLogger)
        let first = try runner.migrate(connection)
        #expect(first.map(\.name) == Migration.bundled.map(\.name))
        #expect(first.map(\.version) == first.map(\.version).sorted())
        #expect(try runner.migrate(connection).isEmpty)

        let applied = try runner.appliedMigrations(connection)
        #expect(applied.count == Migration.bundled.count)
        for migration in Migration.bundled {
            #expect(applied[migration.version]?.checksum == migration.checksum)
        }
        // The schema they describe is really there.
        let tables = try connection.query("""
            SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'kiroku'
              AND tablename IN ('jobs', 'job_images', 'workers', 'schema_migrations')
            """).single("tables").int("n")
        #expect(tables == 4)
    }

    @Test("concurrent runs are safe: every file applied exactly once")
    func concurrent() throws {
        let url = try TestDatabase.create(migrated: false)
        let applied = try onThreads(6) { _ in
            try MigrationRunner(logger: TestDatabase.quietLogger).migrate(try PostgresConnection(url)).count
        }
        #expect(applied.reduce(0, +) == Migration.bundled.count)
        #expect(applied.filter { $0 > 0 }.count == 1)
        let rows = try PostgresConnection(url).query("SELECT count(*) AS n FROM kiroku.schema_migrations")
        #expect(try rows.single("count").int("n") == Int64(Migration.bundled.count))
    }

    @Test("refuses a database whose applied migration changed")
    func changedChecksum() throws {
        let connection = try PostgresConnection(try TestDatabase.create())
        try connection.execute("UPDATE kiroku.schema_migrations SET checksum = 'deadbeef' WHERE version = 2")
        let error = #expect(throws: MigrationError.self) { try MigrationRunner(logger: TestDatabase.quietLogger).migrate(connection) }
        #expect(error?.description.contains("0002_queue_protocol.sql") == true)
        #expect(error?.description.contains("must never be edited") == true)
    }

    @Test("refuses a database migrated by a newer kiroku")
    func newerDatabase() throws {
        let connection = try PostgresConnection(try TestDatabase.create())
        try connection.execute("INSERT INTO kiroku.schema_migrations (version, name, checksum) VALUES (9999, '9999_future.sql', 'x')")
        let error = #expect(throws: MigrationError.self) { try MigrationRunner(logger: TestDatabase.quietLogger).migrate(connection) }
        #expect(error?.description.contains("9999_future.sql") == true)
    }

    @Test("a failing migration rolls back and names the file")
    func failingMigration() throws {
        let connection = try PostgresConnection(try TestDatabase.create())
        let broken = Migration(version: 9000, name: "9000_broken.sql", sql: "CREATE TABLE kiroku.half (x int); SELECT 1/0;")
        let error = #expect(throws: MigrationError.self) {
            try MigrationRunner(migrations: Migration.bundled + [broken], logger: TestDatabase.quietLogger).migrate(connection)
        }
        #expect(error?.description.contains("9000_broken.sql") == true)
        let exists = try connection.query("SELECT to_regclass('kiroku.half') IS NOT NULL AS present").single("regclass").bool("present")
        #expect(!exists)
    }
}
