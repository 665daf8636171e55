import Foundation
import KirokuEndpoints
import KirokuQueue
import Logging
import Metrics
import Prometheus
import Synchronization

/// The autoscaler daemon: every interval, measures the pools, sizes them, stabilises the answer
/// (out at once, in only after the window), records each recommendation with its inputs in
/// kiroku.recommendations, and publishes `kiroku_recommended_instances{pool,instance_type}` and
/// its inputs on /metrics for a KEDA ScaledObject or an HPA to act on.
public final class Autoscaler: Sendable {
    /// The sizing.
    public let advisor: Advisor
    private let link: DatabaseLink
    private let instanceType: String?, measuredOn: String?, fallbackType: String
    private let interval: Duration
    private let window: TimeInterval
    private let logger: Logger
    private let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let state = Mutex<(stabilisers: [String: Stabiliser], ticks: Int, failed: Bool)>(([:], 0, false))

    /// Connects (a wrong URL fails here) and prepares the metrics.
    public init(connectionString: String, advisor: Advisor, instanceType: String?, measuredOn: String?, fallbackType: String,
                interval: Duration, stabilisationWindow: Duration, logger: Logger) throws(PostgresError) {
        self.advisor = advisor
        self.instanceType = instanceType
        self.measuredOn = measuredOn
        self.fallbackType = fallbackType
        self.interval = interval
        window = stabilisationWindow.seconds
        self.logger = logger
        factory = PrometheusMetricsFactory(registry: registry)
        link = try DatabaseLink(role: "autoscaler", connectionString: connectionString, logger: logger)
    }

    /// Runs until the task is cancelled; a failed round is logged and tried again next round.
    public func run() async throws {
        try await seedStabilisers()
        while !Task.isCancelled {
            do {
                try await tick()
            } catch is CancellationError {
                return
            } catch {
                logger.error("autoscaler round failed; trying again next round", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }

    /// One round: measure, size, stabilise, record, publish. Returns the advice.
    @discardableResult
    public func tick() async throws -> Advice {
        let measured = try await link.run { queue throws(PostgresError) in try QueueMeasurements().measure(queue.connection) }
        let health = try await link.run { queue throws(PostgresError) in try QueueHealth(connection: queue.connection).gauges() }
        Gauge(label: "kiroku_oldest_transaction_seconds", factory: factory).record(health.oldestTransactionSeconds)
        for (table, dead) in health.deadTuples {
            Gauge(label: "kiroku_dead_tuples", dimensions: [("table", table)], factory: factory).record(dead)
        }
        for (table, live) in health.liveTuples {
            Gauge(label: "kiroku_live_tuples", dimensions: [("table", table)], factory: factory).record(live)
        }
        let advice = try advisor.advise(measured: measured, instanceType: instanceType, measuredOn: measuredOn, fallbackType: fallbackType)
        let now = Date()
        var rows: [(pool: String, type: String, desired: Int, recommended: Int, stabilised: Int, inputs: String)] = []
        for pool in advice.pools {
            let key = pool.observation.pool + "/" + pool.instanceType
            let stabilised = state.withLock { state in
                state.stabilisers[key, default: Stabiliser(window: window)].publish(pool.sizing.recommended, at: now)
            }
            rows.append((pool.observation.pool, pool.instanceType, pool.sizing.desired, pool.sizing.recommended, stabilised,
                         try AdviceReport.json(pool)))
            publish(pool, stabilised: stabilised)
        }
        let records = rows
        _ = try await link.run { queue throws(PostgresError) in
            try queue.recordRecommendations(records)
        }
        state.withLock { $0.ticks += 1 }
        for row in rows {
            logger.info("recommendation", metadata: ["pool": "\(row.pool)", "instance_type": "\(row.type)", "desired": "\(row.desired)",
                                                     "recommended": "\(row.recommended)", "published": "\(row.stabilised)"])
        }
        for note in advice.notes { logger.notice("not sized", metadata: ["reason": "\(note)"]) }
        return advice
    }

    /// Loads the window's earlier recommendations, so a restart does not scale in early.
    private func seedStabilisers() async throws {
        let window = window
        let history = try await link.run { queue throws(PostgresError) -> [(String, Date, Int)] in
            try queue.recentRecommendations(within: window)
        }
        state.withLock { state in
            for (key, entries) in Dictionary(grouping: history, by: \.0) {
                state.stabilisers[key] = Stabiliser(window: window, history: entries.map { ($0.1, $0.2) })
            }
        }
    }

    private func publish(_ pool: PoolAdvice, stabilised: Int) {
        let labels = [("pool", pool.observation.pool), ("instance_type", pool.instanceType)]
        Gauge(label: "kiroku_recommended_instances", dimensions: labels, factory: factory).record(stabilised)
        Gauge(label: "kiroku_desired_instances", dimensions: labels, factory: factory).record(pool.sizing.desired)
        let poolLabel = [("pool", pool.observation.pool)]
        Gauge(label: "kiroku_arrival_rate_per_second", dimensions: poolLabel, factory: factory).record(pool.observation.arrivalRate)
        Gauge(label: "kiroku_service_time_seconds", dimensions: poolLabel, factory: factory).record(pool.observation.serviceTime)
        Gauge(label: "kiroku_backlog_jobs", dimensions: poolLabel, factory: factory).record(pool.observation.backlog)
        // Jobs scheduled to come due within the measurements' horizon (two hours), 0 when none.
        Gauge(label: "kiroku_scheduled_jobs", dimensions: poolLabel, factory: factory).record(pool.observation.scheduled?.total ?? 0)
        Gauge(label: "kiroku_live_instances", dimensions: poolLabel, factory: factory).record(pool.observation.currentInstances ?? 0)
        Gauge(label: "kiroku_pool_cost_per_hour_dollars", dimensions: labels, factory: factory).record(pool.cost.poolPerHour)
    }

    /// Marks the daemon failed (/healthz turns 503).
    public func markFailed() {
        state.withLock { $0.failed = true }
    }
}

extension Autoscaler: EndpointStatus {
    /// Alive unless it failed.
    public var isHealthy: Bool { state.withLock { !$0.failed } }
    /// Ready once it has published a first round.
    public var isReady: Bool { state.withLock { $0.ticks > 0 && !$0.failed } }
    /// "ready" or "starting".
    public var stateDescription: String { isReady ? "ready" : (isHealthy ? "starting" : "failed") }
    /// The recommendations and their inputs as Prometheus text.
    public func renderMetrics() -> [UInt8] { registry.emitToBuffer() }
}
