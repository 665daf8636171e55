import Foundation
import KirokuSupport
import Logging

/// One numbered SQL file from Migrations/, compiled into the binary.
public struct Migration: Sendable, Equatable {
    /// The number the file name starts with.
    public let version: Int
    /// The file name, e.g. 0001_jobs.sql.
    public let name: String
    /// The SQL script.
    public let sql: String
    /// SHA-256 of the script, hex: an applied file must never change.
    public var checksum: String { SHA256.hex(Array(sql.utf8)) }

    /// Creates a migration.
    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// The migrations shipped with this binary, in order.
    public static let bundled: [Migration] = embeddedMigrationFiles.map { file in
        guard let version = Int(file.name.prefix { $0.isNumber }) else {
            preconditionFailure("migration file \(file.name) does not start with its number")
        }
        return Migration(version: version, name: file.name, sql: file.sql)
    }.sorted { $0.version < $1.version }
}

/// Why migrating refused to go on.
public struct MigrationError: Error, CustomStringConvertible, Sendable {
    /// What to tell the operator.
    public let description: String
}

/// Applies the numbered migrations in order, each in its own transaction, recording each with its
/// checksum in kiroku.schema_migrations. An advisory lock makes concurrent runs safe: the second
/// waits, then finds nothing to do.
public struct MigrationRunner {
    /// The advisory lock key held while migrating ("kiroku" in ASCII).
    public static let lockKey: Int64 = 0x6B69_726F_6B75
    let migrations: [Migration]
    let logger: Logger

    /// Creates a runner for `migrations` (by default the ones compiled into this binary).
    public init(migrations: [Migration] = Migration.bundled, logger: Logger = Logger(label: "kiroku.migrate")) {
        self.migrations = migrations
        self.logger = logger
    }

    /// Applies what is missing; returns the migrations applied by this call.
    @discardableResult
    public func migrate(_ connection: PostgresConnection) throws -> [Migration] {
        do {
            return try migrateLocked(connection)
        } catch let error as PostgresError where error.sqlState == "42501" {
            throw MigrationError(description: """
                \(error)
                kiroku migrate needs a superuser, or the role that first migrated this database (a member of \
                kiroku_owner, which owns the schema): run it as one of them
                """)
        }
    }

    private func migrateLocked(_ connection: PostgresConnection) throws -> [Migration] {
        try connection.query("SELECT pg_advisory_lock($1)", [.int(Self.lockKey)])
        defer { if connection.isOpen { _ = try? connection.query("SELECT pg_advisory_unlock($1)", [.int(Self.lockKey)]) } }

        try connection.execute("""
            CREATE SCHEMA IF NOT EXISTS kiroku;
            CREATE TABLE IF NOT EXISTS kiroku.schema_migrations (
                version    integer     PRIMARY KEY,
                name       text        NOT NULL,
                checksum   text        NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            );
            """)
        let applied = try appliedMigrations(connection)
        try verify(applied: applied)

        var newlyApplied: [Migration] = []
        for migration in migrations where applied[migration.version] == nil {
            let started = ContinuousClock.now
            do {
                try connection.transaction { () throws(PostgresError) in
                    try connection.execute(migration.sql)
                    try connection.query(
                        "INSERT INTO kiroku.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                        [.int(Int64(migration.version)), .text(migration.name), .text(migration.checksum)])
                }
            } catch {
                throw MigrationError(description: "migration \(migration.name) failed and was rolled back: \(error)")
            }
            logger.info("applied migration", metadata: [
                "migration": "\(migration.name)", "ms": "\(Int(started.duration(to: .now).milliseconds))",
            ])
            newlyApplied.append(migration)
        }
        return newlyApplied
    }

    /// The applied migrations recorded in the database: version to (name, checksum).
    public func appliedMigrations(_ connection: PostgresConnection) throws(PostgresError) -> [Int: (name: String, checksum: String)] {
        var applied: [Int: (name: String, checksum: String)] = [:]
        for row in try connection.query("SELECT version, name, checksum FROM kiroku.schema_migrations") {
            applied[Int(try row.int("version"))] = (try row.string("name"), try row.string("checksum"))
        }
        return applied
    }

    /// Refuses a database whose applied files changed, or that is ahead of this binary.
    func verify(applied: [Int: (name: String, checksum: String)]) throws {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for (version, record) in applied.sorted(by: { $0.key < $1.key }) {
            guard let migration = known[version] else {
                throw MigrationError(description: """
                    the database has migration \(record.name), which this kiroku does not know: \
                    it was migrated by a newer kiroku; upgrade this one
                    """)
            }
            guard migration.checksum == record.checksum else {
                throw MigrationError(description: """
                    migration \(migration.name) was applied with checksum \(record.checksum.prefix(12))…, \
                    but this kiroku's copy has \(migration.checksum.prefix(12))…: an applied migration \
                    must never be edited; restore the file and add a new numbered migration instead
                    """)
            }
        }
    }
}
