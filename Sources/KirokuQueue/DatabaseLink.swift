import KirokuSupport
import Logging
import Synchronization

/// One PostgreSQL connection for async code. Its blocking libpq calls run on a serial dispatch
/// queue of its own, never on the cooperative thread pool, so a long LISTEN wait stalls nothing
/// else. A lost connection is reopened with capped exponential backoff, logged once per outage,
/// and the operation is run again: every queue operation is fenced by its lease token, so
/// repeating one is safe.
public final class DatabaseLink: @unchecked Sendable {
    /// What the link is for, in logs ("claims", "results", "leases").
    public let role: String
    private let connectionString: String
    private let logger: Logger
    private let maximumBackoff: Duration
    private let queue: BlockingQueue
    /// Touched only on `queue`.
    private var current: JobQueue?
    private let outage = Mutex<ContinuousClock.Instant?>(nil)
    private let onOutage: @Sendable () -> Void

    /// Opens the connection now, so a wrong URL or password fails at start with libpq's message.
    /// `onOutage` is called once at the start of each outage (for a metric).
    public init(role: String, connectionString: String, logger: Logger, maximumBackoff: Duration = .seconds(10),
                onOutage: @escaping @Sendable () -> Void = {}) throws(PostgresError) {
        self.onOutage = onOutage
        self.role = role
        self.connectionString = connectionString
        self.logger = logger
        self.maximumBackoff = maximumBackoff
        queue = BlockingQueue(label: "kiroku.database.\(role)")
        current = JobQueue(connection: try PostgresConnection(connectionString, logger: logger))
    }

    /// Runs `body` with the queue client on the link's own thread; on a lost connection,
    /// reconnects (waiting with backoff, as long as the task is not cancelled) and runs it again.
    public func run<T: Sendable>(_ body: @escaping @Sendable (JobQueue) throws(PostgresError) -> T) async throws -> T {
        var backoff = Duration.milliseconds(100)
        while true {
            let attempt: Result<T, PostgresError> = await queue.run { self.attempt(body) }
            switch attempt {
            case .success(let value):
                recovered()
                return value
            case .failure(let error) where error.isConnectionLoss:
                lost(error)
                try await Task.sleep(for: backoff * Double.random(in: 0.75...1.25))
                backoff = min(backoff * 2, maximumBackoff)
            case .failure(let error):
                throw error
            }
        }
    }

    /// One try of `body`, forgetting the connection when it was lost. On `queue` only.
    private func attempt<T>(_ body: (JobQueue) throws(PostgresError) -> T) -> Result<T, PostgresError> {
        do {
            return .success(try body(try client()))
        } catch {
            if error.isConnectionLoss { current = nil }
            return .failure(error)
        }
    }

    /// Closes the connection (later calls reconnect).
    public func close() async {
        await queue.run { self.current = nil }
    }

    /// The open client, reconnecting when the last one was lost. On `queue` only.
    private func client() throws(PostgresError) -> JobQueue {
        if let current { return current }
        let client = JobQueue(connection: try PostgresConnection(connectionString, logger: logger))
        current = client
        return client
    }

    private func lost(_ error: PostgresError) {
        let first = outage.withLock { start in
            guard start == nil else { return false }
            start = .now
            return true
        }
        if first {
            onOutage()
            logger.warning("database connection lost; reconnecting with backoff", metadata: [
                "link": "\(role)", "target": "\(ConnectionString.redacted(connectionString))", "error": "\(error.message)"])
        }
    }

    private func recovered() {
        guard let start = outage.withLock({ start in defer { start = nil }; return start }) else { return }
        logger.notice("database connection restored", metadata: ["link": "\(role)", "outage_s": "\(start.duration(to: .now).seconds)"])
    }
}
