import ArgumentParser
import Foundation
import KirokuEndpoints
import KirokuQueue
import KirokuVision
import KirokuWorker
import Logging
import ServiceLifecycle

/// `kiroku worker`: the fleet member. One per host, every core, one warm model session.
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Claim jobs from the queue and classify them until stopped (SIGTERM/SIGINT drain gracefully).",
        discussion: """
            One worker per host: it uses every CPU the process may use, and a second worker on the \
            same host refuses to start (host lock file). It loads the model once, warms it, \
            registers in kiroku.workers, then claims batches of its pool, decodes the next image \
            while the current one is in inference, and writes each batch's results in one \
            transaction. Bad images fail their own job permanently; fetch timeouts and database \
            outages are retried. With --once it drains what is claimable now, prints what became \
            of the jobs, and exits.
            """)

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var engine: EngineOptions

    @Option(help: "The pool whose jobs to claim.")
    var pool = "cpu"

    @Option(help: "The host lock file (one worker per host). Default: /run/lock/kiroku-worker.lock, else /tmp.")
    var lockFile: String?

    @Option(help: "The most jobs claimed at once (the claim adapts below it).")
    var maxBatch = 32

    @Option(help: "About how long one claimed batch should take to classify, e.g. 500ms.", transform: DurationArgument.parse)
    var batchTarget = DurationArgument(duration: .milliseconds(500))

    @Option(help: "The lease on claimed jobs, renewed every third of it, e.g. 30s.", transform: DurationArgument.parse)
    var lease = DurationArgument(duration: .seconds(30))

    @Option(help: "After SIGTERM/SIGINT, the longest the drain may take before exiting anyway, e.g. 30s.", transform: DurationArgument.parse)
    var gracePeriod = DurationArgument(duration: .seconds(30))

    @Option(help: "The longest an idle worker waits for a notification before claiming anyway.", transform: DurationArgument.parse)
    var pollInterval = DurationArgument(duration: .seconds(5))

    @Option(help: "About how often to return expired leases of crashed workers to the queue.", transform: DurationArgument.parse)
    var rescueInterval = DurationArgument(duration: .seconds(15))

    @Option(help: "How often to move scheduled jobs (delayed, retries in backoff) that have come due to the queue.", transform: DurationArgument.parse)
    var promoteInterval = DurationArgument(duration: .seconds(1))

    @Option(help: "Timeout for fetching one http(s) image.", transform: DurationArgument.parse)
    var fetchTimeout = DurationArgument(duration: .seconds(30))

    @Option(help: "The largest image accepted, in bytes (fetched or inline).")
    var maxImageBytes = FetchLimits.standard.maximumBytes

    @Option(help: "The most inline image bytes one claim takes (fewer jobs are claimed to stay within it).")
    var maxClaimBytes = JobQueue.defaultClaimBytes

    @Option(help: ArgumentHelp(
        "A network to fetch http(s) images from although it is not public, e.g. 10.20.0.0/16 for an intranet CDN (repeatable).",
        discussion: "By default only public addresses are fetched: loopback, private, link-local (cloud metadata), CGNAT, unique-local and multicast addresses are refused.",
        valueName: "cidr"), transform: WorkerCommand.network)
    var allowNetwork: [IPNetwork] = []

    @Option(help: ArgumentHelp(
        "A directory file:// jobs may read under (repeatable); without one, file:// jobs fail as refused.",
        valueName: "dir"))
    var fileRoot: [String] = []

    @Option(help: "The most pixels a JPEG may declare.")
    var maxImagePixels = DecodeLimits.standard.maximumPixels

    @Option(help: "JPEG decoding: reduced (the smallest DCT scale that suffices, default) or full (every pixel, as most other services decode: for a shadow comparison with one).")
    var decode: DecodeScale = .reduced

    @Option(help: "Labels stored per result.")
    var top = 5

    @Option(help: "Port for /metrics, /healthz and /readyz; 0 turns them off.")
    var httpPort = 9464

    @Option(help: "Address the HTTP endpoints bind to.")
    var httpHost = "0.0.0.0"

    @Option(help: "This host's instance type, recorded with its measured speed for `kiroku advise` (default: KIROKU_INSTANCE_TYPE, else the EC2 metadata service).")
    var instanceType: String?

    @Flag(help: "Drain what is claimable now, print a summary, and exit.")
    var once = false

    func validate() throws {
        guard pool.wholeMatch(of: /[a-z0-9_-]{1,63}/) != nil else {
            throw ValidationError("--pool must be 1 to 63 characters of a-z, 0-9, _ and -, not '\(pool)'")
        }
        guard maxClaimBytes >= 1 else { throw ValidationError("--max-claim-bytes must be positive") }
        _ = try fetchPolicy()
        guard maxBatch >= 1 else { throw ValidationError("--max-batch must be at least 1") }
        guard top >= 1 else { throw ValidationError("--top must be at least 1") }
        guard (0...65535).contains(httpPort) else { throw ValidationError("--http-port must be between 0 and 65535 (0 turns the endpoints off)") }
        guard maxImageBytes >= 1, maxImagePixels >= 1 else { throw ValidationError("--max-image-bytes and --max-image-pixels must be positive") }
        for (name, value) in [("--batch-target", batchTarget), ("--lease", lease), ("--grace-period", gracePeriod),
                              ("--poll-interval", pollInterval), ("--rescue-interval", rescueInterval), ("--promote-interval", promoteInterval),
                              ("--fetch-timeout", fetchTimeout)]
        where value.duration <= .zero {
            throw ValidationError("\(name) must be longer than zero")
        }
        guard lease.duration >= .seconds(3) else { throw ValidationError("--lease must be at least 3s (heartbeats renew it every third)") }
    }

    /// The fetch policy the flags ask for; a file root that does not exist is a usage error.
    func fetchPolicy() throws -> FetchPolicy {
        var policy = FetchPolicy(allowedNetworks: allowNetwork)
        for root in fileRoot {
            do {
                try policy.allowFiles(under: root)
            } catch {
                throw ValidationError("--file-root \(root): \(error.detail)")
            }
        }
        return policy
    }

    static func network(_ text: String) throws -> IPNetwork {
        guard let network = IPNetwork(text) else {
            throw ValidationError("--allow-network \(text) is not an IPv4 or IPv6 network in CIDR form, e.g. 10.20.0.0/16 or fd00::/8")
        }
        return network
    }

    func run() async throws {
        let url = try database.connectionString()
        var configuration = WorkerConfiguration(databaseURL: url, model: try engine.modelURL())
        configuration.pool = pool
        configuration.threads = engine.threads
        if let lockFile { configuration.lockFile = lockFile }
        configuration.maxBatch = maxBatch
        configuration.batchTarget = batchTarget.duration
        configuration.lease = lease.duration
        configuration.gracePeriod = gracePeriod.duration
        configuration.pollInterval = pollInterval.duration
        configuration.rescueInterval = rescueInterval.duration
        configuration.promoteInterval = promoteInterval.duration
        configuration.fetchLimits = FetchLimits(maximumBytes: maxImageBytes, timeout: fetchTimeout.duration)
        configuration.fetchPolicy = try fetchPolicy()
        configuration.claimBytes = maxClaimBytes
        configuration.decodeLimits = DecodeLimits(maximumPixels: maxImagePixels, maximumBytes: maxImageBytes)
        configuration.decodeScale = decode
        configuration.integerLayers = engine.integerLayers.choice
        configuration.topK = top
        configuration.httpPort = httpPort == 0 ? nil : httpPort
        configuration.httpHost = httpHost
        configuration.once = once
        configuration.version = KirokuVersion.current
        configuration.instanceType = instanceType ?? ProcessInfo.processInfo.environment["KIROKU_INSTANCE_TYPE"].flatMap { $0.isEmpty ? nil : $0 }

        let logger = Logger(label: "kiroku.worker")
        let worker = Worker(configuration: configuration, logger: logger)
        let service = WorkerService(worker: worker)
        var services = [ServiceGroupConfiguration.ServiceConfiguration(
            service: service, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)]
        if let port = configuration.httpPort {
            services.append(.init(service: EndpointServer.make(status: worker, host: httpHost, port: port, serverName: "kiroku-worker",
                                                               logger: Logger(label: "kiroku.http"))))
        }
        var groupConfiguration = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = gracePeriod.duration + .seconds(5)
        try await ServiceGroup(configuration: groupConfiguration).run()
        if once, let summary = service.result {
            print(summary.byOutcome.map { "\($0.0)=\($0.1)" }.joined(separator: " "))
        }
    }
}

extension DecodeScale: ExpressibleByArgument {}
