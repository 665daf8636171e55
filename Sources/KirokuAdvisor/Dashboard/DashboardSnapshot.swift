import Foundation
import KirokuQueue

/// Everything the dashboard page shows at one moment: per pool its depth, its last hour by minute
/// and the autoscaler's latest recommendation; live workers; the latest finished jobs; failures
/// by category; the shadow comparison; where the cut-over stands; and `kiroku doctor`'s verdicts.
/// Counts, times, ids and stored error categories only: no image, URI or result document.
public struct DashboardSnapshot: Sendable, Codable {
    /// One pool's panel.
    public struct Pool: Sendable, Codable {
        /// The pool.
        public var pool: String
        /// Jobs due and waiting, scheduled for later, and running; seconds the oldest due job has waited.
        public var ready: Int, scheduled: Int, running: Int, oldestWaitSeconds: Double
        /// Queue-wait percentiles in the last closed minute with finished jobs, seconds.
        public var waitP50: Double?, waitP95: Double?
        /// Live registered workers, and their mean reported speed per host.
        public var liveHosts: Int, imagesPerSecond: Double?
        /// Jobs finished in the closed minutes of the last hour, and the failed share of them.
        public var finishedLastHour: Int, failureRate: Double?
        /// The closed minutes of the last hour: throughput, failures, waits.
        public var minutes: [PoolMinute]
        /// The advisor's measurement of the pool (arrivals, waits, hosts seen including services
        /// that do not register, speed), read once a minute; nil before the pool had jobs or workers.
        public var measurement: PoolMeasurement?
        /// Its arrivals per second over the advisor's short and long windows (nil without a measurement).
        public var arrivalsShort: Double?, arrivalsLong: Double?
        /// The autoscaler's latest recommendation (nil: no autoscaler ran in the hour).
        public var recommendation: LatestRecommendation?
        /// Its routing weight (nil: not routed to).
        public var routingWeight: Int?
    }

    /// One pool's failures of the last hour in one stored category.
    public struct Failures: Sendable, Codable, Equatable {
        /// The pool, the stored error (a category) and its kind (permanent, exhausted, refused).
        public var pool: String, category: String, kind: String?
        /// Jobs, and the latest five ids, newest first.
        public var jobs: Int, latestIds: [Int64]
    }

    /// The database's clock when it was read.
    public var generatedAt: Date
    /// The pools, in name order.
    public var pools: [Pool]
    /// Live workers.
    public var workers: [WorkerSummary]
    /// The last jobs finished, newest first (those of the current minute too).
    public var latest: [FinishedJob]
    /// Failures of the closed minutes of the hour by pool and category, most first.
    public var failures: [Failures]
    /// The shadow comparison (gate: the decision when results carry one).
    public var shadow: ShadowComparison
    /// Where the cut-over stands.
    public var cutover: CutoverStep
    /// `kiroku doctor`'s verdicts, as far as the dashboard's role may read.
    public var health: [HealthCheck]

    /// Puts the parts together.
    init(generatedAt: Date, depths: [PoolDepth], minutes: [PoolMinute], failures: [FailureMinute], workers: [WorkerSummary],
         latest: [FinishedJob], measurements: [PoolMeasurement], windows: (short: Double, long: Double), recommendations: [LatestRecommendation], routes: [(pool: String, weight: Int)], shadow: ShadowComparison,
         cutover: CutoverStep, health: [HealthCheck]) {
        let names = Set(depths.map(\.pool) + minutes.map(\.pool) + workers.map(\.pool) + recommendations.map(\.pool)
                        + measurements.map(\.pool)).sorted()
        let measured = Dictionary(measurements.map { ($0.pool, $0) }, uniquingKeysWith: { a, _ in a })
        let depth = Dictionary(depths.map { ($0.pool, $0) }, uniquingKeysWith: { a, _ in a })
        let byPool = Dictionary(grouping: minutes, by: \.pool), staff = Dictionary(grouping: workers, by: \.pool)
        let advice = Dictionary(recommendations.map { ($0.pool, $0) }, uniquingKeysWith: { a, _ in a })
        let weights = Dictionary(routes.map { ($0.pool, $0.weight) }, uniquingKeysWith: +)
        pools = names.map { name in
            let hour = (byPool[name] ?? []).sorted { $0.minute < $1.minute }
            let succeeded = hour.reduce(0) { $0 + $1.succeeded }, failed = hour.reduce(0) { $0 + $1.failed }
            let last = hour.last { $0.waitP50 != nil }
            let speeds = (staff[name] ?? []).compactMap(\.imagesPerSecond)
            return Pool(pool: name, ready: depth[name]?.ready ?? 0, scheduled: depth[name]?.scheduled ?? 0, running: depth[name]?.running ?? 0,
                        oldestWaitSeconds: depth[name]?.oldestWait ?? 0, waitP50: last?.waitP50, waitP95: last?.waitP95,
                        liveHosts: staff[name]?.count ?? 0, imagesPerSecond: speeds.isEmpty ? nil : speeds.reduce(0, +) / Double(speeds.count),
                        finishedLastHour: succeeded + failed,
                        failureRate: succeeded + failed > 0 ? Double(failed) / Double(succeeded + failed) : nil,
                        minutes: hour, measurement: measured[name],
                        arrivalsShort: measured[name].map { Double($0.shortArrivals) / windows.short },
                        arrivalsLong: measured[name].map { Double($0.longArrivals) / windows.long },
                        recommendation: advice[name], routingWeight: weights[name])
        }
        self.failures = Dictionary(grouping: failures) { [$0.pool, $0.category, $0.kind ?? ""] }.values.map { group in
            Failures(pool: group[0].pool, category: group[0].category, kind: group[0].kind, jobs: group.reduce(0) { $0 + $1.jobs },
                     latestIds: Array(group.flatMap(\.latestIds).sorted(by: >).prefix(5)))
        }.sorted { ($0.jobs, $1.pool, $1.category) > ($1.jobs, $0.pool, $0.category) }
        (self.generatedAt, self.workers, self.latest, self.shadow, self.cutover, self.health) = (generatedAt, workers, latest, shadow, cutover, health)
    }
}
