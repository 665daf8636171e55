import Foundation
import KirokuQueue
import Logging
import Synchronization

/// The throwaway PostgreSQL server that `make test` starts (scripts/with-postgres.sh). Each test
/// gets a database of its own, so tests run in parallel without seeing each other's jobs.
public enum TestDatabase {
    /// Raised when the tests run without `make test`'s server.
    public struct NotConfigured: Error, CustomStringConvertible {
        public let description = """
            KIROKU_TEST_DATABASE_URL is not set: these tests need a real PostgreSQL. Run them with \
            `make test`, which starts a throwaway server and removes it afterwards.
            """
    }

    /// The superuser URL of the test server's maintenance database.
    public static func adminURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["KIROKU_TEST_DATABASE_URL"], !url.isEmpty else {
            throw NotConfigured()
        }
        return url
    }

    /// The URL of another database (and optionally another user) on the test server.
    public static func url(database: String, user: String? = nil) throws -> String {
        guard var components = URLComponents(string: try adminURL()) else { throw NotConfigured() }
        components.path = "/" + database
        if let user { components.user = user }
        return components.string!
    }

    /// Creates a fresh database, migrated unless told otherwise; returns its URL.
    public static func create(migrated: Bool = true) throws -> String {
        let name = "kiroku_test_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        try PostgresConnection(try adminURL()).execute("CREATE DATABASE \(name)")
        let url = try url(database: name)
        if migrated { try MigrationRunner(logger: quietLogger).migrate(try PostgresConnection(url)) }
        return url
    }

    /// Migration logs at warning level and above only, to keep test output readable.
    public static let quietLogger: Logger = {
        var logger = Logger(label: "kiroku.test")
        logger.logLevel = .warning
        return logger
    }()

    /// A new login role in `groups` (unique to this test run), and a connection to the database
    /// at `url` as that role.
    public static func login(in groups: [String], database url: String, attributes: String = "") throws -> (name: String, connection: PostgresConnection) {
        let name = "t_" + (groups.first ?? "none").replacingOccurrences(of: "kiroku_", with: "") + "_"
            + UUID().uuidString.prefix(8).lowercased()
        let membership = groups.isEmpty ? "" : " IN ROLE " + groups.joined(separator: ", ")
        try PostgresConnection(url).execute("CREATE ROLE \(name) LOGIN \(attributes)\(membership)")
        let database = URLComponents(string: url)!.path.dropFirst()
        return (name, try PostgresConnection(try Self.url(database: String(database), user: name)))
    }

    /// A connection to a fresh migrated database, wrapped in the queue client.
    public static func queue() throws -> JobQueue {
        JobQueue(connection: try PostgresConnection(try create()))
    }
}

/// Runs `body` on `count` threads at once (real threads: the calls block in libpq) and returns
/// their results in index order, rethrowing the first error; the caller waits without holding a
/// thread of the concurrency pool.
public func onThreads<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) throws -> T) async throws -> [T] {
    let results = Mutex<[Int: Result<T, any Error>]>([:])
    let done = DispatchGroup()
    for index in 0..<count {
        done.enter()
        Thread {
            let result = Result { try body(index) }
            results.withLock { $0[index] = result }
            done.leave()
        }.start()
    }
    await done.finished()
    return try results.withLock { all in try (0..<count).map { try all[$0]!.get() } }
}

extension DispatchGroup {
    /// Waits until every entered task has left, holding no thread meanwhile.
    func finished() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            notify(queue: .global()) { done.resume() }
        }
    }
}

/// A minimal byte string that starts like a JPEG, distinct per `tag`.
public func fakeJPEG(_ tag: String) -> [UInt8] {
    [0xFF, 0xD8, 0xFF, 0xE0] + Array(tag.utf8)
}
