import ArgumentParser
import KirokuQueue
import Logging

/// The database connection options every database command takes.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("database-url"),
            help: "PostgreSQL URL (postgresql://user@host:port/db) or libpq key=value string; default: KIROKU_DATABASE_URL, DATABASE_URL, then libpq's PG* variables.")
    var databaseURL: String?

    /// The connection string to use (flag, then environment), checked; a malformed one is a usage error.
    func connectionString() throws -> String {
        let connectionString = ConnectionString.resolve(explicit: databaseURL)
        do {
            try ConnectionString.validate(connectionString)
        } catch {
            throw UsageError(description: error.description)
        }
        return connectionString
    }

    /// Opens a connection to the configured database.
    func connect(label: String = "kiroku") throws -> PostgresConnection {
        try PostgresConnection(try connectionString(), logger: Logger(label: label))
    }

    /// Opens a connection and wraps it in the queue client.
    func queue() throws -> JobQueue {
        JobQueue(connection: try connect())
    }
}
