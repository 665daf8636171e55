import KirokuQueue
import Logging

/// Renews the leases of the jobs this worker holds, every third of the lease (which also renews
/// kiroku.workers.last_seen).
struct LeaseRenewer: MaintenanceDuty {
    let link: DatabaseLink
    let book: LeaseBook
    let workerID: String
    let lease: Duration
    let logger: Logger

    var name: String { "lease renewal" }

    func nextDelay() -> Duration { lease / 3 }

    /// Extends every held lease; returns how many the database extended.
    @discardableResult
    func runOnce() async throws -> Int {
        let leases = book.leases
        let (workerID, lease) = (workerID, lease)
        let extended = try await link.run { queue throws(PostgresError) in
            try queue.heartbeat(workerID: workerID, leases: leases, lease: lease)
        }
        if extended < leases.count {
            // Finished meanwhile, or rescued after a long outage: complete() will be fenced and say so.
            logger.debug("heartbeat extended fewer leases than held", metadata: ["held": "\(leases.count)", "extended": "\(extended)"])
        }
        return extended
    }
}
