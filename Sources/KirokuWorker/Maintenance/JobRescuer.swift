import KirokuQueue
import Logging

/// Returns other workers' expired leases to the queue (or fails them as exhausted).
/// kiroku.rescue_expired skips rows another rescuer holds, so many workers doing it is cheap and
/// safe; the interval is jittered by ±50% so they spread out.
struct JobRescuer: MaintenanceDuty {
    let link: DatabaseLink
    let interval: Duration
    let logger: Logger

    var name: String { "rescue" }

    func nextDelay() -> Duration { interval * Double.random(in: 0.5...1.5) }

    /// Rescues every expired lease; returns how many jobs it moved.
    @discardableResult
    func runOnce() async throws -> Int {
        let rescued = try await link.run { queue throws(PostgresError) in try queue.rescueExpired() }
        if rescued > 0 { logger.info("returned expired leases to the queue", metadata: ["jobs": "\(rescued)"]) }
        return rescued
    }
}
