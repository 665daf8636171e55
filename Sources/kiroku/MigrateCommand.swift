import ArgumentParser
import KirokuQueue

/// `kiroku migrate`: applies the schema migrations compiled into this binary.
struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply the database schema migrations (safe to run concurrently and repeatedly).")

    @OptionGroup var database: DatabaseOptions

    func run() throws {
        let connection = try database.connect(label: "kiroku.migrate")
        let applied = try MigrationRunner().migrate(connection)
        let latest = Migration.bundled.last?.name ?? "none"
        print(applied.isEmpty
              ? "database is up to date at \(latest)"
              : "applied \(applied.count) migrations; database is at \(latest)")
    }
}
