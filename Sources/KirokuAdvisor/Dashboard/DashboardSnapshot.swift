import Foundation
import KirokuQueue

/// Everything the dashboard page shows, read in one go: per pool the measurement the advisor and
/// `kiroku status` share with its last hour by minute and the autoscaler's latest recommendation;
/// live workers; failures by category; the shadow comparison; where the cut-over stands; and
/// `kiroku doctor`'s verdicts. Aggregates only: no image, URI or result document.
public struct DashboardSnapshot: Sendable, Codable {
    /// One pool's panel.
    public struct Pool: Sendable, Codable {
        /// The pool.
        public var pool: String
        /// Jobs due and waiting, scheduled for later, and running; seconds the oldest due job has waited.
        public var ready: Int, scheduled: Int, running: Int, oldestWaitSeconds: Double
        /// Queue-wait percentiles over the hour, seconds.
        public var waitP50: Double?, waitP95: Double?
        /// Hosts seen working the pool, and their reported speed per host.
        public var liveHosts: Int, imagesPerSecond: Double?
        /// Jobs finished in the hour, and the failed share of them.
        public var finishedLastHour: Int, failureRate: Double?
        /// The hour by minute: throughput, failures, waits.
        public var minutes: [PoolMinute]
        /// The autoscaler's latest recommendation (nil: no autoscaler ran in the hour).
        public var recommendation: LatestRecommendation?
        /// Its routing weight (nil: not routed to).
        public var routingWeight: Int?
    }

    /// When it was read.
    public var generatedAt: Date
    /// The pools, in name order.
    public var pools: [Pool]
    /// Live workers.
    public var workers: [WorkerSummary]
    /// Failures of the hour by pool and category, most first.
    public var failures: [FailureCategory]
    /// The shadow comparison (gate: the decision when results carry one).
    public var shadow: ShadowComparison
    /// Where the cut-over stands.
    public var cutover: CutoverStep
    /// `kiroku doctor`'s verdicts, as far as the dashboard's role may read.
    public var health: [HealthCheck]

    /// The routing shares `kiroku advise --plan` steps through unless told.
    public static let planPercents = [10, 25, 50, 100]

    /// Reads a snapshot; the cut-over is the move from `from` to `to`.
    public static func read(_ queue: JobQueue, from: String, to: String) throws(PostgresError) -> DashboardSnapshot {
        let measurements = try queue.poolMeasurements(shortWindow: 300, longWindow: 3600, liveness: 120)
        let minutes = Dictionary(grouping: try queue.poolMinutes(), by: \.pool)
        let recommendations = Dictionary(try queue.latestRecommendations().map { ($0.pool, $0) }, uniquingKeysWith: { a, _ in a })
        let routes = try queue.routes()
        let weights = Dictionary(routes.map { ($0.pool, $0.weight) }, uniquingKeysWith: +)
        let pools = measurements.map { measured in
            let hour = minutes[measured.pool] ?? []
            let succeeded = hour.reduce(0) { $0 + $1.succeeded }, failed = hour.reduce(0) { $0 + $1.failed }
            return Pool(pool: measured.pool, ready: measured.ready, scheduled: measured.scheduled, running: measured.running,
                        oldestWaitSeconds: measured.oldestQueuedAge, waitP50: measured.waitP50, waitP95: measured.waitP95,
                        liveHosts: measured.liveWorkers, imagesPerSecond: measured.imagesPerSecond,
                        finishedLastHour: succeeded + failed,
                        failureRate: succeeded + failed > 0 ? Double(failed) / Double(succeeded + failed) : nil,
                        minutes: hour, recommendation: recommendations[measured.pool], routingWeight: weights[measured.pool])
        }
        let shadow = try ShadowComparison.measure(queue.connection, precision: ShadowComparison.defaultPrecision,
                                                  tolerance: ShadowComparison.defaultTolerance)
        let health: [HealthCheck]
        do {
            health = try QueueHealth(connection: queue.connection).run()
        } catch let error as PostgresError {
            throw error
        } catch {
            health = [HealthCheck(name: "doctor", verdict: .warn, evidence: "not checked: \(error)", fix: "run kiroku doctor")]
        }
        return DashboardSnapshot(generatedAt: Date(), pools: pools, workers: try queue.workerSummaries(), failures: try queue.failureCategories(),
                                 shadow: shadow, cutover: CutoverStep(from: from, to: to, percents: planPercents, routes: routes, shadow: shadow),
                                 health: health)
    }
}
