import KirokuQueue

/// Samples the pool's queue depth (due, scheduled, running) into the worker's metrics.
struct DepthSampler: MaintenanceDuty {
    let link: DatabaseLink
    let pool: String
    let interval: Duration
    let metrics: WorkerMetrics

    var name: String { "queue depth" }

    func nextDelay() -> Duration { interval }

    @discardableResult
    func runOnce() async throws -> Int {
        let pool = pool
        let depth = try await link.run { queue throws(PostgresError) in try queue.queueDepths(pool: pool).first }
        metrics.queued.record(depth?.ready ?? 0)
        metrics.scheduled.record(depth?.scheduled ?? 0)
        metrics.running.record(depth?.running ?? 0)
        return 0
    }
}
