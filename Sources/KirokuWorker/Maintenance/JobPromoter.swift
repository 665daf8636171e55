import KirokuQueue
import Logging

/// The worker's promotion duty: moves scheduled jobs (delayed ones, retries in backoff) that have
/// come due to the queue, so the claim only ever reads runnable jobs. Every worker runs it on its
/// own interval; kiroku.promote_due skips rows another promoter holds, so many at once is cheap
/// and safe.
struct JobPromoter: MaintenanceDuty {
    let link: DatabaseLink
    let interval: Duration
    let logger: Logger

    var name: String { "promotion" }

    func nextDelay() -> Duration { interval }

    /// Promotes every due job, a batch (one short transaction) at a time; returns how many moved.
    @discardableResult
    func runOnce() async throws -> Int {
        var total = 0
        while true {
            let promoted = try await link.run { queue throws(PostgresError) in try queue.promoteDue() }
            total += promoted
            if promoted < JobQueue.promotionBatch || Task.isCancelled { break }
        }
        if total > 0 { logger.debug("promoted due jobs", metadata: ["jobs": "\(total)"]) }
        return total
    }
}
