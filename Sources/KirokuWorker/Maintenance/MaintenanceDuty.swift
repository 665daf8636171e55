import Logging

/// One of the worker's background duties (as River's maintenance services): each runs on its
/// own connection's turn and its own interval, and a failed round of one is logged and retried
/// next round without holding up the others. `runOnce()` is one round, which a test drives
/// against PostgreSQL.
protocol MaintenanceDuty: Sendable {
    /// The duty's name in logs.
    var name: String { get }
    /// How long to wait after a round before the next.
    func nextDelay() -> Duration
    /// One round; returns how many rows it changed (leases renewed, jobs rescued or promoted; 0 for a reading).
    @discardableResult
    func runOnce() async throws -> Int
}

extension MaintenanceDuty {
    /// Runs rounds until the task is cancelled.
    func run(logger: Logger) async {
        while !Task.isCancelled {
            do {
                try await runOnce()
            } catch is CancellationError {
                return
            } catch {
                logger.error("maintenance round failed; retrying next round", metadata: ["duty": "\(name)", "error": "\(error)"])
            }
            try? await Task.sleep(for: nextDelay())
        }
    }
}
