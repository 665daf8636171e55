import KirokuQueue
import Logging

/// The worker's background duties on a connection of their own: renew the leases of held jobs
/// every third of the lease (which also renews kiroku.workers.last_seen), return other workers'
/// expired leases to the queue now and then (kiroku.rescue_expired skips rows another rescuer
/// holds, so many workers doing it is cheap and safe; the period is jittered so they spread
/// out), and read the pool's queue depth for the metrics.
struct LeaseKeeper: Sendable {
    let link: DatabaseLink
    let book: LeaseBook
    let speed: SpeedMeter
    let configuration: WorkerConfiguration
    let metrics: WorkerMetrics
    let logger: Logger

    /// Runs until cancelled. A failed round (other than a lost connection, which the link rides
    /// out) is logged and tried again next round.
    func run() async {
        let interval = configuration.lease / 3
        var nextRescue = ContinuousClock.now
        while !Task.isCancelled {
            do {
                try await heartbeat()
                if ContinuousClock.now >= nextRescue {
                    try await rescue()
                    nextRescue = .now + configuration.rescueInterval * Double.random(in: 0.5...1.5)
                }
                try await readDepth()
                try await reportSpeed()
            } catch is CancellationError {
                return
            } catch {
                logger.error("lease keeping failed; retrying next round", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }

    private func heartbeat() async throws {
        let leases = book.leases
        let (workerID, lease) = (configuration.workerID, configuration.lease)
        let extended = try await link.run { queue throws(PostgresError) in
            try queue.heartbeat(workerID: workerID, leases: leases, lease: lease)
        }
        if extended < leases.count {
            // Finished meanwhile, or rescued after a long outage: complete() will be fenced and say so.
            logger.debug("heartbeat extended fewer leases than held", metadata: ["held": "\(leases.count)", "extended": "\(extended)"])
        }
    }

    private func rescue() async throws {
        let rescued = try await link.run { queue throws(PostgresError) in try queue.rescueExpired() }
        if rescued > 0 { logger.info("returned expired leases to the queue", metadata: ["jobs": "\(rescued)"]) }
    }

    /// Records the measured speed in kiroku.workers for the advisor.
    private func reportSpeed() async throws {
        guard let rate = speed.imagesPerSecond else { return }
        let id = configuration.workerID
        try await link.run { queue throws(PostgresError) in try queue.reportWorkerSpeed(id: id, instanceType: nil, imagesPerSecond: rate) }
    }

    private func readDepth() async throws {
        let pool = configuration.pool
        let depth = try await link.run { queue throws(PostgresError) in try queue.queueDepths(pool: pool).first }
        metrics.queued.record(depth?.ready ?? 0)
        metrics.scheduled.record(depth?.scheduled ?? 0)
        metrics.running.record(depth?.running ?? 0)
    }
}
