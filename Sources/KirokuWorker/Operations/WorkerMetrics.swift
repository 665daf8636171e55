import Metrics
import Prometheus

/// The worker's metrics, made through swift-metrics on a Prometheus registry of its own (not the
/// process-global one, so several workers in one test process stay apart) and served as
/// Prometheus text on /metrics.
public final class WorkerMetrics: Sendable {
    /// The registry /metrics renders.
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory

    /// Jobs finished by outcome: succeeded, failed (permanent), retried (transient failure),
    /// handed_back (claimed but not started at shutdown), fenced (lease lost; nothing written).
    func job(_ outcome: String) -> Metrics.Counter {
        Metrics.Counter(label: "kiroku_jobs_total", dimensions: [("outcome", outcome)], factory: factory)
    }

    /// Per-job time in one stage: queue_wait, fetch, decode, inference, total.
    func stage(_ name: String) -> Metrics.Timer {
        Metrics.Timer(label: "kiroku_job_stage_seconds", dimensions: [("stage", name)], factory: factory)
    }

    /// Jobs per claimed batch.
    let batchSize: Metrics.Recorder
    /// The pool's jobs as this worker last saw them: queued (due, waiting for a claim), scheduled
    /// (not yet due) and running.
    let queued: Metrics.Gauge, scheduled: Metrics.Gauge, running: Metrics.Gauge
    /// Model load plus warm-up, seconds.
    let modelLoadSeconds: Metrics.Gauge
    /// 1 once the model is warm and the worker claims jobs, else 0.
    let ready: Metrics.Gauge
    /// The share of the model's multiply-adds this CPU runs on integer kernels (0 for a float model).
    let integerShare: Metrics.Gauge
    /// Database outages (each counts once per connection: claims, results, leases).
    let databaseOutages: Metrics.Counter

    /// Creates the metrics on a new registry.
    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["kiroku_job_stage_seconds"] =
            [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000].map { Duration.milliseconds($0) }
        factory.valueHistogramBuckets["kiroku_batch_size"] = [1, 2, 4, 8, 16, 32, 64, 128]
        self.factory = factory
        batchSize = Metrics.Recorder(label: "kiroku_batch_size", dimensions: [], aggregate: true, factory: factory)
        queued = Metrics.Gauge(label: "kiroku_queue_jobs", dimensions: [("state", "queued")], factory: factory)
        scheduled = Metrics.Gauge(label: "kiroku_queue_jobs", dimensions: [("state", "scheduled")], factory: factory)
        running = Metrics.Gauge(label: "kiroku_queue_jobs", dimensions: [("state", "running")], factory: factory)
        modelLoadSeconds = Metrics.Gauge(label: "kiroku_model_load_seconds", dimensions: [], factory: factory)
        ready = Metrics.Gauge(label: "kiroku_worker_ready", dimensions: [], factory: factory)
        integerShare = Metrics.Gauge(label: "kiroku_model_integer_share", dimensions: [], factory: factory)
        databaseOutages = Metrics.Counter(label: "kiroku_database_outages_total", dimensions: [], factory: factory)
    }

    /// The Prometheus text exposition of every metric.
    public func render() -> [UInt8] {
        registry.emitToBuffer()
    }
}
