import AsyncAlgorithms
import Foundation
import KirokuEndpoints
import KirokuQueue
import Logging
import Synchronization

/// One worker process: the stateless fleet member that joins queue, vision and inference.
/// Takes the host lock, loads and warms the model once, registers, then runs the pipeline
/// (Feeder → InferenceLoop → ResultWriter) with the maintenance duties beside it (Maintenance/: lease renewal,
/// rescue, promotion, queue depth, speed report) until stopped.
public final class Worker: Sendable {
    /// Where the worker is in its life, as /readyz and /healthz report it.
    public enum Phase: Int, Sendable {
        case starting, ready, draining, stopped, failed
    }

    /// How the worker was configured.
    public let configuration: WorkerConfiguration
    /// Its metrics (rendered on /metrics).
    public let metrics: WorkerMetrics
    private let logger: Logger
    private let stopping = Atomic<Bool>(false)
    private let phaseValue = Atomic<Int>(Phase.starting.rawValue)

    /// Creates a worker; nothing starts until `run()`.
    public init(configuration: WorkerConfiguration, logger: Logger = Logger(label: "kiroku.worker")) {
        self.configuration = configuration
        self.metrics = WorkerMetrics()
        var logger = logger
        logger[metadataKey: "worker"] = "\(configuration.workerID)"
        self.logger = logger
    }

    /// The current phase.
    public var phase: Phase { Phase(rawValue: phaseValue.load(ordering: .relaxed)) ?? .failed }

    /// Begins a graceful stop: claim nothing more, finish the jobs in inference, hand back the rest.
    public func stop() {
        if !stopping.exchange(true, ordering: .relaxed) {
            logger.notice("stopping: finishing jobs in inference, handing back the rest")
            setPhase(.draining)
        }
    }

    /// Runs the worker until it is stopped (or, with `once`, until nothing is claimable); returns
    /// what became of the jobs it claimed.
    public func run() async throws -> WorkerSummary {
        do {
            let summary = try await work()
            setPhase(.stopped)
            return summary
        } catch {
            setPhase(.failed)
            throw error
        }
    }

    private func work() async throws -> WorkerSummary {
        let lock = try HostLock(path: configuration.lockFile)
        try ConnectionString.validate(configuration.databaseURL)
        let url = configuration.databaseURL
        let link = { [metrics, logger] (role: String) throws(PostgresError) in
            try DatabaseLink(role: role, connectionString: url, logger: logger, onOutage: { metrics.databaseOutages.increment() })
        }
        let (claims, results, leases) = (try link("claims"), try link("results"), try link("leases"))

        let loadStarted = ContinuousClock.now
        async let detectedType = configuration.instanceType == nil ? InstanceMetadata.instanceType() : configuration.instanceType
        let classifier = try Classifier(model: configuration.model, threads: configuration.threads, decodeLimits: configuration.decodeLimits,
                                        decodeScale: configuration.decodeScale, integerLayers: configuration.integerLayers)
        let warmUp = await classifier.warmUp()
        metrics.modelLoadSeconds.record(loadStarted.duration(to: .now).seconds)
        metrics.integerShare.record(classifier.integerLayers.multiplyAddShare)

        let (id, pool, cores, version) = (configuration.workerID, configuration.pool, classifier.threads, configuration.version)
        let (model, modelHash, precision) = (classifier.modelName, classifier.modelHash, classifier.integerLayers.precision)
        let instanceType = await detectedType
        try await leases.run { queue throws(PostgresError) in
            try queue.registerWorker(id: id, host: WorkerConfiguration.hostName, pool: pool, model: model, modelSHA256: modelHash, cores: cores,
                                     version: version, precision: precision)
            try queue.reportWorkerSpeed(id: id, instanceType: instanceType, imagesPerSecond: nil)
        }
        logger.notice("worker ready", metadata: [
            "pool": "\(pool)", "model": "\(model)", "model_sha256": "\(classifier.modelHash.prefix(12))",
            "threads": "\(cores)", "model_load_ms": "\(Int(loadStarted.duration(to: .now).milliseconds))",
            "warm_up_ms": "\(Int(warmUp.milliseconds))", "precision": "\(precision)",
            "integer_layers": "\(classifier.integerLayers.integer)/\(classifier.integerLayers.quantized)", "lock": "\(lock.path)", "instance_type": "\(instanceType ?? "unknown")",
            "database": "\(ConnectionString.redacted(url))",
        ])
        if !stopping.load(ordering: .relaxed) { setPhase(.ready) }
        metrics.ready.record(1)

        let book = LeaseBook()
        let speed = SpeedMeter()
        let sizer = BatchSizer(target: configuration.batchTarget, maximum: configuration.maxBatch, initialEstimate: warmUp)
        let isStopping: @Sendable () -> Bool = { [self] in stopping.load(ordering: .relaxed) }
        let feeder = Feeder(link: claims, classifier: classifier, fetcher: ImageFetcher(limits: configuration.fetchLimits, policy: configuration.fetchPolicy),
                            sizer: sizer, book: book, configuration: configuration, metrics: metrics, isStopping: isStopping)
        let writer = ResultWriter(link: results, book: book, metrics: metrics, logger: logger)
        let loop = InferenceLoop(writer: writer, classifier: classifier, sizer: sizer, speed: speed, configuration: configuration,
                                 metrics: metrics, isStopping: isStopping)
        let promoter = JobPromoter(link: leases, interval: configuration.promoteInterval, logger: logger)
        let duties: [any MaintenanceDuty] = [
            LeaseRenewer(link: leases, book: book, workerID: id, lease: configuration.lease, logger: logger),
            JobRescuer(link: leases, interval: configuration.rescueInterval, logger: logger),
            promoter,
            DepthSampler(link: leases, pool: configuration.pool, interval: configuration.lease / 3, metrics: metrics),
            SpeedReporter(link: leases, speed: speed, workerID: id, interval: configuration.lease / 3),
        ]
        // Jobs that came due while no worker ran are claimable from the first claim on.
        try await promoter.runOnce()

        let summary = try await withThrowingTaskGroup(of: Void.self) { group in
            for duty in duties { group.addTask { [logger] in await duty.run(logger: logger) } }
            let channel = AsyncChannel<PreparedJob>()
            group.addTask { try await feeder.run(into: channel) }
            let summary = try await loop.run(from: channel)
            // The feeder has finished the channel; wait for it (and surface its error), then stop the duties.
            try await group.next()
            group.cancelAll()
            return summary
        }
        metrics.ready.record(0)
        let rate = speed.imagesPerSecond
        try await leases.run { queue throws(PostgresError) in
            try queue.reportWorkerSpeed(id: id, instanceType: nil, imagesPerSecond: rate)
            try queue.deregisterWorker(id: id)
        }
        for link in [claims, results, leases] { await link.close() }
        logger.notice("worker stopped", metadata: summary.byOutcome.reduce(into: Logger.Metadata()) { $0[$1.0] = "\($1.1)" })
        withExtendedLifetime(lock) {}
        return summary
    }

    private func setPhase(_ phase: Phase) {
        phaseValue.store(phase.rawValue, ordering: .relaxed)
    }
}

extension Worker: EndpointStatus {
    /// Alive unless the worker failed.
    public var isHealthy: Bool { phase != .failed }
    /// Ready only once the model is warm and jobs are claimed.
    public var isReady: Bool { phase == .ready }
    /// The phase's name.
    public var stateDescription: String { "\(phase)" }
    /// The worker's metrics as Prometheus text.
    public func renderMetrics() -> [UInt8] { metrics.render() }
}
